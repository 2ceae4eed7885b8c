package session

// IsPartial reports whether s holds its current path alone (pathload.go).
func IsPartial(s *Session) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.part != nil
}
