package openai_test

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/agentsession/session/internal/workload"
	"github.com/agentsession/session/provider/internal/convtest"
	"github.com/agentsession/session/provider/openai"
)

// checkJSON checks req's AppendJSON and MarshalJSON against encoding/json
// (see convtest.CheckAppendJSON).
func checkJSON(t testing.TB, req openai.Request) {
	t.Helper()
	convtest.CheckAppendJSON(t, req.AppendJSON, req, openai.Reference(req))
}

func TestAppendJSONCorpus(t *testing.T) {
	for _, c := range append(convtest.Cases(t), convtest.Case{Name: "workload", Msgs: workload.Messages(0, 60)}) {
		t.Run(c.Name, func(t *testing.T) {
			for _, mode := range []openai.ThinkingMode{openai.ThinkingDrop, openai.ThinkingText, openai.ThinkingReasoningContent} {
				checkJSON(t, openai.Request{Model: "gpt-5", Messages: openai.Messages(c.Msgs, &openai.Options{System: system, Thinking: mode})})
			}
		})
	}
}

func TestAppendJSONErrors(t *testing.T) {
	nan := 0.0
	nan /= nan
	for name, req := range map[string]openai.Request{
		"parameters":  {Tools: []openai.Tool{{Type: "function", Function: openai.Function{Name: "f", Parameters: json.RawMessage(`{"type":`)}}}},
		"tool_choice": {ToolChoice: json.RawMessage(`{`)},
		"func":        {ToolChoice: func() {}},
		"temperature": {Temperature: &nan},
		"extra":       {Extra: json.RawMessage(`"x"`)},
	} {
		out, err := req.AppendJSON([]byte("kept"))
		var me *openai.MarshalError
		if !errors.As(err, &me) || string(out) != "kept" {
			t.Errorf("%s: %q, %v", name, out, err)
		}
	}
}

func TestAppendJSONExtra(t *testing.T) {
	req := openai.Request{Model: "m", Messages: []openai.Message{}, Extra: json.RawMessage(`{"seed": 7}`)}
	got, err := json.Marshal(req)
	if want := `{"model":"m","messages":[],"seed":7}`; err != nil || string(got) != want {
		t.Errorf("got %s, %v; want %s", got, err, want)
	}
}

// FuzzAppendJSON checks AppendJSON and json.Marshal against encoding/json
// on requests made from the fuzz input: every kind of content (string,
// parts, none), tool calls, tools with raw parameters valid and not,
// strings with every kind of escape and invalid UTF-8, nil and empty
// slices, NaN, tool_choice of several types.
func FuzzAppendJSON(f *testing.F) {
	f.Add([]byte("seed"))
	f.Add([]byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 200, 201, 202, 203, 0xff, 0xe2, 0x80, 0xa8, '<', '&'})
	f.Fuzz(func(t *testing.T, in []byte) {
		d := convtest.NewData(in)
		req := openai.Request{Model: d.String(), Stream: d.Bool(), Stop: d.Strings(), ReasoningEffort: d.String(), MaxCompletionTokens: d.N(3) * 100}
		if d.N(4) > 0 {
			req.Messages = make([]openai.Message, d.N(4))
			for i := range req.Messages {
				req.Messages[i] = fuzzMessage(d)
			}
		}
		for range d.N(3) {
			fn := openai.Function{Name: d.String(), Description: d.String(), Parameters: d.Raw()}
			if d.Bool() {
				strict := d.Bool()
				fn.Strict = &strict
			}
			req.Tools = append(req.Tools, openai.Tool{Type: d.String(), Function: fn})
		}
		switch d.N(5) {
		case 1:
			req.ToolChoice = d.String()
		case 2:
			req.ToolChoice = d.Raw()
		case 3:
			req.ToolChoice = map[string]any{"type": "function", "function": map[string]string{"name": d.String()}}
		case 4:
			var p *int
			req.ToolChoice = p
		}
		if d.Bool() {
			b := d.Bool()
			req.ParallelToolCalls = &b
		}
		if d.Bool() {
			temp := d.Float()
			req.Temperature = &temp
		}
		if d.Bool() {
			req.StreamOptions = &openai.StreamOptions{IncludeUsage: d.Bool()}
		}
		checkJSON(t, req)
	})
}

var roles = []string{"user", "assistant", "tool", "system"}

func fuzzMessage(d *convtest.Data) openai.Message {
	m := openai.Message{Role: roles[d.N(len(roles))], Content: d.String(), ToolCallID: d.String(), ReasoningContent: d.String(), Name: d.String(), Refusal: d.String()}
	if d.N(3) == 0 {
		m.Parts = []openai.Part{}
		for range d.N(3) {
			p := openai.Part{Type: d.String(), Text: d.String()}
			if d.Bool() {
				p.ImageURL = &openai.ImageURL{URL: d.String(), Detail: d.String()}
			}
			if d.Bool() {
				p.File = &openai.File{FileID: d.String(), FileData: d.String(), Filename: d.String()}
			}
			if d.Bool() {
				p.InputAudio = &openai.InputAudio{Data: d.String(), Format: d.String()}
			}
			m.Parts = append(m.Parts, p)
		}
	}
	for range d.N(3) {
		m.ToolCalls = append(m.ToolCalls, openai.ToolCall{ID: d.String(), Type: "function", Function: openai.FunctionCall{Name: d.String(), Arguments: d.String()}})
	}
	return m
}

var itemTypes = []string{"message", "function_call", "function_call_output", "reasoning", "item_reference"}

var partTypes = []string{"input_text", "output_text", "input_image", "input_file", "refusal", "other"}

// FuzzAppendJSONResponses is FuzzAppendJSON for ResponsesRequest: every
// item type (and an unknown one), parts of every type, output as a
// string or parts, summaries nil and not, tools with raw parameters
// valid and not.
func FuzzAppendJSONResponses(f *testing.F) {
	f.Add([]byte("seed"))
	f.Add([]byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 200, 201, 202, 203, 0xff, 0xe2, 0x80, 0xa9, '<', '&'})
	f.Fuzz(func(t *testing.T, in []byte) {
		d := convtest.NewData(in)
		req := openai.ResponsesRequest{Model: d.String(), Instructions: d.String(), Include: d.Strings(), Stream: d.Bool(),
			MaxOutputTokens: d.N(3) * 1000, PromptCacheKey: d.String()}
		if d.N(4) > 0 {
			req.Input = make([]openai.InputItem, d.N(6))
			for i := range req.Input {
				req.Input[i] = fuzzItem(d)
			}
		}
		for range d.N(3) {
			tool := openai.ResponsesTool{Type: d.String(), Name: d.String(), Description: d.String(), Parameters: d.Raw()}
			if d.Bool() {
				strict := d.Bool()
				tool.Strict = &strict
			}
			req.Tools = append(req.Tools, tool)
		}
		switch d.N(3) {
		case 1:
			req.ToolChoice = d.String()
		case 2:
			req.ToolChoice = d.Raw()
		}
		if d.Bool() {
			req.Reasoning = &openai.ReasoningConfig{Effort: d.String(), Summary: d.String()}
		}
		if d.Bool() {
			store := d.Bool()
			req.Store = &store
		}
		if d.Bool() {
			b := d.Bool()
			req.ParallelToolCalls = &b
		}
		if d.Bool() {
			temp := d.Float()
			req.Temperature = &temp
		}
		checkResponsesJSON(t, req)
	})
}

func fuzzItem(d *convtest.Data) openai.InputItem {
	it := openai.InputItem{Type: itemTypes[d.N(len(itemTypes))], ID: d.String(), Role: d.String(), CallID: d.String(),
		Name: d.String(), Arguments: d.String(), Output: d.String(), EncryptedContent: d.String()}
	parts := func() []openai.InputContent {
		if d.N(4) == 0 {
			return nil
		}
		out := []openai.InputContent{}
		for range d.N(3) {
			out = append(out, openai.InputContent{Type: partTypes[d.N(len(partTypes))], Text: d.String(), ImageURL: d.String(), Detail: d.String(),
				FileID: d.String(), FileData: d.String(), FileURL: d.String(), Filename: d.String(), Refusal: d.String()})
		}
		return out
	}
	it.Content, it.OutputParts = parts(), parts()
	if d.Bool() {
		it.Summary = []openai.SummaryText{}
		for range d.N(3) {
			it.Summary = append(it.Summary, openai.SummaryText{Type: "summary_text", Text: d.String()})
		}
	}
	return it
}
