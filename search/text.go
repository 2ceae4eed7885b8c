package search

import (
	"encoding/json"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	session "github.com/agentsession/session"
)

// doc is the searchable text of one entry.
type doc struct {
	entry, role  string
	time         time.Time
	prompt, body string
}

// entryDoc returns the text an entry contributes to the index, and
// false for an entry with none (labels, model changes, custom state,
// messages without text). A user message's text goes to the prompt
// column; all other text (assistant text, thinking, tool calls' names
// and the strings of their arguments, tool results, bash executions,
// custom messages, compaction and branch summaries) to the body. At most
// max bytes are kept of each entry. An entry of a kind with text that
// cannot be decoded is an error.
func entryDoc(e session.Entry, max int) (doc, bool, error) {
	d := doc{entry: e.ID(), time: e.Time()}
	b := capped{max: max}
	switch e.Type() {
	case session.TypeMessage:
		m, err := e.Message()
		if err != nil {
			return d, false, err
		}
		d.role, d.time = m.Role, timeOf(e, m)
		messageText(&b, m)
		if m.Role == session.RoleUser {
			d.prompt = b.String()
			return d, d.prompt != "", nil
		}
	case session.TypeCompaction:
		var p session.Compaction
		if err := e.Decode(&p); err != nil {
			return d, false, err
		}
		d.role = session.RoleCompactionSummary
		b.add(p.Summary)
	case session.TypeBranchSummary:
		var p session.BranchSummary
		if err := e.Decode(&p); err != nil {
			return d, false, err
		}
		d.role = session.RoleBranchSummary
		b.add(p.Summary)
	case session.TypeCustomMessage:
		var p struct {
			Content json.RawMessage `json:"content"`
		}
		if err := e.Decode(&p); err != nil {
			return d, false, err
		}
		d.role = session.RoleCustom
		var s string
		var blocks []session.Block
		if json.Unmarshal(p.Content, &s) == nil {
			b.add(s)
		} else if json.Unmarshal(p.Content, &blocks) == nil {
			blocksText(&b, blocks)
		}
	default:
		return d, false, nil
	}
	d.body = b.String()
	return d, d.body != "", nil
}

// messageText adds the text of a message.
func messageText(b *capped, m *session.Message) {
	switch m.Role {
	case session.RoleBashExecution, session.RoleBranchSummary, session.RoleCompactionSummary:
		b.add(m.Text())
		return
	}
	blocksText(b, m.Content)
	if m.ErrorMessage != "" {
		b.add(m.ErrorMessage)
	}
}

// blocksText adds the text, thinking and tool calls of content blocks.
func blocksText(b *capped, blocks []session.Block) {
	for _, bl := range blocks {
		switch bl.Type {
		case session.BlockText:
			b.add(bl.Text)
		case session.BlockThinking:
			b.add(bl.Thinking)
		case session.BlockToolCall:
			b.add(bl.Name)
			argStrings(b, bl.Arguments)
		}
	}
}

// argStrings adds the strings of a tool call's JSON arguments (their
// values, not the keys), or the arguments as written when they are not
// JSON.
func argStrings(b *capped, args json.RawMessage) {
	if len(args) == 0 {
		return
	}
	var v any
	if json.Unmarshal(args, &v) != nil {
		b.add(string(args))
		return
	}
	var walk func(any)
	walk = func(v any) {
		switch v := v.(type) {
		case string:
			b.add(v)
		case []any:
			for _, x := range v {
				walk(x)
			}
		case map[string]any:
			keys := make([]string, 0, len(v))
			for k := range v {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				walk(v[k])
			}
		}
	}
	walk(v)
}

// capped collects text, one piece a line, up to max bytes (cut at a
// character boundary).
type capped struct {
	sb  strings.Builder
	max int
}

func (c *capped) add(s string) {
	s = strings.TrimSpace(s)
	if s == "" || c.sb.Len() >= c.max {
		return
	}
	if c.sb.Len() > 0 {
		c.sb.WriteByte('\n')
	}
	if room := c.max - c.sb.Len(); len(s) > room {
		for room > 0 && !utf8.RuneStart(s[room]) {
			room--
		}
		s = s[:room]
	}
	c.sb.WriteString(s)
}

func (c *capped) String() string { return c.sb.String() }
