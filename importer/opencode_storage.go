// OpenCode's storage directory (versions up to 1.1): format notes and
// the mapping.
//
// OpenCode (sst/opencode; read at packages/opencode/src/storage/
// storage.ts, session/index.ts, session/message-v2.ts, session/todo.ts,
// share/share-next.ts, and storage/json-migration.ts of 1.2, which
// moves this tree into the database) keeps its data in
// $XDG_DATA_HOME/opencode/storage (~/.local/share/opencode/storage).
// Storage.write(key, value) writes JSON.stringify(value, null, 2) to
// <storage>/<key joined by "/">.json; a session is spread over files:
//
//   - session/<projectID>/<sessionID>.json: the Session.Info, as in an
//     export's "info" (id "ses_...", slug, version, projectID,
//     directory, parentID on a subagent's session, title, time,
//     summary, share {url}, revert, permission).
//   - message/<sessionID>/<messageID>.json: a message's info
//     (MessageV2.Info: a user or assistant message, as in an export's
//     messages[i].info).
//   - part/<messageID>/<partID>.json: one part of a message
//     (MessageV2.Part: text, reasoning, file, tool, step-start, ...).
//   - todo/<sessionID>.json: the session's to-do list, a list of
//     {content, status, priority, id}.
//   - session_diff/<sessionID>.json: the files the session changed, each
//     {file, before, after, additions, deletions} with both contents.
//   - session_share/<sessionID>.json: the session's share, {id, secret,
//     url}: the secret updates the shared copy.
//   - project/<projectID>.json (the project's worktree, VCS, icon),
//     permission/<projectID>.json (a project's permission rules) and
//     migration (the number of storage migrations run).
//
// Ids are made to sort in time: message and part ids ascend, session ids
// descend (the newest first in a listing). OpenCode lists a session's
// messages, and a message's parts, by file name, and `opencode export`
// writes them in that order. Files of older versions may lack their ids,
// or hold stale ones; OpenCode 1.2's own conversion takes every id from
// the file's path, and so does this reader, reporting each stale one,
// except a sessionID: a message or part naming another session is not
// taken (see opencode_ids.go).
//
// Mapping: a session's file, its messages (message/<the session file's
// name>/*.json, by name) and their parts (part/<the message file's
// name>/*.json, by name) make the export {"info", "messages": [{"info",
// "parts"}]} that `opencode export` writes for it, which is imported as
// an export is (see opencode.go): the same entries, byte for byte. The
// ids of the session, its messages and their parts are their files'
// names, as OpenCode 1.2's conversion of the tree takes them: an id an
// old file lacks is put first, a stale one (a file a migration moved)
// takes its file's name in its place (reported: ErrOpenCodeIDs); a
// message or part whose sessionID names another session, or a part
// without one whose message id is a message of two sessions, is not
// imported (reported: ErrOpenCodeRecord and ErrOpenCodeIDs).
// The to-do list, when not empty, is kept in the header as Extra
// "opencodeTodo". A session whose parentID names another session of the
// tree is a child of that session (a subagent's), read with it: a
// session's file imported on its own brings its subagents' sessions.
//
// Not imported, and named in Report.NotImported with the reason when a
// directory is: session_diff (the files' contents, which no export holds
// either), session_share (a credential; the share's URL is in the
// session's info), project, permission and migration (no session), and
// messages or parts whose session's file is not in the tree. A message
// or part that cannot be read (not JSON, too large, a link) is reported
// in the session's Malformed (ErrOpenCodeRecord) and the rest imports;
// a session whose info was read imports though none of its records does
// (empty, each record reported).
//
// Paths: only names read from the tree's directories become path
// elements (each checked by elem); no id from a file's contents is ever
// a path. The directory named, or the storage directory above a session
// file named alone, is the import's root.

package importer

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"

	session "github.com/agentsession/session"
)

// ErrOpenCodeNotSession is the error of a file of OpenCode's that is not
// a session's own file: one message or part (read with its session's
// file), a session's info outside its storage tree, or a file of the
// tree that holds no session (a project, a share, file diffs). In
// Report.NotImported it says which.
var ErrOpenCodeNotSession = errors.New("importer: an OpenCode file that is not a session's own")

// ErrOpenCodeRecord reports, in a session's Malformed, a message, part
// or other record of OpenCode's storage tree or database that could not
// be read; the rest of the session imports.
var ErrOpenCodeRecord = errors.New("importer: an OpenCode record not read")

// ErrOpenCodeIDs reports, in a session's Malformed, an OpenCode record
// whose own ids are not those of its place: a message or part naming
// another session (or a part whose session cannot be told), reported
// with ErrOpenCodeRecord too and not imported; or a stale id that
// OpenCode's own conversion replaces with its place's (a file's id, a
// part's messageID), imported so and reported with this error alone.
var ErrOpenCodeIDs = errors.New("importer: an OpenCode record whose ids are not those of its place")

// Caps on what the storage reader reads: a session's info and one
// message or part file (the whole session, as an export, is capped by
// OpenCodeMaxFileBytes), and a to-do list.
const (
	ocMaxRecordBytes = 64 << 20
	ocMaxTodoBytes   = 4 << 20
	ocIndexHead      = 4 << 10 // the start of a session file the index reads
)

// ocMaxSessionBytes caps a session read from the tree, as an export: at
// OpenCodeMaxFileBytes (smaller in tests).
var ocMaxSessionBytes = OpenCodeMaxFileBytes

var ocStorageHead = regexp.MustCompile(`^\s*\{\s*"id"\s*:\s*"`)

// ocKindOf tells a session's info, a message and a part of the storage
// tree by their opening: an object whose first member is its id, and
// members of its kind. "" for anything else.
func ocKindOf(head []byte) string {
	if !ocStorageHead.Match(head) {
		return ""
	}
	switch {
	case containsStr(head, `"messageID"`) && containsStr(head, `"type"`):
		return "part"
	case containsStr(head, `"role"`) && containsStr(head, `"sessionID"`):
		return "message"
	case containsStr(head, `"projectID"`) && (containsStr(head, `"directory"`) || containsStr(head, `"time"`)):
		return "session"
	}
	return ""
}

// sniffOpenCodeStorage recognises a file of the storage tree by its
// opening (see ocKindOf).
func sniffOpenCodeStorage(head []byte) bool { return ocKindOf(head) != "" }

// ocPlace is where a file lies in a storage tree.
type ocPlace struct {
	storage string // the storage directory, relative to the root
	kind    string // session, message, part, todo, session_diff, session_share, project, permission, migration
	dir     string // what the file's directory names: a session's project, a message's session, a part's message
	stem    string // the file's name without .json
}

// ocPlaces lists where rel could lie in a storage tree, judging by its
// path alone.
func ocPlaces(rel string) []ocPlace {
	parts := strings.Split(filepath.ToSlash(filepath.Clean(rel)), "/")
	n := len(parts)
	join := func(ps []string) string { return filepath.FromSlash(orDefault(strings.Join(ps, "/"), ".")) }
	var out []ocPlace
	if parts[n-1] == "migration" {
		out = append(out, ocPlace{storage: join(parts[:n-1]), kind: "migration"})
	}
	stem, ok := strings.CutSuffix(parts[n-1], ".json")
	if !ok {
		return out
	}
	if n >= 3 {
		switch k := parts[n-3]; k {
		case "session", "message", "part":
			out = append(out, ocPlace{storage: join(parts[:n-3]), kind: k, dir: parts[n-2], stem: stem})
		}
	}
	if n >= 2 {
		switch k := parts[n-2]; k {
		case "todo", "session_diff", "session_share", "project", "permission":
			out = append(out, ocPlace{storage: join(parts[:n-2]), kind: k, stem: stem})
		}
	}
	return out
}

// ocIsStorage reports whether dir (relative to the root) is an OpenCode
// storage directory: a session directory, and messages or the migration
// marker beside it.
func ocIsStorage(rt *root, dir string) bool {
	return rt.memoize("opencode.storage\x00"+dir, func() any {
		if _, err := rt.check(filepath.Join(dir, "session"), true); err != nil {
			return false
		}
		_, err := rt.check(filepath.Join(dir, "message"), true)
		return err == nil || rt.isFile(filepath.Join(dir, "migration"))
	}).(bool)
}

// ocPlaceIn is where rel lies in a storage tree of the root.
func ocPlaceIn(rt *root, rel string) (ocPlace, bool) {
	for _, p := range ocPlaces(rel) {
		if ocIsStorage(rt, p.storage) {
			return p, true
		}
	}
	return ocPlace{}, false
}

// ocClaims: the files of a storage tree are OpenCode's, whatever they
// hold.
func ocClaims(rt *root, rel string) bool {
	_, ok := ocPlaceIn(rt, rel)
	return ok
}

// ocRootOf widens the root of a session's file named alone to its
// storage directory (<storage>/session/<project>/<id>.json), where its
// messages and parts are.
func ocRootOf(path string) (dir, rel string) {
	parts := strings.Split(filepath.ToSlash(path), "/")
	n := len(parts)
	if n >= 4 && parts[n-3] == "session" && strings.HasSuffix(parts[n-1], ".json") {
		dir = filepath.FromSlash(strings.Join(parts[:n-3], "/"))
		if dir == "" {
			dir = string(filepath.Separator)
		}
		return dir, filepath.Join(parts[n-3:]...)
	}
	return filepath.Split(path)
}

// ocOwned gives the reason a file of the tree is not imported on its own
// (nil for a session's file imported on its own).
func ocOwned(rt *root, rel string) error {
	p, ok := ocPlaceIn(rt, rel)
	if !ok {
		// Recognised by its contents, outside a storage tree.
		return ocLoneFile(rt, rel)
	}
	idx := ocIndexOf(rt, p.storage)
	sessionFile := func(sid string) (string, bool) {
		s, ok := idx.byStem[sid]
		return s, ok
	}
	switch p.kind {
	case "session":
		if parent, ok := idx.owner[rel]; ok {
			return fmt.Errorf("%w (a subagent's session, read with its parent's file %s)", ErrNotRead, rt.path(parent))
		}
		return nil
	case "message", "todo":
		sid := p.dir
		if p.kind == "todo" {
			sid = p.stem
		}
		what := map[string]string{"message": "a message", "todo": "the to-do list"}[p.kind]
		if s, ok := sessionFile(sid); ok {
			return fmt.Errorf("%w (%s of OpenCode session %q, read with its session's file %s)", ErrNotRead, what, sid, rt.path(s))
		}
		return fmt.Errorf("%w: %s of OpenCode session %q, whose file (session/<project>/%s.json) is not in the tree", ErrOpenCodeNotSession, what, sid, sid)
	case "part":
		for _, sid := range idx.messages()[p.dir] {
			if s, ok := sessionFile(sid); ok {
				return fmt.Errorf("%w (a part of a message of OpenCode session %q, read with its session's file %s)", ErrNotRead, sid, rt.path(s))
			}
		}
		return fmt.Errorf("%w: a part of OpenCode message %q, whose message and session are not in the tree", ErrOpenCodeNotSession, p.dir)
	case "session_diff":
		return fmt.Errorf("%w: the contents of the files OpenCode session %q changed, before and after (not imported: an export leaves them out too)", ErrOpenCodeNotSession, p.stem)
	case "session_share":
		return fmt.Errorf("%w: the share of OpenCode session %q with its secret (not imported: a credential; the share's URL is in the session's info)", ErrOpenCodeNotSession, p.stem)
	case "project":
		return fmt.Errorf("%w: OpenCode's record of project %q (its worktree; each session keeps its directory)", ErrOpenCodeNotSession, p.stem)
	case "permission":
		return fmt.Errorf("%w: the permission rules OpenCode keeps for project %q", ErrOpenCodeNotSession, p.stem)
	}
	return fmt.Errorf("%w: the version of OpenCode's storage (the migrations run on it)", ErrOpenCodeNotSession)
}

// ocLoneFile is the reason a file that holds an OpenCode session's info,
// message or part is not read where it lies, outside a storage tree.
func ocLoneFile(rt *root, rel string) error {
	head, _ := rt.head(rel, 64<<10)
	switch ocKindOf(head) {
	case "message":
		return fmt.Errorf("%w: one message of an OpenCode session: import its session's file (storage/session/<project>/<session>.json) or the storage directory", ErrOpenCodeNotSession)
	case "part":
		return fmt.Errorf("%w: one part of an OpenCode message: import its session's file (storage/session/<project>/<session>.json) or the storage directory", ErrOpenCodeNotSession)
	}
	return fmt.Errorf("%w: an OpenCode session's info outside its storage tree (<storage>/session/<project>/<id>.json), where its messages are not", ErrOpenCodeNotSession)
}

// eachOpenCodeStorage reads the session whose file is rel, with its
// subagents' sessions as its children; when its own file cannot be read,
// they are given on their own after its error.
func eachOpenCodeStorage(ctx context.Context, rt *root, rel string, yield func(*Parsed, error)) error {
	var p ocPlace
	for _, c := range ocPlaces(rel) {
		if c.kind == "session" {
			p = c
			break
		}
	}
	if p.kind == "" {
		if _, ok := ocPlaceIn(rt, rel); ok {
			return ocOwned(rt, rel)
		}
		return ocLoneFile(rt, rel)
	}
	r := &ocReader{rt: rt, storage: p.storage, idx: ocIndexOf(rt, p.storage), seen: map[string]bool{}}
	s, err := r.session(ctx, rel, p.stem)
	if err == nil {
		s.Children, err = r.kids(ctx, rel, s)
		if err != nil {
			return err
		}
		yield(s, nil)
		return nil
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	kids, kerr := r.kids(ctx, rel, nil)
	for _, k := range kids {
		yield(k, nil)
	}
	if kerr != nil {
		return kerr
	}
	return err
}

// ocReader reads sessions of one storage tree.
type ocReader struct {
	rt      *root
	storage string
	idx     *ocIndex
	seen    map[string]bool // the session files read (a guard against a cycle of parents)
}

func (r *ocReader) bad(p *Parsed, path string, err error) {
	p.Malformed = append(p.Malformed, LineError{Path: path, Err: fmt.Errorf("%w: %w", ErrOpenCodeRecord, err)})
}

// session reads the session whose file is rel (named stem), its
// messages and parts, and its subagents' sessions.
func (r *ocReader) session(ctx context.Context, rel, stem string) (*Parsed, error) {
	r.seen[rel] = true
	info, err := r.rt.readFile(rel, ocMaxRecordBytes)
	if err != nil {
		return nil, fmt.Errorf("importer: %w", err)
	}
	var bad []LineError
	note := func(path string, err error) {
		bad = append(bad, LineError{Path: path, Err: fmt.Errorf("%w: %w", ErrOpenCodeRecord, err)})
	}
	kept := func(path string, err error) { bad = append(bad, LineError{Path: path, Err: err}) }
	sid, stemErr := elem(stem)
	if stemErr == nil {
		var fix ocIDFix
		info, fix, err = ocPathIDs(info, []ocPlaceID{{key: "id", val: sid}})
		if err == nil && len(fix.stale) > 0 {
			kept(r.rt.path(rel), fmt.Errorf("%w: taken with its file's name as its id, as OpenCode's conversion takes it (%s)", ErrOpenCodeIDs, fix.stale[0]))
		}
	} else if jsonObject(info) == nil {
		err = whyNotObject(info)
	} else {
		err = nil // no path id to give: its messages are not looked for
	}
	if err != nil {
		return nil, fmt.Errorf("importer: %s: not an OpenCode session's info: %w", r.rt.path(rel), err)
	}
	var doc bytes.Buffer
	doc.WriteString(`{"info":`)
	doc.Write(bytes.TrimSpace(info))
	doc.WriteString(`,"messages":[`)
	n := 0
	if stemErr != nil {
		note(r.rt.path(rel), fmt.Errorf("its messages are not looked for: %w", stemErr))
	} else {
		for _, m := range r.files(filepath.Join(r.storage, "message", sid), note) {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			raw, _, ok := r.record(m.rel, []ocPlaceID{{key: "id", val: m.stem}, {key: "sessionID", val: sid, owner: true}}, note, kept)
			if !ok {
				continue
			}
			if n > 0 {
				doc.WriteByte(',')
			}
			n++
			doc.WriteString(`{"info":`)
			doc.Write(raw)
			doc.WriteString(`,"parts":[`)
			k := 0
			for _, pt := range r.files(filepath.Join(r.storage, "part", m.stem), note) {
				raw, fix, ok := r.record(pt.rel, []ocPlaceID{{key: "id", val: pt.stem}, {key: "sessionID", val: sid, owner: true}, {key: "messageID", val: m.stem}}, note, kept)
				if !ok {
					continue
				}
				if slices.Contains(fix.missing, "sessionID") {
					if others := r.idx.messages()[m.stem]; len(others) > 1 {
						note(r.rt.path(pt.rel), fmt.Errorf("%w: it has no sessionID, and its message id %q is a message of the sessions %s: whose it is cannot be told",
							ErrOpenCodeIDs, m.stem, strings.Join(others, ", ")))
						continue
					}
				}
				if k > 0 {
					doc.WriteByte(',')
				}
				k++
				doc.Write(raw)
				if doc.Len() > ocMaxSessionBytes {
					return nil, r.tooLarge(rel)
				}
			}
			doc.WriteString(`]}`)
			if doc.Len() > ocMaxSessionBytes {
				return nil, r.tooLarge(rel)
			}
		}
	}
	doc.WriteString(`]}`)
	p, err := parseExport(jsonObject(doc.Bytes()), r.rt.path(rel))
	if err != nil {
		return nil, err
	}
	p.Malformed = append(bad, p.Malformed...)
	if sid != "" {
		r.todo(p, filepath.Join(r.storage, "todo", sid+".json"))
	}
	return p, nil
}

// kids reads the subagents' sessions of the session whose file is rel,
// each with its own. One that cannot be read is reported in parent's
// Malformed, or, without a parent (its file could not be read), in the
// error returned, which the others do not wait on.
func (r *ocReader) kids(ctx context.Context, rel string, parent *Parsed) ([]*Parsed, error) {
	var out []*Parsed
	var errs []error
	for _, c := range r.idx.children[rel] {
		if r.seen[c] {
			continue
		}
		kid, err := r.session(ctx, c, strings.TrimSuffix(filepath.Base(c), ".json"))
		if err == nil {
			kid.Children, err = r.kids(ctx, c, kid)
		}
		switch {
		case ctx.Err() != nil:
			return nil, ctx.Err()
		case err != nil && parent != nil:
			r.bad(parent, r.rt.path(c), fmt.Errorf("its subagent's session is not imported: %w", err))
		case err != nil:
			errs = append(errs, err)
		default:
			out = append(out, kid)
		}
	}
	return out, errors.Join(errs...)
}

// tooLarge is the error of a session whose messages and parts, as an
// export, would pass OpenCodeMaxFileBytes: refused as an export that
// large is.
func (r *ocReader) tooLarge(rel string) error {
	return fmt.Errorf("importer: %s: %w (the session's messages and parts pass %d bytes)", r.rt.path(rel), session.ErrTooLarge, ocMaxSessionBytes)
}

// ocFile is a file of a directory of the tree.
type ocFile struct{ rel, stem string }

// files lists the *.json files of dir by name; a link, FIFO or
// directory in their place is reported, not read.
func (r *ocReader) files(dir string, note func(string, error)) []ocFile {
	ents, err := r.rt.readDir(dir)
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			note(r.rt.path(dir), err)
		}
		return nil
	}
	var out []ocFile
	for _, e := range ents {
		stem, ok := strings.CutSuffix(e.Name(), ".json")
		if !ok {
			continue
		}
		rel := filepath.Join(dir, e.Name())
		switch t := e.Type(); {
		case t&fs.ModeSymlink != 0:
			note(r.rt.path(rel), ErrSymlink)
		case !t.IsRegular():
			note(r.rt.path(rel), fmt.Errorf("%w (%s)", ErrNotRegular, kindOf(t)))
		default:
			if _, err := elem(stem); err != nil {
				note(r.rt.path(rel), err)
				continue
			}
			out = append(out, ocFile{rel, stem})
		}
	}
	return out
}

// todo keeps the session's to-do list in its header.
func (r *ocReader) todo(p *Parsed, rel string) {
	if _, err := r.rt.check(rel, false); errors.Is(err, fs.ErrNotExist) {
		return
	}
	b, err := r.rt.readFile(rel, ocMaxTodoBytes)
	switch {
	case err != nil:
		r.bad(p, r.rt.path(rel), err)
	case !json.Valid(b):
		r.bad(p, r.rt.path(rel), fmt.Errorf("the to-do list is not JSON"))
	case len(jsonArray(b)) > 0:
		p.Header.Extra.Set("opencodeTodo", compactRaw(b))
	}
}

// ocIndex is what a storage tree's session files say of each other,
// read once per import: which are subagents' sessions of which.
type ocIndex struct {
	rt       *root
	storage  string
	byStem   map[string]string   // a session file's name (its id) -> its rel
	owner    map[string]string   // a subagent's session file -> its parent's, when the chain of parents ends
	children map[string][]string // a session file -> its subagents' files, by name

	msgs map[string][]string // message id (its file's name) -> the sessions whose directories hold it, listed on demand
}

// ocIndexOf reads the index of the storage directory dir.
func ocIndexOf(rt *root, dir string) *ocIndex {
	return rt.memoize("opencode.index\x00"+dir, func() any { return buildOCIndex(rt, dir) }).(*ocIndex)
}

func buildOCIndex(rt *root, storage string) *ocIndex {
	idx := &ocIndex{rt: rt, storage: storage, byStem: map[string]string{}, owner: map[string]string{}, children: map[string][]string{}}
	byID := map[string]string{}
	parentOf := map[string]string{}
	var files []string
	projects, _ := rt.readDir(filepath.Join(storage, "session"))
	for _, pd := range projects {
		if !pd.IsDir() {
			continue
		}
		dir := filepath.Join(storage, "session", pd.Name())
		ents, _ := rt.readDir(dir)
		for _, e := range ents {
			stem, ok := strings.CutSuffix(e.Name(), ".json")
			if !ok || !e.Type().IsRegular() {
				continue
			}
			rel := filepath.Join(dir, e.Name())
			head, err := rt.head(rel, ocIndexHead)
			if err != nil {
				continue
			}
			top := topStrings(head, "id", "parentID")
			if top == nil {
				continue
			}
			files = append(files, rel)
			if _, ok := idx.byStem[stem]; !ok {
				idx.byStem[stem] = rel
			}
			if id := top["id"]; id != "" {
				if _, ok := byID[id]; !ok {
					byID[id] = rel
				}
			}
			if p := top["parentID"]; p != "" {
				parentOf[rel] = p
			}
		}
	}
	parent := func(rel string) string {
		p := parentOf[rel]
		if p == "" {
			return ""
		}
		if s, ok := idx.byStem[p]; ok && s != rel {
			return s
		}
		if s, ok := byID[p]; ok && s != rel {
			return s
		}
		return ""
	}
	sort.Strings(files)
	for _, f := range files {
		// A subagent's session is read with its parent's when its chain
		// of parents ends at a session of its own; a cycle is not
		// followed (each of it imports alone).
		seen := map[string]bool{f: true}
		ends := true
		for p := parent(f); p != ""; p = parent(p) {
			if seen[p] {
				ends = false
				break
			}
			seen[p] = true
		}
		if p := parent(f); p != "" && ends {
			idx.owner[f] = p
			idx.children[p] = append(idx.children[p], f)
		}
	}
	return idx
}

// topStrings reads the string members named of the JSON object at the
// start of b, which may be cut short: nil when b does not start an
// object.
func topStrings(b []byte, names ...string) map[string]string {
	dec := json.NewDecoder(bytes.NewReader(b))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil
	}
	out := map[string]string{}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			break
		}
		k, _ := t.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			break
		}
		for _, n := range names {
			var s string
			if k == n && json.Unmarshal(v, &s) == nil {
				out[n] = s
			}
		}
	}
	return out
}
