package session

import (
	"bytes"
	"errors"
	"fmt"
	"hash/fnv"
	"math/rand/v2"

	"github.com/agentsession/session/internal/jsonx"
)

// Format versions and their upgrades.
//
//   - Version 1 (pi before trees): entries have no id or parentId; they
//     form one chain in file order, and a compaction names its first kept
//     entry by index (firstKeptEntryIndex, counting the header as 0 and
//     only lines that are JSON).
//   - Version 2: ids and parentIds; extension messages have role
//     "hookMessage".
//   - Version 3: that role is "custom".
//
// Each step rewrites one line at a time, touching only what changes and
// adding members at the end of the object, as the seed agents' own
// migration does; every other byte of a line is kept. The steps are data:
// a future version adds one element to migrations.
var migrations = []struct {
	from int
	step func() lineStep
}{
	{1, migrateV1toV2},
	{2, migrateV2toV3},
}

// lineStep upgrades one line by one version. header is true for line 1.
type lineStep func(line []byte, header bool) ([]byte, error)

// migrator runs the steps from a version up to CurrentVersion.
type migrator struct {
	from  int
	steps []lineStep
}

func newMigrator(from int) *migrator {
	m := &migrator{from: from}
	for _, s := range migrations {
		if s.from >= from && s.from < CurrentVersion {
			m.steps = append(m.steps, s.step())
		}
	}
	return m
}

func (m *migrator) header(line []byte) ([]byte, error) { return m.run(line, true) }

// entry migrates an entry line. Markers at its end are dropped, every
// one of them: markers are written in the current version only, so one
// in an older line is not this package's, and left there it would make
// the line read as part of a cut append once migrated. A line of the
// current version (no steps) is this package's own and stays as it is.
func (m *migrator) entry(line []byte) ([]byte, error) {
	if len(m.steps) == 0 {
		return line, nil
	}
	line, err := m.run(line, false)
	for cut := err == nil; cut; {
		line, _, cut = cutMark(line)
	}
	return line, err
}

func (m *migrator) run(line []byte, header bool) ([]byte, error) {
	var err error
	for _, s := range m.steps {
		if line, err = s(line, header); err != nil {
			return nil, err
		}
	}
	return line, nil
}

// setVersion sets the header's version member.
func setVersion(line []byte, v int) ([]byte, error) {
	return setMember(line, "version", appendInt(nil, int64(v)))
}

// migrateV1toV2 gives every entry an id and chains the entries in file
// order. pi picks random ids; ours are drawn from a generator seeded with
// the header line, so reading the same file twice (the CLI, a read-only
// open) gives the same ids, while any two sessions still differ.
func migrateV1toV2() lineStep {
	ids := map[string]bool{}
	var byIndex []string // id of each JSON line, the header at 0
	var rng *rand.Rand
	prev := ""
	return func(line []byte, header bool) ([]byte, error) {
		if header {
			h := fnv.New64a()
			h.Write(line)
			rng = rand.New(rand.NewPCG(h.Sum64(), 0x76312d3e7632))
			byIndex = append(byIndex, "")
			return setVersion(line, 2)
		}
		if !jsonx.ValidLoose(line) {
			return nil, errors.New("not valid JSON")
		}
		if jsonx.KindOf(line) != jsonx.KindObject {
			byIndex = append(byIndex, "")
			return nil, errNotObject
		}
		// A line that is an object but no entry (no type, or a second
		// session header) keeps its index but gets no id and does not
		// join the chain: the entries around it stay parent and child.
		if e, err := parseLoose(line); err != nil || e.typ == "" || e.typ == "session" {
			byIndex = append(byIndex, "")
			return line, nil
		}
		id := newEntryID(rng, func(s string) bool { return ids[s] })
		ids[id] = true
		parent := []byte("null")
		if prev != "" {
			parent = jsonx.AppendString(nil, prev)
		}
		out, err := setMember(line, "id", jsonx.AppendString(nil, id))
		if err == nil {
			out, err = setMember(out, "parentId", parent)
		}
		if err != nil {
			return nil, err
		}
		prev = id
		byIndex = append(byIndex, id)
		if e, err := parseLoose(out); err == nil && e.typ == TypeCompaction {
			if v, ok := e.field("firstKeptEntryIndex"); ok && jsonx.KindOf(v) == jsonx.KindNumber {
				n, isInt := jsonx.ParseInt(v)
				target := ""
				if isInt && n > 0 && n < int64(len(byIndex)) {
					target = byIndex[n]
				}
				out = deleteMember(out, "firstKeptEntryIndex")
				if target != "" {
					out, err = setMember(out, "firstKeptEntryId", jsonx.AppendString(nil, target))
					if err != nil {
						return nil, err
					}
				}
			}
		}
		return out, nil
	}
}

func migrateV2toV3() lineStep {
	return func(line []byte, header bool) ([]byte, error) {
		if header {
			return setVersion(line, 3)
		}
		e, err := parseLoose(line)
		if err != nil || e.typ != TypeMessage {
			return line, nil
		}
		it, _ := jsonx.ObjectLoose(line)
		for it.Next() {
			if !it.KeyIs("message") || jsonx.KindOf(it.Value()) != jsonx.KindObject {
				continue
			}
			msg := it.Value()
			mi, _ := jsonx.ObjectLoose(msg)
			for mi.Next() {
				if mi.KeyIs("role") && string(mi.Value()) == `"hookMessage"` {
					if !jsonx.ValidLoose(bytes.TrimSpace(line)) {
						return line, nil // malformed: left for the reader to count
					}
					off := it.ValueOffset() + mi.ValueOffset()
					out := make([]byte, 0, len(line)+2)
					out = append(out, line[:off]...)
					out = append(out, `"custom"`...)
					out = append(out, line[off+len(mi.Value()):]...)
					line = out
					break
				}
			}
			break
		}
		return line, nil
	}
}

// parseLoose reads an entry envelope without requiring an id, for
// migration of lines that do not have one yet.
func parseLoose(v []byte) (Entry, error) {
	if jsonx.KindOf(v) != jsonx.KindObject {
		return Entry{}, errNotObject
	}
	it, _ := jsonx.ObjectLoose(v)
	e := Entry{raw: v}
	for it.Next() {
		if it.KeyIs("type") {
			e.typ, _ = jsonx.String(it.Value())
		}
	}
	return e, it.Err()
}

// setMember replaces the value of key in the object obj (its last
// occurrence, which is the one readers see), or adds key at the end.
func setMember(obj []byte, key string, value []byte) ([]byte, error) {
	if !jsonx.ValidLoose(bytes.TrimSpace(obj)) {
		return nil, errNotObject // trailing bytes after the object, say
	}
	it, err := jsonx.ObjectLoose(obj)
	if err != nil {
		return nil, err
	}
	start, end := -1, -1
	for it.Next() {
		if it.KeyIs(key) {
			start = it.ValueOffset()
			end = start + len(it.Value())
		}
	}
	if it.Err() != nil {
		return nil, it.Err()
	}
	out := make([]byte, 0, len(obj)+len(key)+len(value)+4)
	if start >= 0 {
		out = append(out, obj[:start]...)
		out = append(out, value...)
		return append(out, obj[end:]...), nil
	}
	closing := it.End() - 1 // the '}'
	body := obj[:closing]
	out = append(out, body...)
	if jsonx.SkipSpace(body, 1) < len(body) { // not empty
		out = append(out, ',')
	}
	out = jsonx.AppendString(out, key)
	out = append(out, ':')
	out = append(out, value...)
	return append(out, obj[closing:]...), nil
}

// deleteMember removes every occurrence of key from the object obj.
func deleteMember(obj []byte, key string) []byte {
	for {
		it, err := jsonx.ObjectLoose(obj)
		if err != nil {
			return obj
		}
		// Find the member and the separators around it.
		prevEnd := 1 // just after '{'
		found := false
		var s, e int
		for it.Next() {
			valEnd := it.ValueOffset() + len(it.Value())
			if it.KeyIs(key) {
				found = true
				s, e = prevEnd, valEnd
				break
			}
			prevEnd = valEnd
		}
		if !found {
			return obj
		}
		out := make([]byte, 0, len(obj))
		if s == 1 {
			// First member: drop it and the comma after it, if any.
			rest := obj[e:]
			i := jsonx.SkipSpace(rest, 0)
			if i < len(rest) && rest[i] == ',' {
				rest = rest[i+1:]
			}
			out = append(append(out, obj[:1]...), rest...)
		} else {
			// Later member: drop the comma before it and the member.
			out = append(append(out, obj[:s]...), obj[e:]...)
		}
		obj = out
	}
}

// Migrate upgrades the raw lines of a log of format version from to
// CurrentVersion, line by line, each as the readers migrate it, failing
// at the first line that cannot be. Hosts do not need it (DecodeLog,
// ReadLog and every Store migrate what they read, MigrateFile a file):
// it is for a store that keeps raw lines from elsewhere (see storekit).
func Migrate(from int, header []byte, lines [][]byte) ([]byte, [][]byte, error) {
	if from > CurrentVersion {
		return nil, nil, &UnsupportedVersionError{Version: from}
	}
	if from < 1 {
		return nil, nil, fmt.Errorf("session: invalid version %d", from)
	}
	m := newMigrator(from)
	h, err := m.header(header)
	if err != nil {
		return nil, nil, err
	}
	out := make([][]byte, 0, len(lines))
	for i, l := range lines {
		v, err := m.entry(l)
		if err != nil {
			return nil, nil, fmt.Errorf("line %d: %w", i+2, err)
		}
		out = append(out, v)
	}
	return h, out, nil
}

// migrateFile returns the bytes of a log of an older version upgraded to
// CurrentVersion, line for line: the header and each entry migrated as a
// read with opts (nil: the defaults) migrates them, and every other line
// (blank, malformed, a torn last line) kept as it was, so that the new
// file reads as the old one did and a migration loses nothing the file
// held. It fails with a *LimitError for a file it cannot migrate within
// opts.Limits: one with a line over MaxLineBytes (the reader does not
// read it, so it cannot be migrated as the reader would; kept as it was,
// it would stay a line of the old version in a file of the new), or that
// the migration would take past a limit (an entry near MaxLineBytes
// gains its id and parent). data must read with opts as a log of
// version from (see Log.MigratedFrom).
func migrateFile(data []byte, from int, opts *ReadOptions) ([]byte, error) {
	var o ReadOptions
	if opts != nil {
		o = *opts
	}
	lim := o.Limits.withDefaults()
	mig := newMigrator(from)
	first, rest, _ := bytes.Cut(data, []byte{'\n'})
	h, err := mig.header(bytes.TrimSpace(first))
	if err != nil {
		return nil, err
	}
	if int64(len(h)) > lim.MaxLineBytes {
		return nil, lim.lineError(1, int64(len(h)))
	}
	out := make([]byte, 0, len(data)+len(data)/8+64)
	out = append(append(out, h...), '\n')
	for n := 2; len(rest) > 0; n++ {
		line, more, nl := bytes.Cut(rest, []byte{'\n'})
		rest = more
		if int64(len(line)) > lim.MaxLineBytes {
			return nil, lim.lineError(n, int64(len(line)))
		}
		// As the reader does (logParser.entryLine): what follows the
		// last zero byte is the line, the zeros before it are kept for
		// the reader to report again (and mig.entry drops a marker).
		zeros, body := splitZeros(line)
		if v := bytes.TrimSpace(body); len(v) > 0 {
			if m, err := mig.entry(v); err == nil {
				if _, err := parseEntryMode(m, !o.Strict); err == nil {
					if k := int64(len(zeros) + len(m)); k > lim.MaxLineBytes {
						return nil, lim.lineError(n, k)
					}
					out = append(out, zeros...)
					out = append(append(out, m...), '\n')
					continue
				}
			}
		}
		out = append(out, line...)
		if nl {
			out = append(out, '\n')
		}
	}
	if int64(len(out)) > lim.MaxLogBytes {
		return nil, &LimitError{What: "log", Size: int64(len(out)), Limit: lim.MaxLogBytes}
	}
	return out, nil
}
