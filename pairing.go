package session

// SetStrictPairing says whether Append and SaveTurn refuse a tool result
// that answers no pending call (ErrUnpairedToolResult), as they do by
// default. With strict false they store it: histories other frameworks
// keep have such results (the result of a call made before a turn was
// resumed, after the user spoke again; a result whose call was never
// stored), and importing them should lose nothing.
//
// What is stored is unchanged either way, and so is the model's view:
// Messages, Context and ForModel leave an orphaned result out (Context
// lists it in Orphans), and Verify reports it (FindingOrphanResult). The
// setting belongs to this handle, is not written to the store, and lasts
// until changed; other handles on the session stay strict.
func (s *Session) SetStrictPairing(strict bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lenientPairing = !strict
}
