package session

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/deepnoodle-ai/dive"
	"github.com/deepnoodle-ai/dive/llm"

	as "github.com/agentsession/session"
)

// roundTripCases are Dive turns with every kind of content a Dive message
// holds. Each is a turn a session can store: tool results answer calls of
// the turn.
func roundTripCases() []struct {
	name string
	msgs []*llm.Message
} {
	img := &llm.ContentSource{Type: llm.ContentSourceTypeBase64, MediaType: "image/png", Data: "iVBORw0KGgo="}
	big := &llm.ContentSource{Type: llm.ContentSourceTypeBase64, MediaType: "image/png", Data: string(bytes.Repeat([]byte("QUFB"), 600))}
	call := func(id, name, input string) *llm.ToolUseContent {
		return &llm.ToolUseContent{ID: id, Name: name, Input: json.RawMessage(input)}
	}
	assistantCalls := func(calls ...llm.Content) *llm.Message {
		return &llm.Message{Role: llm.Assistant, Content: calls}
	}
	return []struct {
		name string
		msgs []*llm.Message
	}{
		{"text", []*llm.Message{llm.NewUserTextMessage("Hello"), llm.NewAssistantTextMessage("Hi")}},
		{"message ids", []*llm.Message{
			{ID: "msg_1", Role: llm.User, Content: []llm.Content{&llm.TextContent{Text: "a"}}},
			{ID: "msg_2", Role: llm.Assistant, Content: []llm.Content{&llm.TextContent{Text: "b"}}},
		}},
		{"several text blocks", []*llm.Message{
			{Role: llm.User, Content: []llm.Content{&llm.TextContent{Text: "one"}, &llm.TextContent{Text: "two"}}},
		}},
		{"text with cache control, citations and metadata", []*llm.Message{
			{Role: llm.User, Content: []llm.Content{&llm.TextContent{Text: "cached", CacheControl: &llm.CacheControl{Type: llm.CacheControlTypeEphemeral, TTL: "1h"}}}},
			{Role: llm.Assistant, Content: []llm.Content{&llm.TextContent{
				Text:     "the grass is green",
				Metadata: llm.ProviderMetadata{"google.thought_signature": "c2ln"},
				Citations: []llm.Citation{
					&llm.CharLocation{Type: "char_location", CitedText: "The grass is green.", DocumentTitle: "Doc", EndCharIndex: 20},
					&llm.WebSearchResultLocation{Type: "web_search_result_location", URL: "https://example.com", Title: "Ex"},
				},
			}}},
		}},
		{"empty user message", []*llm.Message{llm.NewUserTextMessage("start"), llm.NewToolResultMessage()}},
		{"system and developer roles", []*llm.Message{
			llm.NewSystemMessage("be brief"),
			{Role: llm.Developer, Content: []llm.Content{&llm.TextContent{Text: "dev"}}},
			llm.NewUserTextMessage("q"),
		}},
		{"thinking", []*llm.Message{
			llm.NewUserTextMessage("think"),
			{Role: llm.Assistant, Content: []llm.Content{
				&llm.ThinkingContent{Thinking: "hmm", Signature: "sig=="},
				&llm.ThinkingContent{ID: "rs_1", Thinking: "more", Metadata: llm.ProviderMetadata{"openai.encrypted": "enc"}},
				&llm.RedactedThinkingContent{Data: "EmwKAhgB"},
				&llm.TextContent{Text: "answer"},
			}},
		}},
		{"images", []*llm.Message{
			{Role: llm.User, Content: []llm.Content{
				&llm.TextContent{Text: "look"},
				&llm.ImageContent{Source: img},
				&llm.ImageContent{Source: big, CacheControl: &llm.CacheControl{Type: llm.CacheControlTypeEphemeral}},
				&llm.ImageContent{Source: &llm.ContentSource{Type: llm.ContentSourceTypeURL, URL: "https://example.com/a.jpg"}},
				&llm.ImageContent{Source: &llm.ContentSource{Type: llm.ContentSourceTypeFile, FileID: "file_abc"}},
			}},
			{Role: llm.Assistant, Content: []llm.Content{
				&llm.ImageContent{Source: &llm.ContentSource{Type: llm.ContentSourceTypeBase64, MediaType: "image/png", Data: "AAAA", GenerationID: "ig_1", GenerationStatus: "completed"}},
			}},
		}},
		{"documents", []*llm.Message{
			{Role: llm.User, Content: []llm.Content{
				&llm.DocumentContent{Source: &llm.ContentSource{Type: llm.ContentSourceTypeText, MediaType: "text/plain", Data: "The grass is green."}, Title: "Doc", Context: "ctx", Citations: &llm.CitationSettings{Enabled: true}},
				&llm.DocumentContent{Source: &llm.ContentSource{Type: llm.ContentSourceTypeBase64, MediaType: "application/pdf", Data: "JVBERi0x"}},
				&llm.DocumentContent{Source: &llm.ContentSource{Type: llm.ContentSourceTypeURL, URL: "https://example.com/a.pdf"}},
				&llm.DocumentContent{Source: &llm.ContentSource{Type: llm.ContentSourceTypeFile, FileID: "file_1", MediaType: "application/pdf"}, CacheControl: &llm.CacheControl{Type: llm.CacheControlTypeEphemeral}},
				&llm.DocumentContent{Source: &llm.ContentSource{Type: llm.ContentSourceTypeBase64, MediaType: "application/pdf"}},
				&llm.DocumentContent{Source: &llm.ContentSource{Type: "content", Content: []*llm.ContentChunk{{Type: "text", Text: "chunk"}}}, Citations: &llm.CitationSettings{}},
			}},
		}},
		{"other blocks", []*llm.Message{
			{Role: llm.Assistant, Content: []llm.Content{
				&llm.RefusalContent{Text: "no"},
				&llm.RefusalContent{Text: "cached no", CacheControl: &llm.CacheControl{Type: llm.CacheControlTypeEphemeral}},
				&llm.ServerToolUseContent{ID: "srvtoolu_1", Name: "web_search", Input: map[string]any{"query": "x"}},
				&llm.SummaryContent{Summary: "earlier"},
			}},
		}},
		{"tool calls and results", []*llm.Message{
			llm.NewUserTextMessage("run both"),
			assistantCalls(&llm.TextContent{Text: "ok"}, call("toolu_a", "read", `{"path":"a.go"}`), call("toolu_b", "list", `{}`)),
			llm.NewToolResultMessage(
				&llm.ToolResultContent{ToolUseID: "toolu_a", Content: []*dive.ToolResultContent{{Type: dive.ToolResultContentTypeText, Text: "package a"}}},
				&llm.ToolResultContent{ToolUseID: "toolu_b", Content: []*dive.ToolResultContent{{Type: dive.ToolResultContentTypeText, Text: "boom"}}, IsError: true},
			),
			llm.NewAssistantTextMessage("done"),
		}},
		{"tool call metadata and empty input", []*llm.Message{
			assistantCalls(&llm.ToolUseContent{ID: "c1", Name: "t", Metadata: llm.ProviderMetadata{"google.thought_signature": "x"}, CacheControl: &llm.CacheControl{Type: llm.CacheControlTypeEphemeral}},
				&llm.ToolUseContent{ID: "c2", Name: "t"}),
			llm.NewToolResultMessage(&llm.ToolResultContent{ToolUseID: "c1", Content: "s"}, &llm.ToolResultContent{ToolUseID: "c2", Content: "t"}),
		}},
		{"tool result content forms", []*llm.Message{
			assistantCalls(call("c1", "t", `{}`), call("c2", "t", `{}`), call("c3", "t", `{}`), call("c4", "t", `{}`), call("c5", "t", `{}`), call("c6", "t", `{}`), call("c7", "t", `{}`)),
			{Role: llm.User, Content: []llm.Content{
				&llm.ToolResultContent{ToolUseID: "c1", Content: "a string"},
				&llm.ToolResultContent{ToolUseID: "c2"},
				&llm.ToolResultContent{ToolUseID: "c3", Content: map[string]any{"rows": 3.0, "ok": true}},
				&llm.ToolResultContent{ToolUseID: "c4", Content: []*dive.ToolResultContent{
					{Type: dive.ToolResultContentTypeText, Text: "see", Annotations: map[string]any{"audience": []any{"user"}}},
					{Type: dive.ToolResultContentTypeImage, Data: "iVBORw0KGgo=", MimeType: "image/png"},
					{Type: dive.ToolResultContentTypeAudio, Data: "UklGRg==", MimeType: "audio/wav"},
				}},
				&llm.ToolResultContent{ToolUseID: "c5", Content: []any{"x", 1.0}},
				&llm.ToolResultContent{ToolUseID: "c6", Content: []*dive.ToolResultContent{}, CacheControl: &llm.CacheControl{Type: llm.CacheControlTypeEphemeral}},
				&llm.ToolResultContent{ToolUseID: "c7", Content: 42},
			}},
		}},
		{"results with text after them", []*llm.Message{
			assistantCalls(call("c1", "t", `{}`), call("c2", "u", `{}`)),
			{ID: "tr", Role: llm.User, Content: []llm.Content{
				&llm.ToolResultContent{ToolUseID: "c1", Content: "one"},
				&llm.ToolResultContent{ToolUseID: "c2", Content: "two"},
				&llm.TextContent{Text: "additional context"},
				&llm.TextContent{Text: "Your tool calls are complete."},
			}},
		}},
		{"text before and between results", []*llm.Message{
			assistantCalls(call("c1", "t", `{}`), call("c2", "u", `{}`)),
			{Role: llm.User, Content: []llm.Content{
				&llm.TextContent{Text: "first"},
				&llm.ToolResultContent{ToolUseID: "c1", Content: "one"},
				&llm.TextContent{Text: "between"},
				&llm.ToolResultContent{ToolUseID: "c2", Content: "two"},
				&llm.TextContent{Text: "after"},
			}},
		}},
		{"consecutive result messages", []*llm.Message{
			assistantCalls(call("c1", "t", `{}`), call("c2", "u", `{}`)),
			llm.NewToolResultMessage(&llm.ToolResultContent{ToolUseID: "c1", Content: "one"}),
			llm.NewToolResultMessage(&llm.ToolResultContent{ToolUseID: "c2", Content: "two"}),
		}},
	}
}

// canonical is what Dive's own stores give back for msgs: their JSON
// decoded again (Message.Copy).
func canonical(t *testing.T, msgs []*llm.Message) string {
	t.Helper()
	var out []*llm.Message
	for _, m := range msgs {
		out = append(out, m.Copy())
	}
	b, err := json.Marshal(out)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestMessageRoundTrip(t *testing.T) {
	for _, tc := range roundTripCases() {
		t.Run(tc.name, func(t *testing.T) {
			conv, err := toAgent(tc.msgs, nil)
			if err != nil {
				t.Fatal(err)
			}
			// Through agentsession's JSON, as a store keeps it.
			stored := make([]*as.Message, len(conv))
			for k, m := range conv {
				raw, err := json.Marshal(m)
				if err != nil {
					t.Fatal(err)
				}
				stored[k] = new(as.Message)
				if err := json.Unmarshal(raw, stored[k]); err != nil {
					t.Fatalf("%s: %v", raw, err)
				}
			}
			back, err := fromAgent(stored, nil)
			if err != nil {
				t.Fatal(err)
			}
			if got, want := canonical(t, back), canonical(t, tc.msgs); got != want {
				t.Errorf("round trip changed the messages\n got: %s\nwant: %s", got, want)
			}
		})
	}
}

func TestUsageRoundTrip(t *testing.T) {
	for _, u := range []*llm.Usage{
		{InputTokens: 10, OutputTokens: 5},
		{InputTokens: 10, OutputTokens: 5, CacheReadInputTokens: 3, CacheCreationInputTokens: 2},
		{InputTokens: 1, Cost: &llm.Cost{Input: 0.5, Total: 0.5}},
		{InputTokens: 1, Cost: &llm.Cost{}},
		{InputTokens: 1, Cost: &llm.Cost{Total: 1, Currency: "USD", Source: "provider"}},
		{OutputTokens: 9, ReasoningTokens: 4, ServiceTier: "priority", Speed: "fast", CacheCreationInputTokensUnavailable: true},
		{InputTokens: 2, ModalityTokens: map[string]llm.ModalityTokenUsage{"text": {InputTokens: 2}}},
	} {
		au, err := toUsage(u)
		if err != nil {
			t.Fatal(err)
		}
		raw, err := json.Marshal(au)
		if err != nil {
			t.Fatal(err)
		}
		var stored as.Usage
		if err := json.Unmarshal(raw, &stored); err != nil {
			t.Fatal(err)
		}
		back := fromUsage(&stored)
		b1, _ := json.Marshal(u)
		b2, _ := json.Marshal(back)
		if !bytes.Equal(b1, b2) {
			t.Errorf("usage round trip: got %s, want %s (stored %s)", b2, b1, raw)
		}
	}
}
