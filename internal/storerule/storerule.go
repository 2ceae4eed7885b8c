// Package storerule holds the rules every store of this module applies
// alike, on plain values, so that the session package (MemoryStore,
// FileStore) and storekit (for pgstore and a host's stores) share one
// implementation: the checks of an append, and the order and paging of
// a listing. The errors wrap the sentinel the caller passes (the session
// package's ErrConflict), which this package cannot import.
package storerule

import (
	"cmp"
	"fmt"
	"time"

	"github.com/agentsession/session/internal/names"
)

// CheckEntries rejects an append of no usable entries: an entry that is
// the zero value (zero reports it), or an id repeated within the append
// (the error wraps conflict).
func CheckEntries[E any](conflict error, entries []E, zero func(E) bool, id func(E) string) error {
	// A turn is a few entries: compare them pairwise. A fork or an import
	// appends thousands: use a set.
	var seen map[string]struct{}
	if len(entries) > 16 {
		seen = make(map[string]struct{}, len(entries))
	}
	for i, e := range entries {
		if zero(e) {
			return fmt.Errorf("session: append of zero Entry at %d", i)
		}
		eid := id(e)
		dup := false
		if seen != nil {
			n := len(seen)
			seen[eid] = struct{}{} // one look-up: the set grows unless the id was there
			dup = len(seen) == n
		} else {
			for _, f := range entries[:i] {
				dup = dup || id(f) == eid
			}
		}
		if dup {
			return fmt.Errorf("%w: entry id %s appears twice in one append", conflict, eid)
		}
	}
	return nil
}

// CheckAppend applies an append's conditions (IfEmpty, IfLast) to a
// session whose last entry is last ("" for none); the error wraps
// conflict.
func CheckAppend(conflict error, ifEmpty bool, ifLast, last string) error {
	if ifEmpty && last != "" {
		return fmt.Errorf("%w: session is not empty (last entry %s)", conflict, last)
	}
	if ifLast != "" && ifLast != last {
		if last == "" {
			return fmt.Errorf("%w: expected last entry %s, session is empty", conflict, ifLast)
		}
		return fmt.Errorf("%w: expected last entry %s, found %s", conflict, ifLast, last)
	}
	return nil
}

// Compare orders listed sessions: most recently updated first, then by
// id, descending.
func Compare(aUpdated time.Time, aID string, bUpdated time.Time, bID string) int {
	if c := bUpdated.Compare(aUpdated); c != 0 {
		return c
	}
	return cmp.Compare(bID, aID)
}

// Page cuts the page after cursor ("" for the first) out of all, sorted
// by Compare on key: at most limit items, and the cursor of the next
// page ("" when this one is the last).
func Page[T any](all []T, key func(T) (time.Time, string), cursor string, limit int) (page []T, next string, err error) {
	start := 0
	if cursor != "" {
		t, id, err := names.ParseCursor(cursor)
		if err != nil {
			return nil, "", err
		}
		start = len(all)
		for i, x := range all {
			u, xid := key(x)
			if Compare(t, id, u, xid) < 0 {
				start = i
				break
			}
		}
	}
	end := min(start+limit, len(all))
	if end < len(all) && end > start {
		u, id := key(all[end-1])
		next = names.Cursor(u, id)
	}
	return all[start:end:end], next, nil
}
