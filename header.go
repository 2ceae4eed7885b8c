package session

import (
	"bytes"
	"errors"
	"fmt"
	"time"

	"github.com/agentsession/session/internal/jsonx"
)

// The header line of a session log: Header, read and written byte for
// byte when unchanged.

// Header is the first line of a session log.
//
// A Header read from a log remembers that line; as long as its fields are
// not changed it is written back byte for byte.
type Header struct {
	Version       int
	ID            string
	Timestamp     time.Time // creation time
	Cwd           string    // working directory the session belongs to
	Title         string    // oh-my-pi's header title; see Session.Title
	ParentSession string    // the session this one was forked from, if any
	Extra         Fields    // other members, verbatim

	raw  []byte      // the line this header was read from
	orig *headerCore // its decoded fields, to tell whether raw still holds
}

type headerCore struct {
	version                int
	id, cwd, title, parent string
	ts                     time.Time
	extra                  Fields
}

func (h *Header) core() headerCore {
	return headerCore{version: h.Version, id: h.ID, cwd: h.Cwd, title: h.Title, parent: h.ParentSession, ts: h.Timestamp}
}

// unchanged reports whether h still holds exactly what was read into it.
func (h *Header) unchanged() bool {
	if h.raw == nil || h.orig == nil {
		return false
	}
	c := h.core()
	o := h.orig
	return c.version == o.version && c.id == o.id && c.cwd == o.cwd && c.title == o.title &&
		c.parent == o.parent && c.ts.Equal(o.ts) && h.Extra.equal(o.extra)
}

// Clone returns a deep copy of h.
func (h Header) Clone() Header {
	h.Extra = h.Extra.Clone()
	return h
}

// MarshalJSON encodes the header line (without newline).
func (h Header) MarshalJSON() ([]byte, error) { return h.appendJSON(nil) }

func (h *Header) appendJSON(dst []byte) ([]byte, error) {
	if h.unchanged() {
		return append(dst, h.raw...), nil
	}
	dst = append(dst, `{"type":"session","version":`...)
	v := h.Version
	if v == 0 {
		v = CurrentVersion
	}
	dst = appendInt(dst, int64(v))
	dst = append(dst, `,"id":`...)
	dst = jsonx.AppendString(dst, h.ID)
	if !h.Timestamp.IsZero() {
		dst = append(dst, `,"timestamp":`...)
		dst = jsonx.AppendString(dst, formatTime(h.Timestamp))
	}
	dst = append(dst, `,"cwd":`...)
	dst = jsonx.AppendString(dst, h.Cwd)
	if h.Title != "" {
		dst = append(dst, `,"title":`...)
		dst = jsonx.AppendString(dst, h.Title)
	}
	if h.ParentSession != "" {
		dst = append(dst, `,"parentSession":`...)
		dst = jsonx.AppendString(dst, h.ParentSession)
	}
	dst, _, err := h.Extra.appendTo(dst, false, func(k string) bool {
		switch k {
		case "type", "version", "id", "cwd":
			return true
		case "timestamp":
			return !h.Timestamp.IsZero()
		case "title":
			return h.Title != ""
		case "parentSession":
			return h.ParentSession != ""
		}
		return false
	})
	if err != nil {
		return nil, fmt.Errorf("session header: %w", err)
	}
	return append(dst, '}'), nil
}

// UnmarshalJSON parses a header line.
func (h *Header) UnmarshalJSON(b []byte) error {
	v, err := jsonx.Trim(b)
	if err != nil {
		return err
	}
	x, err := parseHeader(bytes.Clone(v))
	if err != nil {
		return err
	}
	*h = x
	return nil
}

var errNoHeader = errors.New("no session header")

// parseHeader reads a header line, keeping v. Version is 1 when absent.
func parseHeader(v []byte) (Header, error) {
	if jsonx.KindOf(v) != jsonx.KindObject {
		return Header{}, errNoHeader
	}
	it, _ := jsonx.Object(v)
	h := Header{Version: 1}
	isSession, hasID := false, false
	for it.Next() {
		k, val := it.Key(), it.Value()
		ok := false
		switch k {
		case "type":
			var t string
			t, ok = jsonx.String(val)
			isSession = ok && t == "session"
			ok = true // written back as "session" either way, or rejected
		case "version":
			var n int64
			if n, ok = jsonx.ParseInt(val); ok && n >= 1 && n <= 1<<30 {
				h.Version = int(n)
			} else {
				return Header{}, fmt.Errorf("session header: invalid version %s", val)
			}
		case "id":
			h.ID, ok = jsonx.String(val)
			hasID = ok
		case "timestamp":
			var s string
			if s, ok = jsonx.String(val); ok {
				var err error
				h.Timestamp, err = time.Parse(time.RFC3339Nano, s)
				ok = err == nil
			}
		case "cwd":
			h.Cwd, ok = jsonx.String(val)
		case "title":
			h.Title, ok = jsonx.String(val)
		case "parentSession":
			h.ParentSession, ok = jsonx.String(val)
		}
		if !ok {
			h.Extra.Set(k, cloneRaw(val))
		}
	}
	if it.Err() != nil || it.End() != len(v) {
		return Header{}, errNoHeader
	}
	if !isSession {
		return Header{}, fmt.Errorf("%w (its type is not \"session\")", errNoHeader)
	}
	if !hasID {
		return Header{}, fmt.Errorf("%w (it has no id)", errNoHeader)
	}
	core := h.core()
	core.extra = h.Extra.Clone()
	h.raw, h.orig = v, &core
	return h, nil
}
