// The ids of a storage tree's records against their places.
//
// A record of the tree (see opencode_storage.go) holds its own ids (a
// session's info its id; a message its id and sessionID; a part its id,
// sessionID and messageID), and its place gives them too: the file's
// name, the directory it is in (message/<session>/, part/<message>/).
// OpenCode 1.2's conversion of the tree (packages/opencode/src/storage/
// json-migration.ts) reads none of a record's own ids: it takes each
// from the place, and its tests keep a record whose id or messageID is
// stale ("uses paths for part id and messageID when JSON has different
// values", "uses filename for session id when JSON has different
// value"; testdata/opencode/public). This reader does the same with
// those ids, and reports each record so taken (ErrOpenCodeIDs).
//
// A sessionID is another matter. No OpenCode version writes a message or
// part whose sessionID is not the session whose directories hold it
// (1.1's migrations copy message/<session.id>/ and part/<message.id>/
// from the records themselves), and none of OpenCode's tests has one.
// Such a record arrives by a copy, or by a message file named after
// another session's message: the message's parts, found by the message
// id alone (part/<message>/), would then come with it. OpenCode's own
// conversion, where the message table keeps a message id once (the
// first file of a directory scan) and a part takes the session of the
// last, would give them to whichever session the scan met first. So a
// message or part naming another session is not taken into this one,
// nor is a part without a sessionID whose message id is a file in more
// than one session's directory (whose it is cannot be told): each is
// reported in the session's Malformed (ErrOpenCodeRecord and
// ErrOpenCodeIDs), and imports with the session it names, where its
// ids agree with its place.

package importer

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/agentsession/session/internal/jsonx"
)

// ocPlaceID is an id a record's place gives it.
type ocPlaceID struct {
	key, val string
	// owner: the id of the session the record belongs to (sessionID). A
	// record naming another is not taken; another id that disagrees is
	// replaced with the place's, as OpenCode's conversion does.
	owner bool
}

// ocIDFix says what ocPathIDs did to a record's ids.
type ocIDFix struct {
	stale   []string // members replaced with the place's value: "id was \"x\""
	missing []string // ids the record lacks, given by the place
}

// record reads a message or part file: a JSON object, with the ids its
// path gives (see ocPathIDs). A record not taken is noted with note; one
// taken with stale ids, with kept.
func (r *ocReader) record(rel string, ids []ocPlaceID, note, kept func(string, error)) (json.RawMessage, ocIDFix, bool) {
	b, err := r.rt.readFile(rel, ocMaxRecordBytes)
	if err != nil {
		note(r.rt.path(rel), err)
		return nil, ocIDFix{}, false
	}
	out, fix, err := ocPathIDs(b, ids)
	if err != nil {
		note(r.rt.path(rel), err)
		return nil, fix, false
	}
	if len(fix.stale) > 0 {
		kept(r.rt.path(rel), fmt.Errorf("%w: taken with its place's ids, as OpenCode's conversion takes it (%s)", ErrOpenCodeIDs, strings.Join(fix.stale, ", ")))
	}
	return out, fix, true
}

// ocPathIDs gives the JSON object b the ids its file's path gives, as
// OpenCode 1.2's conversion of the tree takes them (an id missing from
// an old file, or stale): one present keeps its place with the path's
// value, a missing one is put first. b is returned as it is when its ids
// are the path's. An owner's id (sessionID) that is present and not the
// path's is an error (ErrOpenCodeIDs): the record is another session's.
func ocPathIDs(b []byte, ids []ocPlaceID) (json.RawMessage, ocIDFix, error) {
	var fix ocIDFix
	if ocIDsMatch(b, ids) {
		return bytes.TrimSpace(b), fix, nil
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, fix, whyNotObject(b)
	}
	type member struct {
		key string
		val json.RawMessage
	}
	var ms []member
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, fix, whyNotObject(b)
		}
		k, _ := t.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, fix, whyNotObject(b)
		}
		ms = append(ms, member{k, v})
	}
	if t, err := dec.Token(); err != nil || t != json.Delim('}') {
		return nil, fix, whyNotObject(b)
	}
	if dec.More() {
		return nil, fix, fmt.Errorf("invalid JSON: more after the object")
	}
	var first []member
	for _, id := range ids {
		v, _ := json.Marshal(id.val)
		found := false
		for i := range ms {
			if ms[i].key != id.key {
				continue
			}
			found = true
			var old string
			if json.Unmarshal(ms[i].val, &old) == nil && old == id.val {
				continue
			}
			if id.owner {
				return nil, fix, fmt.Errorf("%w: its %s is %s, not %q, the session whose directories hold it: not taken into it",
					ErrOpenCodeIDs, id.key, clip(ms[i].val, 80), id.val)
			}
			fix.stale = append(fix.stale, fmt.Sprintf("%s %s, not %q", id.key, clip(ms[i].val, 80), id.val))
			ms[i].val = v
		}
		if !found {
			first = append(first, member{id.key, v})
			fix.missing = append(fix.missing, id.key)
		}
	}
	if len(fix.stale) == 0 && len(fix.missing) == 0 {
		return bytes.TrimSpace(b), fix, nil
	}
	var out bytes.Buffer
	out.WriteByte('{')
	for i, m := range append(first, ms...) {
		if i > 0 {
			out.WriteByte(',')
		}
		k, _ := json.Marshal(m.key)
		out.Write(k)
		out.WriteByte(':')
		out.Write(m.val)
	}
	out.WriteByte('}')
	return out.Bytes(), fix, nil
}

// clip is raw, cut to n bytes, for a message.
func clip(raw json.RawMessage, n int) string {
	if len(raw) <= n {
		return string(raw)
	}
	return string(raw[:n]) + "…"
}

// ocIDsMatch reports, in one pass that copies nothing, whether b is a
// JSON object holding each id of ids with the path's value: the common
// case, where the file is taken as it is.
func ocIDsMatch(b []byte, ids []ocPlaceID) bool {
	c := jsonx.NewCursor(b)
	c.Share = true
	ms, ok := c.Object()
	if !ok {
		return false
	}
	seen, match := 0, true
	for {
		key, esc, more := ms.Next()
		if !more {
			break
		}
		if esc {
			match = false // an escaped key: the slow path reads it
			continue
		}
		for i, id := range ids {
			if string(key) == id.key {
				seen |= 1 << i
				if v, isStr := c.Str(); !isStr || v != id.val {
					match = false
				}
				break
			}
		}
	}
	return c.Err() == nil && c.AtEnd() && match && seen == 1<<len(ids)-1
}

// messages maps each message id of the tree (a file's name under
// message/<session>/) to the sessions whose directories hold a file of
// that name, listing message/*/ and reading nothing.
func (idx *ocIndex) messages() map[string][]string {
	if idx.msgs != nil {
		return idx.msgs
	}
	idx.msgs = map[string][]string{}
	sessions, _ := idx.rt.readDir(filepath.Join(idx.storage, "message"))
	for _, s := range sessions {
		if !s.IsDir() {
			continue
		}
		ents, _ := idx.rt.readDir(filepath.Join(idx.storage, "message", s.Name()))
		for _, e := range ents {
			if m, ok := strings.CutSuffix(e.Name(), ".json"); ok {
				idx.msgs[m] = append(idx.msgs[m], s.Name())
			}
		}
	}
	return idx.msgs
}

// ocInfoRead reports whether ms are all reports of records of an
// OpenCode session whose own info was read (a storage tree's session
// file, a database's session row): ErrOpenCodeRecord, ErrOpenCodeIDs,
// which only those readers give, and only once the info is read. Such
// a session is one, though none of its records imports: it imports
// empty, its records reported.
func ocInfoRead(ms []LineError) bool {
	for _, m := range ms {
		if !errors.Is(m.Err, ErrOpenCodeIDs) && !errors.Is(m.Err, ErrOpenCodeRecord) {
			return false
		}
	}
	return true
}
