package langchaingo

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	session "github.com/agentsession/session"
	"github.com/tmc/langchaingo/llms"
)

// CustomType is the customType of the custom messages (role "custom")
// that hold the langchaingo messages the seed format has no role for:
// system, generic, function and unpaired tool messages. Their Details
// is a JSON object (see the package documentation) naming the
// langchaingo type and the fields that have no other home.
const CustomType = "langchaingo"

// ExtraKey is the member, in Message.Extra of an assistant message or in
// Block.Extra of a tool call block, that keeps what the seed format has
// no field for: an AIChatMessage's deprecated FunctionCall
// ({"function_call":{...}}), and a ToolCall that does not map onto a
// tool call block as it is (its Type is not "function", its
// FunctionCall is nil, or its arguments are not a compact JSON object),
// whole, as {"id","type","function":{"name","arguments"}} (no function
// member for a nil FunctionCall).
const ExtraKey = "langchaingo"

// details is the Details of a custom message of type CustomType.
type details struct {
	Type       llms.ChatMessageType `json:"type"`
	Role       string               `json:"role,omitempty"`
	Name       string               `json:"name,omitempty"`
	ToolCallID string               `json:"tool_call_id,omitempty"`
}

// keptCall is the ExtraKey member of a tool call block: the llms.ToolCall
// in OpenAI's shape. (llms.ToolCall's own JSON methods do not round-trip:
// its UnmarshalJSON drops the function.)
type keptCall struct {
	ID           string             `json:"id"`
	Type         string             `json:"type"`
	FunctionCall *llms.FunctionCall `json:"function,omitempty"`
}

// assistantExtra is the ExtraKey member of an assistant message.
type assistantExtra struct {
	FunctionCall *llms.FunctionCall `json:"function_call,omitempty"`
}

var errNilMessage = errors.New("langchaingo: nil chat message")

// normalize returns msg as one of llms's value types: pointers to them
// are dereferenced, and another implementation of llms.ChatMessage is
// rebuilt from its type and content (its name and tool call id when it
// has GetName or GetID); a type langchaingo does not define becomes a
// GenericChatMessage whose Role is that type. Its strings are valid
// UTF-8, as JSON stores them (see validUTF8).
func normalize(msg llms.ChatMessage) (llms.ChatMessage, error) {
	m, err := asValue(msg)
	if err != nil {
		return nil, err
	}
	return withValidUTF8(m), nil
}

func asValue(msg llms.ChatMessage) (llms.ChatMessage, error) {
	switch m := msg.(type) {
	case nil:
		return nil, errNilMessage
	case llms.HumanChatMessage, llms.AIChatMessage, llms.SystemChatMessage,
		llms.GenericChatMessage, llms.FunctionChatMessage, llms.ToolChatMessage:
		return m, nil
	case *llms.HumanChatMessage:
		if m != nil {
			return *m, nil
		}
	case *llms.AIChatMessage:
		if m != nil {
			return *m, nil
		}
	case *llms.SystemChatMessage:
		if m != nil {
			return *m, nil
		}
	case *llms.GenericChatMessage:
		if m != nil {
			return *m, nil
		}
	case *llms.FunctionChatMessage:
		if m != nil {
			return *m, nil
		}
	case *llms.ToolChatMessage:
		if m != nil {
			return *m, nil
		}
	default:
		var name, id string
		if n, ok := msg.(llms.Named); ok {
			name = n.GetName()
		}
		if i, ok := msg.(interface{ GetID() string }); ok {
			id = i.GetID()
		}
		content := msg.GetContent()
		switch t := msg.GetType(); t {
		case llms.ChatMessageTypeHuman:
			return llms.HumanChatMessage{Content: content}, nil
		case llms.ChatMessageTypeAI:
			return llms.AIChatMessage{Content: content}, nil
		case llms.ChatMessageTypeSystem:
			return llms.SystemChatMessage{Content: content}, nil
		case llms.ChatMessageTypeFunction:
			return llms.FunctionChatMessage{Name: name, Content: content}, nil
		case llms.ChatMessageTypeTool:
			return llms.ToolChatMessage{ID: id, Content: content}, nil
		case llms.ChatMessageTypeGeneric:
			return llms.GenericChatMessage{Content: content, Name: name}, nil
		default:
			return llms.GenericChatMessage{Role: string(t), Content: content, Name: name}, nil
		}
	}
	return nil, errNilMessage // a nil pointer
}

// withValidUTF8 returns m, or when one of its strings is not valid
// UTF-8, a copy with validUTF8 strings.
func withValidUTF8(m llms.ChatMessage) llms.ChatMessage {
	v := validUTF8
	switch m := m.(type) {
	case llms.HumanChatMessage:
		m.Content = v(m.Content)
		return m
	case llms.SystemChatMessage:
		m.Content = v(m.Content)
		return m
	case llms.GenericChatMessage:
		m.Content, m.Role, m.Name = v(m.Content), v(m.Role), v(m.Name)
		return m
	case llms.FunctionChatMessage:
		m.Content, m.Name = v(m.Content), v(m.Name)
		return m
	case llms.ToolChatMessage:
		m.Content, m.ID = v(m.Content), v(m.ID)
		return m
	case llms.AIChatMessage:
		m.Content, m.ReasoningContent = v(m.Content), v(m.ReasoningContent)
		valid := func(fc *llms.FunctionCall) bool {
			return fc == nil || utf8.ValidString(fc.Name) && utf8.ValidString(fc.Arguments)
		}
		fix := func(fc *llms.FunctionCall) *llms.FunctionCall {
			if valid(fc) {
				return fc
			}
			return &llms.FunctionCall{Name: v(fc.Name), Arguments: v(fc.Arguments)}
		}
		m.FunctionCall = fix(m.FunctionCall)
		cloned := false
		for i, tc := range m.ToolCalls {
			if utf8.ValidString(tc.ID) && utf8.ValidString(tc.Type) && valid(tc.FunctionCall) {
				continue
			}
			if !cloned {
				m.ToolCalls, cloned = slices.Clone(m.ToolCalls), true // the caller's stays as it is
			}
			m.ToolCalls[i] = llms.ToolCall{ID: v(tc.ID), Type: v(tc.Type), FunctionCall: fix(tc.FunctionCall)}
		}
		return m
	}
	return m
}

// validUTF8 returns s with U+FFFD in place of each byte that is not
// part of valid UTF-8, as JSON (encoding/json, and the session's
// encoder) writes it.
func validUTF8(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b.WriteString("\uFFFD")
		} else {
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

// pairing follows which tool calls may still get a result, as the
// session's own pairing does (see session.ErrUnpairedToolResult): the
// calls of the last assistant message not answered yet. A custom
// message leaves them open; any other message but a result closes them.
type pairing struct {
	open []session.ToolCallRef
}

func (p *pairing) accepts(callID string) bool {
	return slices.ContainsFunc(p.open, func(c session.ToolCallRef) bool { return c.CallID == callID })
}

func (p *pairing) name(callID string) string {
	for _, c := range p.open {
		if c.CallID == callID {
			return c.Name
		}
	}
	return ""
}

// push takes in a message appended after the others.
func (p *pairing) push(m *session.Message) {
	switch m.Role {
	case session.RoleToolResult:
		if k := slices.IndexFunc(p.open, func(c session.ToolCallRef) bool { return c.CallID == m.ToolCallID }); k >= 0 {
			p.open = slices.Delete(p.open, k, k+1)
		}
		return
	case session.RoleCustom:
		return
	case session.RoleBashExecution:
		if m.ExcludeFromContext {
			return
		}
	}
	p.open = p.open[:0:0]
	if m.Role == session.RoleAssistant {
		for _, b := range m.Content {
			if b.Type == session.BlockToolCall {
				p.open = append(p.open, session.ToolCallRef{CallID: b.ID, Name: b.Name})
			}
		}
	}
}

// toSession returns the session message that stores msg (normalized)
// when appended where p stands. A tool message becomes a tool result
// when p accepts it, else a custom message.
func toSession(msg llms.ChatMessage, p *pairing) (*session.Message, error) {
	switch m := msg.(type) {
	case llms.HumanChatMessage:
		return session.UserText(m.Content), nil
	case llms.AIChatMessage:
		return assistant(m)
	case llms.ToolChatMessage:
		if p.accepts(m.ID) {
			return session.ToolResult(m.ID, p.name(m.ID), m.Content), nil
		}
		return custom(details{Type: llms.ChatMessageTypeTool, ToolCallID: m.ID}, m.Content)
	case llms.SystemChatMessage:
		return custom(details{Type: llms.ChatMessageTypeSystem}, m.Content)
	case llms.GenericChatMessage:
		return custom(details{Type: llms.ChatMessageTypeGeneric, Role: m.Role, Name: m.Name}, m.Content)
	case llms.FunctionChatMessage:
		return custom(details{Type: llms.ChatMessageTypeFunction, Name: m.Name}, m.Content)
	}
	return nil, fmt.Errorf("langchaingo: %w: %T", llms.ErrUnexpectedChatMessageType, msg)
}

func custom(d details, content string) (*session.Message, error) {
	raw, err := json.Marshal(d)
	if err != nil {
		return nil, err
	}
	m := session.CustomMessage(CustomType, content, true)
	m.Details = raw
	return m, nil
}

func assistant(m llms.AIChatMessage) (*session.Message, error) {
	blocks := make([]session.Block, 0, 2+len(m.ToolCalls))
	if m.ReasoningContent != "" {
		blocks = append(blocks, session.Thinking(m.ReasoningContent, ""))
	}
	if m.Content != "" {
		blocks = append(blocks, session.Text(m.Content))
	}
	for _, tc := range m.ToolCalls {
		b, err := toolCallBlock(tc)
		if err != nil {
			return nil, err
		}
		blocks = append(blocks, b)
	}
	out := session.Assistant(blocks...)
	if m.FunctionCall != nil {
		raw, err := json.Marshal(assistantExtra{FunctionCall: m.FunctionCall})
		if err != nil {
			return nil, err
		}
		out.Extra.Set(ExtraKey, raw)
	}
	return out, nil
}

// toolCallBlock returns the tool call block of tc. Its arguments are
// tc's when they are a JSON object ({} otherwise), compacted; when that
// loses anything, tc is kept whole in the block's ExtraKey member.
func toolCallBlock(tc llms.ToolCall) (session.Block, error) {
	var name, args string
	if tc.FunctionCall != nil {
		name, args = tc.FunctionCall.Name, tc.FunctionCall.Arguments
	}
	b := session.ToolCall(tc.ID, name, nil)
	exact := false
	if obj, ok := compactObject(args); ok {
		b.Arguments = obj
		exact = string(obj) == args
	}
	if !exact || tc.FunctionCall == nil || tc.Type != "function" {
		raw, err := json.Marshal(keptCall(tc))
		if err != nil {
			return session.Block{}, err
		}
		b.Extra.Set(ExtraKey, raw)
	}
	return b, nil
}

// compactObject returns s compacted when it is a JSON object.
func compactObject(s string) (json.RawMessage, bool) {
	var buf bytes.Buffer
	if err := json.Compact(&buf, []byte(s)); err != nil || buf.Len() == 0 || buf.Bytes()[0] != '{' {
		return nil, false
	}
	return buf.Bytes(), true
}

// fromSession returns the langchaingo message of a context message.
func fromSession(m *session.Message) llms.ChatMessage {
	switch m.Role {
	case session.RoleUser:
		return llms.HumanChatMessage{Content: m.Text()}
	case session.RoleAssistant:
		return fromAssistant(m)
	case session.RoleToolResult:
		return llms.ToolChatMessage{ID: m.ToolCallID, Content: m.Text()}
	case session.RoleCustom:
		if m.CustomType == CustomType {
			var d details
			if json.Unmarshal(m.Details, &d) == nil {
				switch d.Type {
				case llms.ChatMessageTypeSystem:
					return llms.SystemChatMessage{Content: m.Text()}
				case llms.ChatMessageTypeGeneric:
					return llms.GenericChatMessage{Role: d.Role, Name: d.Name, Content: m.Text()}
				case llms.ChatMessageTypeFunction:
					return llms.FunctionChatMessage{Name: d.Name, Content: m.Text()}
				case llms.ChatMessageTypeTool:
					return llms.ToolChatMessage{ID: d.ToolCallID, Content: m.Text()}
				}
			}
		}
		return llms.GenericChatMessage{Role: session.RoleCustom, Name: m.CustomType, Content: m.Text()}
	}
	// bashExecution, branchSummary, compactionSummary and roles of
	// newer agents: Text renders each.
	return llms.GenericChatMessage{Role: m.Role, Content: m.Text()}
}

func fromAssistant(m *session.Message) llms.AIChatMessage {
	var out llms.AIChatMessage
	var texts, thoughts []string
	for _, b := range m.Content {
		switch b.Type {
		case session.BlockText:
			texts = append(texts, b.Text)
		case session.BlockThinking:
			if !b.Redacted {
				thoughts = append(thoughts, b.Thinking)
			}
		case session.BlockToolCall:
			out.ToolCalls = append(out.ToolCalls, fromToolCall(b))
		}
	}
	out.Content = strings.Join(texts, "\n")
	out.ReasoningContent = strings.Join(thoughts, "\n")
	if raw, ok := m.Extra.Get(ExtraKey); ok {
		var x assistantExtra
		if json.Unmarshal(raw, &x) == nil {
			out.FunctionCall = x.FunctionCall
		}
	}
	return out
}

func fromToolCall(b session.Block) llms.ToolCall {
	if raw, ok := b.Extra.Get(ExtraKey); ok {
		var tc keptCall
		if json.Unmarshal(raw, &tc) == nil {
			return llms.ToolCall(tc)
		}
	}
	args := string(b.Arguments)
	if args == "" {
		args = "{}"
	}
	return llms.ToolCall{ID: b.ID, Type: "function", FunctionCall: &llms.FunctionCall{Name: b.Name, Arguments: args}}
}

// clone returns a copy of m that shares nothing mutable with it.
func clone(m llms.ChatMessage) llms.ChatMessage {
	ai, ok := m.(llms.AIChatMessage)
	if !ok || (ai.ToolCalls == nil && ai.FunctionCall == nil) {
		return m // the other types hold strings only
	}
	if ai.FunctionCall != nil {
		fc := *ai.FunctionCall
		ai.FunctionCall = &fc
	}
	if ai.ToolCalls != nil {
		ai.ToolCalls = slices.Clone(ai.ToolCalls)
		for i, tc := range ai.ToolCalls {
			if tc.FunctionCall != nil {
				fc := *tc.FunctionCall
				ai.ToolCalls[i].FunctionCall = &fc
			}
		}
	}
	return ai
}
