package openai

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"

	session "github.com/agentsession/session"
	"github.com/agentsession/session/provider/internal/wire"
)

// ResponsesResponse is the body of a Responses API response (the
// "response" object). Decoding the JSON ignores members this type does
// not model, and a null decodes as the zero value.
type ResponsesResponse struct {
	ID                string             `json:"id"`     // "resp_..."
	Object            string             `json:"object"` // "response"
	CreatedAt         float64            `json:"created_at"`
	Status            string             `json:"status"` // "completed", "incomplete", "failed", "cancelled", "in_progress", "queued"
	Error             *ResponsesError    `json:"error,omitempty"`
	IncompleteDetails *IncompleteDetails `json:"incomplete_details,omitempty"`
	Model             string             `json:"model"`
	Output            []OutputItem       `json:"output"`
	Usage             *ResponsesUsage    `json:"usage,omitempty"`
	ServiceTier       string             `json:"service_tier,omitempty"`
}

// ResponsesError is the error of a failed response.
type ResponsesError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// IncompleteDetails says why a response is incomplete.
type IncompleteDetails struct {
	Reason string `json:"reason"` // "max_output_tokens", "content_filter"
}

// OutputItem is one item of a response's output. Type says which fields
// apply: "message" (Role, Phase, Content), "function_call" (CallID, Name,
// Arguments) or "reasoning" (Summary, EncryptedContent, and Content
// parts of type reasoning_text from some models). Raw is the item's JSON
// as it came, when it was decoded from JSON.
type OutputItem struct {
	Type             string          `json:"type"`
	ID               string          `json:"id,omitempty"`
	Status           string          `json:"status,omitempty"`
	Role             string          `json:"role,omitempty"`
	Phase            string          `json:"phase,omitempty"`
	Content          []OutputContent `json:"content,omitempty"`
	CallID           string          `json:"call_id,omitempty"`
	Name             string          `json:"name,omitempty"`
	Arguments        string          `json:"arguments,omitempty"`
	Summary          []SummaryText   `json:"summary,omitempty"`
	EncryptedContent string          `json:"encrypted_content,omitempty"`
	Raw              json.RawMessage `json:"-"`
}

// UnmarshalJSON decodes the item and keeps its JSON, compacted, in Raw.
func (it *OutputItem) UnmarshalJSON(data []byte) error {
	type plain OutputItem // without this method
	var p plain
	if err := json.Unmarshal(data, &p); err != nil {
		return err
	}
	*it = OutputItem(p)
	var b bytes.Buffer
	if err := json.Compact(&b, data); err != nil {
		return err
	}
	it.Raw = b.Bytes()
	return nil
}

// OutputContent is one part of an output message ("output_text" with
// Text, "refusal" with Refusal) or of a reasoning item ("reasoning_text"
// with Text).
type OutputContent struct {
	Type    string `json:"type"`
	Text    string `json:"text,omitempty"`
	Refusal string `json:"refusal,omitempty"`
}

// ResponsesUsage is the token usage of a response. InputTokens includes
// the cached tokens, and OutputTokens the reasoning tokens.
type ResponsesUsage struct {
	InputTokens         int64                `json:"input_tokens"`
	InputTokensDetails  *InputTokensDetails  `json:"input_tokens_details,omitempty"`
	OutputTokens        int64                `json:"output_tokens"`
	OutputTokensDetails *OutputTokensDetails `json:"output_tokens_details,omitempty"`
	TotalTokens         int64                `json:"total_tokens"`
}

// InputTokensDetails breaks down the input tokens.
type InputTokensDetails struct {
	CachedTokens int64 `json:"cached_tokens"`
}

// OutputTokensDetails breaks down the output tokens.
type OutputTokensDetails struct {
	ReasoningTokens int64 `json:"reasoning_tokens"`
}

// MessageFromResponses converts a Responses API response to the
// assistant message a session saves (see the package documentation,
// "Responses API responses"). The message is not nil whenever resp is
// not: when MessageFromResponses also returns an error (a response still
// in progress, tool arguments that are not a JSON object), the message is
// a failed reply, with StopReason "error" and the error's text as its
// ErrorMessage. A failed, cancelled or content-filtered response, or a
// refusal, is not an error of the conversion: its message has StopReason
// "error" and a nil error.
func MessageFromResponses(resp *ResponsesResponse, opts *ResponseOptions) (*session.Message, error) {
	if resp == nil {
		return nil, errors.New("openai: MessageFromResponses of a nil response")
	}
	r := newReply(ResponsesAPI, opts, resp.Model, resp.ID)
	if u := resp.Usage; u != nil {
		var cached int64
		if u.InputTokensDetails != nil {
			cached = u.InputTokensDetails.CachedTokens
		}
		r.Usage = session.Usage{Input: max(0, u.InputTokens-cached), Output: u.OutputTokens, CacheRead: cached}
		if u.OutputTokensDetails != nil {
			r.Usage.ReasoningTokens = u.OutputTokensDetails.ReasoningTokens
		}
	}
	r.Usage.ServiceTier = resp.ServiceTier
	var err error
	var refusal strings.Builder
	calls := 0
	r.Content = make([]session.Block, 0, len(resp.Output))
	for i := range resp.Output {
		it := &resp.Output[i]
		switch it.Type {
		case "reasoning":
			r.Content = append(r.Content, session.Thinking(reasoningText(it), reasoningSignature(it)))
		case "message":
			var text, refused strings.Builder
			for _, c := range it.Content {
				switch c.Type {
				case "output_text":
					text.WriteString(c.Text)
				case "refusal":
					refused.WriteString(c.Refusal)
				}
			}
			if text.Len() > 0 {
				b := session.Text(text.String())
				if it.ID != "" {
					b.Extra.Set("textSignature", textSignature(it.ID, it.Phase))
				}
				r.Content = append(r.Content, b)
			}
			if refused.Len() > 0 {
				r.Content = append(r.Content, session.Refusal(refused.String()))
				refusal.WriteString(refused.String())
			}
		case "function_call":
			args, ok := wire.Arguments([]byte(it.Arguments))
			if !ok && err == nil {
				err = wire.Malformed(nil, "openai: the arguments of function call %s (%s) are not a JSON object", it.CallID, it.Name)
			}
			if it.CallID == "" && err == nil {
				err = wire.Malformed(nil, "openai: function call %s (%s) has no call_id", it.ID, it.Name)
			}
			if it.Name == "" && err == nil {
				// The API never sends one, and would refuse it back: the
				// reply is saved as failed, and so not sent again.
				err = wire.Malformed(nil, "openai: function call %s has no name", it.CallID)
			}
			id := it.CallID
			if it.ID != "" {
				id += "|" + it.ID // as pi keeps it: Input sends the call_id
			}
			r.Content = append(r.Content, session.ToolCall(id, it.Name, args))
			calls++
		}
	}
	r.StopReason, r.ErrorMessage = responsesStop(resp, calls > 0)
	if r.StopReason == "" {
		r.StopReason = session.StopError
		if err == nil {
			err = wire.Truncated("openai: the response is " + resp.Status + ", not complete")
		}
	}
	if refusal.Len() > 0 {
		r.StopReason, r.ErrorMessage = session.StopError, refusal.String()
	}
	return r.Message(err), err
}

// reasoningText is the text of a reasoning item: its summary parts
// joined by blank lines, as pi joins them, else its reasoning_text
// parts.
func reasoningText(it *OutputItem) string {
	var parts []string
	for _, s := range it.Summary {
		parts = append(parts, s.Text)
	}
	if len(parts) == 0 {
		for _, c := range it.Content {
			if c.Type == "reasoning_text" {
				parts = append(parts, c.Text)
			}
		}
	}
	return strings.Join(parts, "\n\n")
}

// reasoningSignature is the JSON of a reasoning item, as the thinking
// block's signature keeps it (pi keeps the same): the item as it came, or
// its members when it was not decoded from JSON.
func reasoningSignature(it *OutputItem) string {
	if len(it.Raw) > 0 {
		return string(it.Raw)
	}
	summary := it.Summary
	if summary == nil {
		summary = []SummaryText{}
	}
	b, _ := wire.Marshal(struct {
		Type             string        `json:"type"`
		ID               string        `json:"id,omitempty"`
		Summary          []SummaryText `json:"summary"`
		EncryptedContent string        `json:"encrypted_content,omitempty"`
	}{"reasoning", it.ID, summary, it.EncryptedContent})
	return string(b)
}

// textSignature is the textSignature member pi writes on the text of an
// output message: a JSON string holding {"v":1,"id":...,"phase":...}.
func textSignature(id, phase string) json.RawMessage {
	sig, _ := wire.Marshal(struct {
		V     int    `json:"v"`
		ID    string `json:"id"`
		Phase string `json:"phase,omitempty"`
	}{1, id, phase})
	b, _ := wire.Marshal(string(sig))
	return b
}

// responsesStop maps a response's status to a stop reason and error
// message; "" for a response that is not finished.
func responsesStop(resp *ResponsesResponse, calls bool) (reason, message string) {
	switch resp.Status {
	case "completed", "":
		if calls {
			return session.StopToolUse, ""
		}
		return session.StopEnd, ""
	case "incomplete":
		if d := resp.IncompleteDetails; d != nil && d.Reason != "" && d.Reason != "max_output_tokens" {
			return session.StopError, "incomplete: " + d.Reason
		}
		return session.StopLength, ""
	case "failed":
		if e := resp.Error; e != nil {
			code, msg := e.Code, e.Message
			if code == "" {
				code = "unknown"
			}
			if msg == "" {
				msg = "no message"
			}
			return session.StopError, code + ": " + msg
		}
		return session.StopError, "Unknown error (no error details in response)"
	case "in_progress", "queued":
		return "", ""
	}
	return session.StopError, "Provider status: " + resp.Status
}
