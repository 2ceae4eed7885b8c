package anthropic_test

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/agentsession/session/internal/workload"
	"github.com/agentsession/session/provider/anthropic"
	"github.com/agentsession/session/provider/internal/convtest"
)

// checkJSON checks req's AppendJSON and MarshalJSON against encoding/json
// (see convtest.CheckAppendJSON).
func checkJSON(t testing.TB, req anthropic.Request) {
	t.Helper()
	convtest.CheckAppendJSON(t, req.AppendJSON, req, anthropic.Reference(req))
}

func TestAppendJSONCorpus(t *testing.T) {
	for _, c := range append(convtest.Cases(t), convtest.Case{Name: "workload", Msgs: workload.Messages(0, 60)}) {
		t.Run(c.Name, func(t *testing.T) {
			checkJSON(t, request(c.Msgs, anthropic.Messages(c.Msgs, &anthropic.Options{Model: convtest.Model, CacheLast: true})))
		})
	}
}

func TestAppendJSONErrors(t *testing.T) {
	bad := json.RawMessage(`{"type":`)
	nan := 0.0
	nan /= nan
	for name, req := range map[string]anthropic.Request{
		"schema":      {Tools: []anthropic.Tool{{Name: "f", InputSchema: bad}}},
		"input":       {Messages: []anthropic.Message{{Role: "assistant", Content: []anthropic.Content{{Type: "tool_use", Input: bad}}}}},
		"temperature": {Temperature: &nan},
		"extra":       {Extra: json.RawMessage(`[1]`)},
	} {
		buf := []byte("kept")
		out, err := req.AppendJSON(buf)
		var me *anthropic.MarshalError
		if !errors.As(err, &me) || string(out) != "kept" {
			t.Errorf("%s: %q, %v", name, out, err)
		}
	}
}

// Extra's members come after the request's own.
func TestAppendJSONExtra(t *testing.T) {
	req := anthropic.Request{Model: "m", MaxTokens: 1, Messages: []anthropic.Message{}, Extra: json.RawMessage(` {"metadata": {"user_id":"u"}} `)}
	got, err := json.Marshal(req)
	if want := `{"model":"m","max_tokens":1,"messages":[],"metadata":{"user_id":"u"}}`; err != nil || string(got) != want {
		t.Errorf("got %s, %v; want %s", got, err, want)
	}
}

// FuzzAppendJSON checks AppendJSON and json.Marshal against encoding/json
// on requests made from the fuzz input: every block type (and an unknown
// one), nested tool results, raw JSON valid and not, strings with every
// kind of escape and invalid UTF-8, nil and empty slices, NaN.
func FuzzAppendJSON(f *testing.F) {
	f.Add([]byte("seed"))
	f.Add([]byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 200, 201, 202, 203, 0xff, 0xe2, 0x80, 0xa8, '<', '&'})
	f.Fuzz(func(t *testing.T, in []byte) {
		d := convtest.NewData(in)
		req := anthropic.Request{Model: d.String(), MaxTokens: int(int8(d.Byte())), Stream: d.Bool(), StopSequences: d.Strings()}
		if d.Bool() {
			req.System = fuzzContents(d, 0)
		}
		if d.N(4) > 0 {
			req.Messages = make([]anthropic.Message, d.N(4))
			for i := range req.Messages {
				req.Messages[i] = anthropic.Message{Role: d.String(), Content: fuzzContents(d, 0)}
			}
		}
		for range d.N(3) {
			tool := anthropic.Tool{Name: d.String(), Description: d.String(), InputSchema: d.Raw()}
			if d.Bool() {
				tool.CacheControl = &anthropic.CacheControl{Type: d.String(), TTL: d.String()}
			}
			req.Tools = append(req.Tools, tool)
		}
		if d.Bool() {
			req.ToolChoice = &anthropic.ToolChoice{Type: d.String(), Name: d.String(), DisableParallelToolUse: d.Bool()}
		}
		if d.Bool() {
			req.Thinking = &anthropic.Thinking{Type: d.String(), BudgetTokens: d.N(3) * 1000}
		}
		if d.Bool() {
			temp := d.Float()
			req.Temperature = &temp
		}
		checkJSON(t, req)
	})
}

var blockTypes = []string{"text", "image", "tool_use", "tool_result", "thinking", "redacted_thinking", "document", "other"}

var sourceTypes = []string{"base64", "text", "url", "file", "other"}

func fuzzContents(d *convtest.Data, depth int) []anthropic.Content {
	if d.N(5) == 0 {
		return nil
	}
	out := make([]anthropic.Content, d.N(4))
	for i := range out {
		c := anthropic.Content{
			Type: blockTypes[d.N(len(blockTypes))], Text: d.String(), ID: d.String(), Name: d.String(), Input: d.Raw(),
			ToolUseID: d.String(), IsError: d.Bool(), Thinking: d.String(), Signature: d.String(), Data: d.String(),
			Title: d.String(), Context: d.String(), Citations: d.Raw(),
		}
		if d.Bool() {
			c.Source = &anthropic.ImageSource{Type: "base64", MediaType: d.String(), Data: d.String()}
		}
		if d.Bool() {
			c.Document = &anthropic.DocumentSource{Type: sourceTypes[d.N(len(sourceTypes))], MediaType: d.String(), Data: d.String(), URL: d.String(), FileID: d.String()}
		}
		if d.Bool() {
			c.CacheControl = &anthropic.CacheControl{Type: "ephemeral", TTL: d.String()}
		}
		if depth < 2 && d.Bool() {
			c.Content = fuzzContents(d, depth+1)
		}
		out[i] = c
	}
	return out
}
