package session

import (
	"reflect"
	"slices"
	"sync"

	"github.com/deepnoodle-ai/dive/llm"

	as "github.com/agentsession/session"
)

// pieceCache keeps what each message of the session's model view became
// in Dive's view (a piece), so that Messages converts each entry once:
// a turn converts its new messages, and a call with nothing new converts
// nothing. It is keyed by the session's own messages (SharedMessages),
// which the session never changes: orig[i] is the message at position i
// of the last list, pcs[i] its piece. A list that is the last one with
// messages appended reuses by position; one that changed otherwise (a
// branch, a compaction, a reload) finds its unchanged messages by
// identity.
//
// What Messages returns is built anew from the pieces on each call, so
// it stays the caller's, as Dive's own stores make it (they hand out
// copies): new messages, new content lists, and a new copy of each
// content block (its struct; a tool call's input bytes too). What a
// block points to besides (a text's citations, a tool result's decoded
// content, a document's source) is shared with the cache: Dive and its
// providers set a block's fields (cache control) and replace or append
// blocks, and never edit those in place.
type pieceCache struct {
	mu   sync.Mutex
	orig []*as.Message
	pcs  []*piece
}

// pieces returns the pieces of msgs, converting with convert only the
// messages the last call did not have.
func (c *pieceCache) pieces(msgs []*as.Message, convert func(*as.Message) (*piece, error)) ([]*piece, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]*piece, len(msgs))
	var moved map[*as.Message]*piece
	for i, m := range msgs {
		if i < len(c.orig) && c.orig[i] == m {
			out[i] = c.pcs[i]
			continue
		}
		if moved == nil {
			moved = make(map[*as.Message]*piece, len(c.orig))
			for k := i; k < len(c.orig); k++ {
				moved[c.orig[k]] = c.pcs[k]
			}
		}
		if p, ok := moved[m]; ok {
			out[i] = p
			continue
		}
		p, err := convert(m)
		if err != nil {
			return nil, err
		}
		out[i] = p
	}
	if n := len(msgs); n < len(c.orig) {
		clear(c.orig[n:]) // let go of what the list no longer holds
		clear(c.pcs[n:])
	}
	c.orig = append(c.orig[:0], msgs...)
	c.pcs = append(c.pcs[:0], out...)
	return out, nil
}

// copyMessage returns a copy of m the caller owns (see pieceCache).
func copyMessage(m *llm.Message) *llm.Message {
	if m == nil {
		return nil
	}
	cp := *m
	cp.Content = copyContents(m.Content)
	return &cp
}

// copyContents returns a new list of copies of the blocks of cs.
func copyContents(cs []llm.Content) []llm.Content {
	if cs == nil {
		return nil
	}
	return appendContents(make([]llm.Content, 0, len(cs)), cs)
}

// appendContents appends copies of the blocks of cs to dst.
func appendContents(dst, cs []llm.Content) []llm.Content {
	for _, c := range cs {
		dst = append(dst, copyContent(c))
	}
	return dst
}

// copyContent returns a copy of a content block: of its struct, and of
// a tool call's input.
func copyContent(c llm.Content) llm.Content {
	switch c := c.(type) {
	case *llm.TextContent:
		cp := *c
		return &cp
	case *llm.ToolUseContent:
		cp := *c
		cp.Input = slices.Clip(slices.Clone(c.Input))
		return &cp
	case *llm.ToolResultContent:
		cp := *c
		return &cp
	case *llm.ThinkingContent:
		cp := *c
		return &cp
	}
	v := reflect.ValueOf(c)
	if v.Kind() != reflect.Pointer || v.IsNil() || v.Elem().Kind() != reflect.Struct {
		return c
	}
	cp := reflect.New(v.Elem().Type())
	cp.Elem().Set(v.Elem())
	if out, ok := cp.Interface().(llm.Content); ok {
		return out
	}
	return c
}
