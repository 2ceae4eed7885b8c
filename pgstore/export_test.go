package pgstore

// GroupStats is what the group commit of s did: the batches of two
// appends or more it sent, the appends in them, the batches that failed
// as a whole (their members then made alone), and the members answered
// "busy" (made alone too).
type GroupStats struct{ Batches, Batched, Failed, Busy int64 }

// Grouped returns the GroupStats of s.
func Grouped(s *Store) GroupStats {
	g := &s.appends
	return GroupStats{g.batches.Load(), g.batched.Load(), g.failed.Load(), g.busy.Load()}
}

// HoldAppends makes s behave as if an append were in flight until
// release is called: the appends made meanwhile wait, and go together
// when it is (the tests use it to make batches of known members). It
// reports false, and holds nothing, if something is in flight already.
func HoldAppends(s *Store) (release func(), ok bool) {
	g := &s.appends
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.flying > 0 {
		return nil, false
	}
	n := g.max
	g.flying = n
	return func() {
		for range n {
			s.landed()
		}
	}, true
}

// QueuedAppends returns how many appends of s wait for a batch.
func QueuedAppends(s *Store) int {
	g := &s.appends
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.queue)
}

// WaitFills waits for the fills of places s runs in the background.
func WaitFills(s *Store) { s.fill.wg.Wait() }

// HoldFill makes the next fill of places on s wait, once it has read
// its session, until release is called; reached is closed when it does.
func HoldFill(s *Store) (reached <-chan struct{}, release func()) {
	r, gate := make(chan struct{}), make(chan struct{})
	s.fill.mu.Lock()
	s.fill.hold = func() {
		close(r)
		<-gate
	}
	s.fill.mu.Unlock()
	return r, func() { close(gate) }
}
