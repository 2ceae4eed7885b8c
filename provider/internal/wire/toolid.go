// Package wire holds what the provider packages share to put a session's
// messages on the wire: tool call ids made acceptable to APIs that
// restrict them (without breaking the pairing of a call with its result),
// the check on tool arguments, JSON encoding without HTML escapes, and
// the walk over a conversation whose rules both APIs share (Walk); the
// appenders the requests' AppendJSON methods write with (AppendString,
// AppendRaw, Key and the member writers, MarshalError), which give
// encoding/json's bytes; and, the other way, what turns a response into
// a message (Reply, Cost, Arguments, and the kinds of error,
// ErrTruncated and ErrMalformed).
//
// It imports the session package and internal/jsonx (its string
// appender and validator); the provider packages import it.
package wire

import (
	"hash/fnv"
	"strconv"
)

// Normalize returns id unchanged when it is 1 to max bytes of
// [A-Za-z0-9_-]. Otherwise it returns the id with every other byte turned
// into '_', cut to leave room for '_' and a hash of the whole original id.
// The result is deterministic, so a call and its result, normalized
// separately, still match; the hash keeps ids that differ only in the
// replaced or cut part apart.
func Normalize(id string, max int) string {
	if valid(id, max) {
		return id
	}
	h := fnv.New64a()
	h.Write([]byte(id))
	sum := strconv.FormatUint(h.Sum64(), 36) // at most 13 bytes
	keep := max - len(sum) - 1
	if keep < 0 {
		keep = 0
	}
	if len(id) > keep {
		id = id[:keep]
	}
	b := make([]byte, 0, len(id)+1+len(sum))
	for i := 0; i < len(id); i++ {
		if allowed(id[i]) {
			b = append(b, id[i])
		} else {
			b = append(b, '_')
		}
	}
	b = append(b, '_')
	b = append(b, sum...)
	if len(b) > max {
		b = b[len(b)-max:]
	}
	return string(b)
}

func valid(id string, max int) bool {
	if id == "" || len(id) > max {
		return false
	}
	for i := 0; i < len(id); i++ {
		if !allowed(id[i]) {
			return false
		}
	}
	return true
}

func allowed(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-'
}
