package session

import "fmt"

// Truncation reports the strings a FileStore cut in one entry it wrote
// (FileStoreOptions.MaxStringChars, OnTruncate).
type Truncation struct {
	Session string
	EntryID string
	// Strings is how many strings of the entry were cut; Dropped, how
	// many UTF-16 code units of them were left out (the notice that ends
	// each cut string not counted).
	Strings int
	Dropped int
}

// TruncationError is the error of a write that would have cut strings,
// with FileStoreOptions.RefuseTruncation. It wraps ErrTooLarge.
type TruncationError struct {
	Truncation
	Limit int // the limit, in UTF-16 code units
}

func (e *TruncationError) Error() string {
	return fmt.Sprintf("session: session %s, entry %s: %d string(s) over the store's limit of %d characters, which cutting would drop %d characters of; the store refuses to cut them (RefuseTruncation)",
		e.Session, e.EntryID, e.Strings, e.Limit, e.Dropped)
}

func (e *TruncationError) Unwrap() error { return ErrTooLarge }
