package export

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	session "github.com/agentsession/session"
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

// Decode reads an envelope from data (see ReadLimited).
func Decode(data []byte) (*Envelope, error) {
	var probe struct {
		Format  *string          `json:"format"`
		Version *json.RawMessage `json:"version"`
	}
	trimmed := bytes.TrimLeft(data, " \t\r\n")
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return nil, fmt.Errorf("%w: not a JSON object", ErrNotEnvelope)
	}
	if err := json.Unmarshal(data, &probe); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNotEnvelope, err)
	}
	switch {
	case probe.Format == nil:
		return nil, fmt.Errorf(`%w: no "format" member (a session log or another tool's export?)`, ErrNotEnvelope)
	case *probe.Format != Format:
		return nil, fmt.Errorf("%w: format %q, want %q", ErrNotEnvelope, *probe.Format, Format)
	case probe.Version == nil:
		return nil, fmt.Errorf(`%w: no "version" member`, ErrNotEnvelope)
	}
	var version int
	if err := json.Unmarshal(*probe.Version, &version); err != nil {
		return nil, &ReadError{Where: "version", Err: fmt.Errorf("not an integer: %s", *probe.Version)}
	}
	if version > Version {
		return nil, fmt.Errorf("%w: version %d, this package reads up to %d", ErrNewerVersion, version, Version)
	}
	if version < 1 {
		return nil, &ReadError{Where: "version", Err: fmt.Errorf("version %d", version)}
	}
	var raw struct {
		Exported        json.RawMessage   `json:"exported"`
		Header          json.RawMessage   `json:"header"`
		Leaf            string            `json:"leaf"`
		Branch          string            `json:"branch"`
		Entries         []json.RawMessage `json:"entries"`
		Tree            Tree              `json:"tree"`
		Blobs           map[string][]byte `json:"blobs"`
		UnresolvedBlobs []string          `json:"unresolvedBlobs"`
		Redacted        json.RawMessage   `json:"redacted"`
	}
	if err := json.Unmarshal(data, &raw); err != nil {
		return nil, &ReadError{Where: "envelope", Err: err}
	}
	env := &Envelope{Format: Format, Version: version, Leaf: raw.Leaf, Branch: raw.Branch, Tree: raw.Tree,
		Blobs: raw.Blobs, UnresolvedBlobs: raw.UnresolvedBlobs}
	if len(raw.Exported) > 0 && string(raw.Exported) != "null" {
		if err := json.Unmarshal(raw.Exported, &env.Exported); err != nil {
			return nil, &ReadError{Where: "exported", Err: err}
		}
	}
	if len(raw.Header) == 0 || string(raw.Header) == "null" {
		return nil, &ReadError{Where: "header", Err: errors.New("missing")}
	}
	if err := json.Unmarshal(raw.Header, &env.Header); err != nil {
		return nil, &ReadError{Where: "header", Err: err}
	}
	if err := session.ValidateID(env.Header.ID); err != nil {
		return nil, &ReadError{Where: "header", Err: err}
	}
	if len(raw.Redacted) > 0 && string(raw.Redacted) != "null" {
		if err := json.Unmarshal(raw.Redacted, &env.Redacted); err != nil {
			return nil, &ReadError{Where: "redacted", Err: err}
		}
	}
	env.Entries = make([]session.Entry, 0, len(raw.Entries))
	for i, v := range raw.Entries {
		e, err := session.ParseEntry(v)
		if err != nil {
			return nil, &ReadError{Where: fmt.Sprintf("entries[%d]", i), Err: err}
		}
		env.Entries = append(env.Entries, e)
		raw.Entries[i] = nil // let the copy go as the entries are read
	}
	for ref, b := range env.Blobs {
		if got := session.BlobRef(b); got != ref {
			return nil, &ReadError{Where: "blobs", Err: fmt.Errorf("%s holds data of %s: %w", short(ref), short(got), session.ErrCorrupt)}
		}
	}
	return env, nil
}

// short cuts a blob reference for messages.
func short(ref string) string {
	if s, ok := strings.CutPrefix(ref, session.BlobPrefix); ok && len(s) > 12 {
		return session.BlobPrefix + s[:12] + "…"
	}
	return ref
}
