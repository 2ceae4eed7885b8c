package session

import (
	"encoding/json"
	"runtime"
	"sync"
)

// The copy rule: what Messages, Context and ContextAt return belongs to
// the caller. The session keeps its messages to itself and hands out deep
// copies, so a host may edit, append to or keep what it got without
// changing the session (a change goes in through an append), and no later
// answer carries its edits.
//
// A copy is made once per message and handed out again by later calls
// while it still equals the session's message (msgreuse.go checks it, in
// a read of the copy without allocating; an edited copy is replaced), so a
// turn of an agent loop pays for the copies of its new messages, not of
// the whole history. What is copied shares a handful of allocations per
// call, one per kind of thing copied (messages, blocks, usages, fields,
// bytes), sized by a first pass. Strings are immutable and stay shared.
// copyMessages returns deep copies of msgs in a slice without spare
// capacity.
func copyMessages(msgs []*Message) []*Message {
	if msgs == nil {
		return nil
	}
	out := make([]*Message, len(msgs))
	workers := min(runtime.GOMAXPROCS(0), 4, len(msgs)/parallelCopyMessages)
	if workers < 2 {
		copyInto(out, msgs)
		return out
	}
	// A long list (a resume's first context) is copied on several cores,
	// a part each, with slabs of its own.
	var wg sync.WaitGroup
	per := (len(msgs) + workers - 1) / workers
	for lo := 0; lo < len(msgs); lo += per {
		hi := min(lo+per, len(msgs))
		wg.Go(func() { copyInto(out[lo:hi], msgs[lo:hi]) })
	}
	wg.Wait()
	return out
}

// parallelCopyMessages is the number of messages from which copyMessages
// uses a second core, two from twice as many.
const parallelCopyMessages = 1024

// copyInto copies msgs into out, of the same length.
func copyInto(out, msgs []*Message) {
	var c copier
	for _, m := range msgs {
		c.count(m)
	}
	c.alloc(len(msgs))
	for i, m := range msgs {
		out[i] = c.message(m)
	}
}

// copier hands out the pieces of the copies from its slabs.
type copier struct {
	nBlocks, nUsages, nFields, nInts, nBytes int

	msgs   []Message
	blocks []Block
	usages []Usage
	fields []Field
	ints   []int
	bytes  []byte
}

func (c *copier) count(m *Message) {
	c.nBlocks += len(m.Content)
	c.countFields(m.Extra)
	c.nBytes += len(m.Details)
	for i := range m.Content {
		c.nBytes += len(m.Content[i].Arguments) + len(m.Content[i].Citations)
		c.countFields(m.Content[i].Extra)
	}
	if m.Usage != nil {
		c.nUsages++
		for _, f := range m.Usage.extras() {
			c.countFields(f)
		}
	}
	if m.ExitCode != nil {
		c.nInts++
	}
}

func (c *copier) countFields(f Fields) {
	c.nFields += len(f)
	for _, x := range f {
		c.nBytes += len(x.Value)
	}
}

func (c *copier) alloc(n int) {
	c.msgs = make([]Message, n)
	c.blocks = make([]Block, c.nBlocks)
	c.usages = make([]Usage, c.nUsages)
	c.fields = make([]Field, c.nFields)
	c.ints = make([]int, c.nInts)
	c.bytes = make([]byte, c.nBytes)
}

func (c *copier) message(m *Message) *Message {
	cp := &c.msgs[0]
	c.msgs = c.msgs[1:]
	*cp = *m
	if m.Content != nil {
		cp.Content = c.blocks[:len(m.Content):len(m.Content)]
		c.blocks = c.blocks[len(m.Content):]
		for i := range m.Content {
			b := &cp.Content[i]
			*b = m.Content[i]
			b.Arguments = c.raw(b.Arguments)
			b.Citations = c.raw(b.Citations)
			b.Extra = c.copyFields(b.Extra)
		}
	}
	cp.Details = c.raw(m.Details)
	cp.Extra = c.copyFields(m.Extra)
	if m.Usage != nil {
		u := &c.usages[0]
		c.usages = c.usages[1:]
		*u = *m.Usage
		u.Extra = c.copyFields(u.Extra)
		u.Cost.Extra = c.copyFields(u.Cost.Extra)
		u.CacheTTL.Extra = c.copyFields(u.CacheTTL.Extra)
		u.Server.Extra = c.copyFields(u.Server.Extra)
		cp.Usage = u
	}
	if m.ExitCode != nil {
		v := &c.ints[0]
		c.ints = c.ints[1:]
		*v = *m.ExitCode
		cp.ExitCode = v
	}
	return cp
}

func (c *copier) copyFields(f Fields) Fields {
	if f == nil {
		return nil
	}
	out := Fields(c.fields[:len(f):len(f)])
	c.fields = c.fields[len(f):]
	for i, x := range f {
		out[i] = Field{Key: x.Key, Value: c.raw(x.Value)}
	}
	return out
}

// raw copies b into the byte slab, without spare capacity, so that an
// append to one copy never writes into the next.
func (c *copier) raw(b json.RawMessage) json.RawMessage {
	if b == nil {
		return nil
	}
	out := json.RawMessage(c.bytes[:len(b):len(b)])
	c.bytes = c.bytes[len(b):]
	copy(out, b)
	return out
}
