package pgstore

import (
	"bytes"
	"encoding/json"
	"unicode/utf8"

	session "github.com/agentsession/session"
)

// The place of an entry in its session's tree, as the columns of schema
// version 9 keep it (migrations/0009_path.sql): what a load by path
// (pathload.go) reads instead of the whole session.

// Path flags of an entry (the flags column).
const (
	flagSetting   = 1  // a setting the context reads from anywhere on its path
	flagAssistant = 2  // an assistant message naming its model (or, with flagUnsure, one that did not decode)
	flagCompact   = 4  // a compaction
	flagMarker    = 8  // a leaf marker
	flagUnsure    = 16 // with flagAssistant: a load that needs this entry reads whole
	flagUnknown   = -1 // the entry's place is not kept: a whole read decides
)

// leafMarkerJSON is the customType of a leaf marker, as JSON.
const leafMarkerJSON = `"agentsession.leaf"`

// pathFlags returns the path flags of e and, for a compaction, its first
// kept entry id (nil if none). It reads e as the session package's open
// does (session.PathLoader): where this package could read otherwise
// (a member it would unescape, a message that does not decode), it
// answers flagUnknown, or flagUnsure for a message, so that a load that
// depends on the entry reads the session whole.
func pathFlags(e session.Entry) (int16, *string) {
	switch e.Type() {
	case "thinking_level_change", "model_change", "mode_change", "ttsr_injection":
		return flagSetting, nil
	case "compaction":
		raw, ok := e.Field("firstKeptEntryId")
		if !ok {
			return flagCompact, nil
		}
		id, ok := plainString(raw)
		if !ok {
			return flagUnknown, nil
		}
		if id == "" {
			return flagCompact, nil
		}
		return flagCompact, &id
	case "message":
		m, err := e.Message()
		if err != nil {
			return flagAssistant | flagUnsure, nil
		}
		if m.Role == session.RoleAssistant && (m.Provider != "" || m.Model != "") {
			return flagAssistant, nil
		}
		return 0, nil
	case "custom":
		raw, ok := e.Field("customType")
		switch {
		case !ok:
			return 0, nil
		case string(raw) == leafMarkerJSON:
			return flagMarker, nil
		case bytes.IndexByte(raw, '\\') >= 0:
			return flagUnknown, nil // maybe the marker's name, escaped
		}
		return 0, nil
	}
	return 0, nil
}

// plainString returns the string that the JSON value raw holds when it
// is a string with no escapes, in UTF-8, which every reader reads the
// same; ok is false for anything else.
func plainString(raw []byte) (string, bool) {
	if len(raw) < 2 || raw[0] != '"' || raw[len(raw)-1] != '"' {
		return "", false
	}
	s := raw[1 : len(raw)-1]
	if bytes.IndexByte(s, '\\') >= 0 || bytes.IndexByte(s, '"') >= 0 || !utf8.Valid(s) {
		return "", false
	}
	for _, c := range s {
		if c < 0x20 {
			return "", false
		}
	}
	var out string
	if json.Unmarshal(raw, &out) != nil {
		return "", false
	}
	return out, true
}

// appendPlaces holds what agentsession_append (version 9) needs to place
// the entries of an append: for each, the position in the append of its
// parent (1-based; 0 when not among them), its parent id, its flags and
// a compaction's first kept entry id.
type appendPlaces struct {
	pidx    []int32
	parents []string
	flags   []int16
	kept    []*string
}

// placesOf returns the appendPlaces of entries.
func placesOf(entries []session.Entry) appendPlaces {
	n := len(entries)
	p := appendPlaces{pidx: make([]int32, n), parents: make([]string, n), flags: make([]int16, n), kept: make([]*string, n)}
	var at map[string]int32
	if n > 1 {
		at = make(map[string]int32, n)
	}
	for i, e := range entries {
		p.parents[i] = e.ParentID()
		p.flags[i], p.kept[i] = pathFlags(e)
		if at != nil {
			if j, ok := at[p.parents[i]]; ok && p.parents[i] != "" {
				p.pidx[i] = j
			}
			at[e.ID()] = int32(i + 1)
		}
	}
	return p
}

// place is an entry's row of the columns of version 9; known is false
// when its place is unknown (every column NULL).
type place struct {
	known                               bool
	parent, depth, set, asst, comp, run int32
	flags                               int16
	kept                                *string
}

// placesOfLog returns the places of a whole log's entries (seq i+1 for
// entries[i]), as appends made one after the other in a store of this
// schema would have found them: an entry is placed when its flags are
// known, its id is the only one of the log, and its parent is "" or an
// earlier entry that is placed.
func placesOfLog(entries []session.Entry) []place {
	count := make(map[string]int, len(entries))
	for _, e := range entries {
		count[e.ID()]++
	}
	at := make(map[string]int, len(entries))
	out := make([]place, len(entries))
	for i, e := range entries {
		seq := int32(i + 1)
		f, kept := pathFlags(e)
		id := e.ID()
		j, earlier := at[e.ParentID()]
		at[id] = i
		if f == flagUnknown || count[id] > 1 {
			continue
		}
		pl := place{known: true, flags: f, kept: kept, run: seq}
		if e.ParentID() != "" {
			if !earlier || !out[j].known {
				continue
			}
			p := &out[j]
			pl.parent, pl.depth = int32(j+1), p.depth+1
			pl.set, pl.asst, pl.comp = p.set, p.asst, p.comp
			if p.flags&flagSetting != 0 {
				pl.set = pl.parent
			}
			if p.flags&flagAssistant != 0 {
				pl.asst = pl.parent
			}
			if pl.parent == seq-1 {
				pl.run = p.run
			}
		}
		if f&flagCompact != 0 {
			pl.comp = seq
		}
		out[i] = pl
	}
	return out
}

// row returns the values of p's columns, in the table's order: parent,
// depth, flags, set, asst, comp, run, kept (nil for each when unknown).
func (p place) row() []any {
	if !p.known {
		return []any{nil, nil, nil, nil, nil, nil, nil, nil}
	}
	return []any{p.parent, p.depth, p.flags, p.set, p.asst, p.comp, p.run, p.kept}
}
