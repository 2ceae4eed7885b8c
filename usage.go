package session

import (
	"context"
	"fmt"
)

// usageCache holds a session's usage totals once asked for, kept up to
// date by appends so that asking after each turn costs nothing.
type usageCache struct {
	total   Usage
	totalOK bool
	branch  Usage
	leaf    int32 // the leaf branch was summed for; -2 when not summed
}

// Usage returns the total usage of every assistant message the session
// holds, on every branch: what the whole conversation has cost. Messages
// that Prune removed are no longer counted.
//
// The first call reads the usage of every assistant message (decoding
// those a FileStore left undecoded); later calls are kept up to date by
// appends and cost nothing.
func (s *Session) Usage() Usage {
	s.mu.Lock()
	s.wholeNoCtx()
	defer s.mu.Unlock()
	if !s.usage.totalOK {
		var u Usage
		for i := range s.t.nodes {
			if s.t.nodes[i].flags&fShadowed == 0 {
				u = addUsage(u, s.t, int32(i))
			}
		}
		s.usage.total, s.usage.totalOK = u, true
	}
	return s.usage.total
}

// UsageAt returns the total usage of the assistant messages on the path
// from the root to entry id: UsageAt(LeafID()) is what the current branch
// has cost, compacted history included (the summarized turns were paid
// for), and is cached; "" gives zero usage. It fails with ErrNotFound for
// an unknown id.
func (s *Session) UsageAt(id string) (Usage, error) {
	if err := s.makeWhole(context.Background()); err != nil {
		return Usage{}, err
	}
	if s == nil {
		return Usage{}, ErrNilSession
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return Usage{}, ErrClosed
	}
	if id == "" {
		return Usage{}, nil
	}
	i, ok := s.t.lookup(id)
	if !ok {
		return Usage{}, fmt.Errorf("%w: entry %s", ErrNotFound, id)
	}
	if i != s.leaf {
		return s.pathUsage(i), nil
	}
	if s.usage.leaf != s.leaf {
		s.usage.branch, s.usage.leaf = s.pathUsage(s.leaf), s.leaf
	}
	return s.usage.branch, nil
}

func (s *Session) pathUsage(i int32) Usage {
	var u Usage
	for _, j := range s.t.pathTo(i) {
		u = addUsage(u, s.t, j)
	}
	return u
}

// noteUsage updates the cached totals for entries just added: added are
// their node indexes, from is the leaf before and to the leaf after.
func (s *Session) noteUsage(added []int32, from, to int32) {
	if s.usage.totalOK {
		for _, i := range added {
			s.usage.total = addUsage(s.usage.total, s.t, i)
		}
	}
	if s.usage.leaf == -2 || s.usage.leaf != from {
		s.usage.leaf = -2
		return
	}
	if from == to {
		return // added off the path: the branch total stands
	}
	// The branch total still holds if the new entries extend the path.
	prev := from
	for _, i := range added {
		if s.t.nodes[i].parent != prev {
			s.usage.leaf = -2
			return
		}
		s.usage.branch = addUsage(s.usage.branch, s.t, i)
		prev = i
		if i == to {
			s.usage.leaf = to
			return
		}
	}
	s.usage.leaf = -2
}

// addUsage adds the usage of entry i, if it is an assistant message that
// has one. A message not decoded yet is decoded without being kept.
func addUsage(u Usage, t *tree, i int32) Usage {
	n := &t.nodes[i]
	if n.e.kind == kindCustom {
		if tu, ok := turnUsage(n.e); ok {
			return u.Add(*tu) // a turn's usage no message held
		}
		return u
	}
	if n.e.kind != kindMessage {
		return u
	}
	m := n.msg
	if n.state != msgReady {
		if m = n.e.readMessage(); m == nil {
			var err error
			if m, err = n.e.message(true); err != nil {
				return u
			}
		}
	}
	if m.Role != RoleAssistant || m.Usage == nil {
		return u
	}
	return u.Add(*m.Usage)
}
