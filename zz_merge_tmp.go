package session

// SessionName is the old name of SessionInfoEntry, kept only until the
// FileStore split lands (it is renamed there too). Not for release.
type SessionName = SessionInfoEntry
