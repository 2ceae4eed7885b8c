package openai

import (
	"encoding/json"
	"strconv"
	"strings"

	session "github.com/agentsession/session"
	"github.com/agentsession/session/provider/internal/wire"
)

// maxToolIDLen is the longest tool call id the API accepts.
const maxToolIDLen = 40

// Request is the body of a Chat Completions request. Fields the host does
// not set are left out of the JSON. AppendJSON writes it (and
// MarshalJSON, so json.Marshal, through it); members this type does not
// have go in Extra. Embedding a Request in a struct of one's own no
// longer adds that struct's fields: the promoted MarshalJSON writes the
// Request alone.
type Request struct {
	Model               string         `json:"model"`
	Messages            []Message      `json:"messages"`
	Tools               []Tool         `json:"tools,omitempty"`
	ToolChoice          any            `json:"tool_choice,omitempty"` // "auto", "none", "required" or an object
	ParallelToolCalls   *bool          `json:"parallel_tool_calls,omitempty"`
	MaxCompletionTokens int            `json:"max_completion_tokens,omitempty"`
	ReasoningEffort     string         `json:"reasoning_effort,omitempty"`
	Temperature         *float64       `json:"temperature,omitempty"`
	Stop                []string       `json:"stop,omitempty"`
	Stream              bool           `json:"stream,omitempty"`
	StreamOptions       *StreamOptions `json:"stream_options,omitempty"`
	// Extra is a JSON object whose members are written after the
	// request's own (seed, top_p, response_format, a compatible
	// server's own members, ...). Give a member of the request in its
	// field, not here: a member written twice is an error for most
	// servers.
	Extra json.RawMessage `json:"-"`
}

// StreamOptions configures a streamed response.
type StreamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

// Message is one entry of Request.Messages. MarshalJSON writes content as
// a string, or as an array when Parts is set, and leaves it out of an
// assistant message that only calls tools.
type Message struct {
	Role             string // "system", "developer", "user", "assistant", "tool"
	Content          string
	Parts            []Part // instead of Content: text and image parts
	ToolCalls        []ToolCall
	ToolCallID       string // tool
	ReasoningContent string // assistant, for servers that read it back
	Refusal          string // assistant: a refusal, apart from the text
	Name             string
}

// Part is one part of a message's content.
type Part struct {
	Type       string      `json:"type"` // "text", "image_url", "file" or "input_audio"
	Text       string      `json:"text,omitempty"`
	ImageURL   *ImageURL   `json:"image_url,omitempty"`
	File       *File       `json:"file,omitempty"`
	InputAudio *InputAudio `json:"input_audio,omitempty"`
}

// File is a file part's file: an uploaded file's id, or the data (a data:
// URL) with a file name.
type File struct {
	FileID   string `json:"file_id,omitempty"`
	FileData string `json:"file_data,omitempty"`
	Filename string `json:"filename,omitempty"`
}

// InputAudio is an audio part's audio, base64.
type InputAudio struct {
	Data   string `json:"data"`
	Format string `json:"format"` // "wav" or "mp3"
}

// ImageURL is an image given by URL, here always a data: URL.
type ImageURL struct {
	URL    string `json:"url"`
	Detail string `json:"detail,omitempty"` // "auto", "low", "high"
}

// ToolCall is one tool call of an assistant message.
type ToolCall struct {
	ID       string       `json:"id"`
	Type     string       `json:"type"` // "function"
	Function FunctionCall `json:"function"`
}

// FunctionCall names the function called and its arguments.
type FunctionCall struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"` // a JSON object, as a string
}

// Tool describes a tool the model may call.
type Tool struct {
	Type     string   `json:"type"` // "function"
	Function Function `json:"function"`
}

// Function describes a function tool.
type Function struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters,omitempty"` // a JSON Schema object
	Strict      *bool           `json:"strict,omitempty"`
}

// ThinkingMode says what happens to thinking blocks.
type ThinkingMode int

const (
	// ThinkingDrop leaves thinking out (the default).
	ThinkingDrop ThinkingMode = iota
	// ThinkingText sends thinking as text in <thinking> tags, ahead of the
	// assistant's text.
	ThinkingText
	// ThinkingReasoningContent sends thinking in the assistant message's
	// reasoning_content member, which some compatible servers require
	// back during a tool-calling turn.
	ThinkingReasoningContent
)

// Options configures a conversion. The zero value (or nil) converts with
// the defaults described in the package documentation.
type Options struct {
	// System is the system prompt, sent first. Empty sends none.
	System string
	// SystemRole is the role of the system prompt and of the session's
	// system messages: "system" (the default) or "developer", which
	// OpenAI's reasoning models prefer.
	SystemRole string
	// Thinking says what happens to thinking blocks; redacted thinking is
	// always dropped.
	Thinking ThinkingMode
	// UserContent renders the roles the API has no place for; nil means
	// session.UserContent.
	UserContent func(*session.Message) ([]session.Block, bool)
}

// Messages converts msgs, as Session.Messages returns them, to the
// messages of a request, preceded by the system prompt if one is set.
func Messages(msgs []*session.Message, opts *Options) []Message {
	return AppendMessages(make([]Message, 0, len(msgs)+1), msgs, opts)
}

// AppendMessages is Messages appending to dst, for a host that reuses a
// slice from one request to the next.
func AppendMessages(dst []Message, msgs []*session.Message, opts *Options) []Message {
	var o Options
	if opts != nil {
		o = *opts
	}
	systemRole := o.SystemRole
	if systemRole == "" {
		systemRole = "system"
	}
	if o.System != "" {
		dst = append(dst, Message{Role: systemRole, Content: o.System})
	}
	var images []Part // of the tool results of the current turn
	calls := wire.NewCalls(maxToolIDLen, len(msgs)/2)
	wire.Walk(msgs, calls, wire.Handlers{
		Unanswered: func(c wire.Call) {
			dst = append(dst, Message{Role: "tool", ToolCallID: c.ID, Content: errorPrefix + session.SyntheticResultText})
		},
		Between: func() {
			if len(images) > 0 {
				dst = append(dst, Message{Role: "user", Parts: images})
				images = nil
			}
		},
		User: func(m *session.Message) { dst = appendUser(dst, m.Content) },
		System: func(m *session.Message) {
			if text := joinText(m.Content); strings.TrimSpace(text) != "" {
				dst = append(dst, Message{Role: systemRole, Content: text})
			}
		},
		Assistant: func(m *session.Message) {
			if a, ok := assistant(m, o.Thinking, calls); ok {
				dst = append(dst, a)
			}
		},
		ToolResult: func(m *session.Message, id string) {
			var msg Message
			msg, images = toolResult(m, id, images)
			dst = append(dst, msg)
		},
		Other:       func(blocks []session.Block) { dst = appendUser(dst, blocks) },
		UserContent: o.UserContent,
	})
	if len(images) > 0 {
		dst = append(dst, Message{Role: "user", Parts: images})
	}
	return dst
}

// appendUser adds a user message: its text as a string when that is all
// it has, parts when it has images, documents or audio. Content with
// nothing to send is left out.
func appendUser(dst []Message, blocks []session.Block) []Message {
	texts, media := 0, 0
	for i := range blocks {
		switch blocks[i].Type {
		case session.BlockText:
			if blocks[i].Text != "" {
				texts++
			}
		case session.BlockImage, session.BlockDocument, session.BlockAudio:
			media++
		}
	}
	switch {
	case texts+media == 0:
		return dst
	case media == 0 && texts == 1:
		for i := range blocks {
			if blocks[i].Type == session.BlockText && blocks[i].Text != "" {
				return append(dst, Message{Role: "user", Content: blocks[i].Text})
			}
		}
	}
	parts := make([]Part, 0, texts+media)
	for i := range blocks {
		b := &blocks[i]
		switch b.Type {
		case session.BlockText:
			if b.Text != "" {
				parts = append(parts, Part{Type: "text", Text: b.Text})
			}
		default:
			if p, ok := mediaPart(b); ok {
				parts = append(parts, p)
			}
		}
	}
	if len(parts) == 0 {
		return dst
	}
	return append(dst, Message{Role: "user", Parts: parts})
}

// mediaPart returns the part of an image, document or audio block; false
// for other blocks and for a document or audio with nothing to send. A
// document with data goes as a file's data (a data: URL), one with a
// file id as that file; a text document's text and a URL document's URL,
// which Chat Completions takes no file for, go as text.
func mediaPart(b *session.Block) (Part, bool) {
	switch b.Type {
	case session.BlockImage:
		return imagePart(b), true
	case session.BlockAudio:
		if b.Data == "" {
			return Part{}, false
		}
		return Part{Type: "input_audio", InputAudio: &InputAudio{Data: b.Data, Format: audioFormat(b.MimeType)}}, true
	case session.BlockDocument:
		switch {
		case b.FileID != "":
			return Part{Type: "file", File: &File{FileID: b.FileID}}, true
		case b.Data != "":
			return Part{Type: "file", File: &File{FileData: "data:" + b.MimeType + ";base64," + b.Data, Filename: b.Filename}}, true
		case b.Text != "":
			return Part{Type: "text", Text: b.Text}, true
		case b.URL != "":
			return Part{Type: "text", Text: b.URL}, true
		}
	}
	return Part{}, false
}

// audioFormat is the input_audio format of an audio MIME type: "mp3" for
// MPEG audio, else "wav".
func audioFormat(mimeType string) string {
	switch mimeType {
	case "audio/mpeg", "audio/mp3":
		return "mp3"
	}
	return "wav"
}

func imagePart(b *session.Block) Part {
	if b.Unresolved() {
		return Part{Type: "text", Text: session.UnresolvedImageText} // a blob reference is no image
	}
	return Part{Type: "image_url", ImageURL: &ImageURL{URL: "data:" + b.MimeType + ";base64," + b.Data}}
}

func assistant(m *session.Message, mode ThinkingMode, calls *wire.Calls) (Message, bool) {
	calls.Turn()
	out := Message{Role: "assistant"}
	// Thinking that nothing of the reply follows (a reply cut short, or
	// followed only by blank text) is not sent, in any mode: an assistant
	// message never ends on thinking, nor has nothing but thinking.
	end := 0 // thinking at or after end is not sent
	for i := range m.Content {
		if b := &m.Content[i]; b.Type == session.BlockToolCall || b.Type == session.BlockText && strings.TrimSpace(b.Text) != "" {
			end = i + 1
		}
	}
	n, thinking := 0, false
	for i := range m.Content {
		switch b := &m.Content[i]; b.Type {
		case session.BlockRefusal:
			if b.Text != "" {
				if out.Refusal != "" {
					out.Refusal += "\n"
				}
				out.Refusal += b.Text
			}
		case session.BlockToolCall:
			n++
		case session.BlockThinking:
			thinking = thinking || i < end && mode != ThinkingDrop && !b.Redacted && b.Thinking != ""
		}
	}
	if n > 0 {
		out.ToolCalls = make([]ToolCall, 0, n)
		for i := range m.Content {
			if b := &m.Content[i]; b.Type == session.BlockToolCall {
				out.ToolCalls = append(out.ToolCalls, ToolCall{
					ID: calls.Call(b.ID, b.Name), Type: "function",
					Function: FunctionCall{Name: b.Name, Arguments: arguments(b.Arguments)},
				})
			}
		}
	}
	if !thinking {
		out.Content = joinText(m.Content)
		return out, out.Content != "" || n > 0 || out.Refusal != ""
	}
	var text, reasoning strings.Builder
	for i := range m.Content {
		b := &m.Content[i]
		switch {
		case b.Type == session.BlockText && b.Text != "":
			line(&text, b.Text)
		case b.Type != session.BlockThinking || b.Redacted || b.Thinking == "" || i >= end:
		case mode == ThinkingText:
			line(&text, "<thinking>\n"+b.Thinking+"\n</thinking>")
		case mode == ThinkingReasoningContent:
			line(&reasoning, b.Thinking)
		}
	}
	out.Content, out.ReasoningContent = text.String(), reasoning.String()
	return out, out.Content != "" || n > 0 || out.Refusal != ""
}

// line adds s to b, after a newline if b is not empty.
func line(b *strings.Builder, s string) {
	if b.Len() > 0 {
		b.WriteByte('\n')
	}
	b.WriteString(s)
}

// joinText returns the non-empty text blocks joined by newlines; a single
// one is returned as it is, without a copy.
func joinText(blocks []session.Block) string {
	var one string
	n := 0
	for i := range blocks {
		if blocks[i].Type == session.BlockText && blocks[i].Text != "" {
			if n == 0 {
				one = blocks[i].Text
			}
			n++
		}
	}
	if n <= 1 {
		return one
	}
	var b strings.Builder
	for i := range blocks {
		if blocks[i].Type == session.BlockText && blocks[i].Text != "" {
			line(&b, blocks[i].Text)
		}
	}
	return b.String()
}

// arguments returns args as a string if it is a JSON object, "{}"
// otherwise.
func arguments(args json.RawMessage) string {
	if wire.Object(args) {
		return string(args)
	}
	return "{}"
}

// toolResult returns the tool message for m, answering the call sent as
// id, and adds its images, documents and audio to images, to be sent
// after the turn's results: a tool message takes text only.
func toolResult(m *session.Message, id string, images []Part) (Message, []Part) {
	text := joinText(m.Content)
	var media []Part
	onlyImages := true
	for i := range m.Content {
		if p, ok := mediaPart(&m.Content[i]); ok {
			media = append(media, p)
			onlyImages = onlyImages && m.Content[i].Type == session.BlockImage
		}
	}
	if n := len(media); n > 0 {
		images = append(images, Part{Type: "text", Text: mediaNote(onlyImages, m.ToolName, id)})
		images = append(images, media...)
		kind := "file"
		if onlyImages {
			kind = "image"
		}
		note := "(" + strconv.Itoa(n) + " " + kind + " in the next user message)"
		if n > 1 {
			note = "(" + strconv.Itoa(n) + " " + kind + "s in the next user message)"
		}
		if text != "" {
			note = text + "\n" + note
		}
		text = note
	}
	if m.IsError {
		text = errorPrefix + text
	}
	return Message{Role: "tool", ToolCallID: id, Content: text}, images
}

// mediaNote introduces the images (or files) of the result of the tool
// call id, naming the tool when the result does.
func mediaNote(images bool, tool, id string) string {
	what := "Files"
	if images {
		what = "Images"
	}
	if tool == "" {
		return what + " returned by tool call " + id + ":"
	}
	return what + " returned by the " + tool + " tool call " + id + ":"
}

// errorPrefix marks a failed tool's output: tool messages have no error
// flag.
const errorPrefix = "Error: "
