package export

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	session "github.com/agentsession/session"
	"github.com/agentsession/session/internal/jsonx"
)

// ErrNotEnvelope is returned by Read for input that is not an envelope
// of this package: not a JSON object, or without "format":
// "agentsession.export" (a session log, another tool's export).
var ErrNotEnvelope = errors.New("export: not an agentsession export envelope")

// MaxReadBytes bounds the size of an envelope Read accepts, so that a
// huge or hostile file cannot exhaust memory: 1 GiB. ReadLimited takes
// another bound.
var MaxReadBytes int64 = 1 << 30

// ReadError is an envelope that could not be read: where (a member, an
// entry's index) and why.
type ReadError struct {
	Where string // "header", "entries[12]", ...
	Err   error
}

func (e *ReadError) Error() string { return fmt.Sprintf("export: %s: %v", e.Where, e.Err) }
func (e *ReadError) Unwrap() error { return e.Err }

// Read reads an envelope written by JSON, of at most MaxReadBytes.
func Read(r io.Reader) (*Envelope, error) { return ReadLimited(r, MaxReadBytes) }

// ReadLimited reads an envelope of at most max bytes; a longer input
// fails with an error wrapping session.ErrTooLarge. It checks the format
// and version first (ErrNotEnvelope, ErrNewerVersion), then reads the
// entries as session.ParseEntry does, each keeping its bytes.
func ReadLimited(r io.Reader, max int64) (*Envelope, error) {
	data, err := io.ReadAll(io.LimitReader(r, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > max {
		return nil, fmt.Errorf("export: envelope over %d bytes: %w", max, session.ErrTooLarge)
	}
	return Decode(data)
}

// Decode reads an envelope from data (see ReadLimited). It reads data in
// one pass with a validating cursor, the entries as views of it that
// session.ParseEntry copies.
func Decode(data []byte) (*Envelope, error) {
	var c jsonx.Cursor
	c.Reset(data)
	ms, ok := c.Object()
	if !ok {
		return nil, fmt.Errorf("%w: not a JSON object", ErrNotEnvelope)
	}
	members := map[string][]byte{}
	for {
		kb, esc, more := ms.Next()
		if !more {
			break
		}
		k := string(kb)
		if esc {
			k = ms.Key()
		}
		members[k] = c.Skip() // the last one wins, as in JSON.parse
	}
	if err := c.Err(); err != nil {
		if f, ok := members["format"]; ok && string(f) == `"`+Format+`"` {
			return nil, &ReadError{Where: "envelope", Err: err} // damaged, truncated
		}
		return nil, fmt.Errorf("%w: %v", ErrNotEnvelope, err)
	}
	if !c.AtEnd() {
		return nil, fmt.Errorf("%w: data after the envelope", ErrNotEnvelope)
	}
	version, err := checkFormat(members)
	if err != nil {
		return nil, err
	}
	env := &Envelope{Format: Format, Version: version}
	for _, m := range []struct {
		key string
		v   any
	}{
		{"exported", &env.Exported}, {"leaf", &env.Leaf}, {"branch", &env.Branch}, {"tree", &env.Tree},
		{"blobs", &env.Blobs}, {"unresolvedBlobs", &env.UnresolvedBlobs}, {"withheldBlobs", &env.WithheldBlobs}, {"redacted", &env.Redacted},
	} {
		if raw, ok := members[m.key]; ok {
			if err := json.Unmarshal(raw, m.v); err != nil {
				return nil, &ReadError{Where: m.key, Err: err}
			}
		}
	}
	raw, ok := members["header"]
	if !ok || string(raw) == "null" {
		return nil, &ReadError{Where: "header", Err: errors.New("missing")}
	}
	if err := json.Unmarshal(raw, &env.Header); err != nil {
		return nil, &ReadError{Where: "header", Err: err}
	}
	if err := session.ValidateID(env.Header.ID); err != nil {
		return nil, &ReadError{Where: "header", Err: err}
	}
	if env.Entries, err = readEntries(members["entries"]); err != nil {
		return nil, err
	}
	for ref, b := range env.Blobs {
		if got := session.BlobRef(b); got != ref {
			return nil, &ReadError{Where: "blobs", Err: fmt.Errorf("%s holds data of %s: %w", short(ref), short(got), session.ErrCorrupt)}
		}
	}
	return env, nil
}

// checkFormat returns the envelope's version, after checking that it is
// an envelope of a version this package reads.
func checkFormat(members map[string][]byte) (int, error) {
	raw, ok := members["format"]
	if !ok {
		return 0, fmt.Errorf(`%w: no "format" member (a session log or another tool's export?)`, ErrNotEnvelope)
	}
	var format string
	if err := json.Unmarshal(raw, &format); err != nil || format != Format {
		return 0, fmt.Errorf("%w: format %s, want %q", ErrNotEnvelope, raw, Format)
	}
	raw, ok = members["version"]
	if !ok {
		return 0, fmt.Errorf(`%w: no "version" member`, ErrNotEnvelope)
	}
	var version int
	if err := json.Unmarshal(raw, &version); err != nil {
		return 0, &ReadError{Where: "version", Err: fmt.Errorf("not an integer: %s", raw)}
	}
	if version > Version {
		return 0, fmt.Errorf("%w: version %d, this package reads up to %d", ErrNewerVersion, version, Version)
	}
	if version < 1 {
		return 0, &ReadError{Where: "version", Err: fmt.Errorf("version %d", version)}
	}
	return version, nil
}

// readEntries parses the "entries" array (absent or null: none).
func readEntries(raw []byte) ([]session.Entry, error) {
	if raw == nil || string(raw) == "null" {
		return []session.Entry{}, nil
	}
	var c jsonx.Cursor
	c.Reset(raw)
	els, ok := c.Array()
	if !ok {
		return nil, &ReadError{Where: "entries", Err: errors.New("not an array")}
	}
	entries := []session.Entry{}
	for els.Next() {
		v := c.Skip()
		if v == nil {
			break
		}
		e, err := session.ParseEntry(v)
		if err != nil {
			return nil, &ReadError{Where: fmt.Sprintf("entries[%d]", len(entries)), Err: err}
		}
		entries = append(entries, e)
	}
	if err := c.Err(); err != nil {
		return nil, &ReadError{Where: "entries", Err: err}
	}
	return entries, nil
}

// short cuts a blob reference for messages.
func short(ref string) string {
	if s, ok := strings.CutPrefix(ref, session.BlobPrefix); ok && len(s) > 12 {
		return session.BlobPrefix + s[:12] + "…"
	}
	return ref
}
