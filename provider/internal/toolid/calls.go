package toolid

import "strconv"

// Calls follows tool calls through one conversion. It gives each call the
// id to send (normalized, and made unique when an earlier call of the
// request was sent with the same id: APIs reject a repeated id, and some
// providers reuse ids such as "call_0" on every turn), gives each result
// the id its call was sent with, and knows which calls of the latest
// assistant message are still unanswered.
type Calls struct {
	max  int
	sent map[string]bool   // ids sent so far
	cur  map[string]string // id in the session -> id sent, for the latest assistant message
	open []Call            // calls of the latest assistant message not answered yet
}

// Call is a tool call as sent.
type Call struct {
	ID   string // as sent
	Name string
}

// NewCalls returns a tracker for ids of at most max bytes.
func NewCalls(max int) *Calls {
	return &Calls{max: max, sent: map[string]bool{}, cur: map[string]string{}}
}

// Turn starts a new assistant message: calls still open are forgotten
// (the caller answers them first, see Open).
func (c *Calls) Turn() {
	clear(c.cur)
	c.open = c.open[:0]
}

// Call records a call of the current assistant message and returns the
// id to send.
func (c *Calls) Call(id, name string) string {
	out := Normalize(id, c.max)
	for k := 2; c.sent[out]; k++ {
		out = Normalize(id+"_"+strconv.Itoa(k), c.max)
	}
	c.sent[out] = true
	c.cur[id] = out
	c.open = append(c.open, Call{out, name})
	return out
}

// Result returns the id to send for a result of the call id, and marks
// that call answered.
func (c *Calls) Result(id string) string {
	out, ok := c.cur[id]
	if !ok {
		return Normalize(id, c.max)
	}
	for k := range c.open {
		if c.open[k].ID == out {
			c.open = append(c.open[:k], c.open[k+1:]...)
			break
		}
	}
	return out
}

// Open returns the calls of the latest assistant message not answered
// yet, and forgets them: the caller sends a result for each.
func (c *Calls) Open() []Call {
	open := c.open
	c.open = nil
	return open
}
