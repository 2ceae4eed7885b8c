package wire

import (
	"strconv"

	session "github.com/agentsession/session"
)

// RoleSystem is the role of a system message: the session package keeps
// messages of any role, and "system" is what agents that write one call
// it.
const RoleSystem = "system"

// Incomplete reports whether m is an assistant message that ended in an
// error or was aborted. Such a reply is not sent back to a model, as pi's
// own converter does not: it may be cut anywhere (text with nothing after
// it, thinking without the reply, calls never run), and the retry that
// usually follows it is the reply that counts.
func Incomplete(m *session.Message) bool {
	return m.Role == session.RoleAssistant && (m.StopReason == session.StopError || m.StopReason == session.StopAborted)
}

// Calls follows tool calls through one conversion. It gives each call the
// id to send (normalized, and made unique when an earlier call of the
// request was sent with the same id: APIs reject a repeated id, and some
// providers reuse ids such as "call_0" on every turn), gives each result
// the id its call was sent with, and knows which calls of the latest
// assistant message are still unanswered.
type Calls struct {
	max  int
	sent map[string]struct{} // ids sent so far
	cur  []call              // the calls of the latest assistant message
}

type call struct {
	id, sent, name string
	answered       bool
}

// Call is a tool call as sent.
type Call struct {
	ID   string // as sent
	Name string
}

// NewCalls returns a tracker for ids of at most max bytes; hint is about
// how many calls the conversion will see.
func NewCalls(max, hint int) *Calls {
	return &Calls{max: max, sent: make(map[string]struct{}, hint)}
}

// Turn starts a new assistant message: calls still open are forgotten
// (the caller answers them first, see Open).
func (c *Calls) Turn() { c.cur = c.cur[:0] }

// Call records a call of the current assistant message and returns the
// id to send.
func (c *Calls) Call(id, name string) string { return c.CallAs(id, id, name) }

// CallAs is Call for a call whose id is sent as base (a part of id, such
// as the call_id of the "call_id|item_id" ids of OpenAI's Responses API),
// normalized and made unique as Call does; results still name the call
// by id.
func (c *Calls) CallAs(id, base, name string) string {
	out := Normalize(base, c.max)
	for k := 2; ; k++ {
		if _, dup := c.sent[out]; !dup {
			break
		}
		out = Normalize(base+"_"+strconv.Itoa(k), c.max)
	}
	c.sent[out] = struct{}{}
	c.cur = append(c.cur, call{id: id, sent: out, name: name})
	return out
}

// Result returns the id to send for a result of the call id, and marks
// that call answered. ok is false when id answers no call of the latest
// assistant message still awaiting its result (a call of a reply that is
// not sent, a call answered already, or no call at all): the APIs reject
// such a result, so the caller leaves it out.
func (c *Calls) Result(id string) (sent string, ok bool) {
	for k := range c.cur {
		if cl := &c.cur[k]; cl.id == id && !cl.answered {
			cl.answered = true
			return cl.sent, true
		}
	}
	return "", false
}

// Open calls fn for each call of the latest assistant message not
// answered yet, and forgets them: fn sends a result for each.
func (c *Calls) Open(fn func(Call)) {
	for _, cl := range c.cur {
		if !cl.answered {
			fn(Call{cl.sent, cl.name})
		}
	}
	c.cur = c.cur[:0]
}
