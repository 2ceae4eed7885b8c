package session

import (
	"encoding/json"
	"time"

	"github.com/agentsession/session/internal/jsonx"
)

// The listing index (.index, filestore_list.go) is read whole by every
// new store's first listing: for 10,000 sessions, some 4.5 MB, which
// encoding/json took about 120 ms to decode, more than the rest of the
// listing. decodeIndexFile reads the form saveIndex writes in one pass
// (jsonx), its strings views of the file's bytes; anything else it meets
// (a key it does not know, or in another case, a key given twice, a
// null, a number out of range, a key with escapes) sends the whole file
// to encoding/json, so that what is read is what json.Unmarshal reads
// (FuzzListIndexDecode checks it).

// indexFile is the listing index file's content.
type indexFile struct {
	Version int           `json:"version"`
	Files   []indexRecord `json:"files"`
}

// decodeIndexFile decodes the listing index file data as json.Unmarshal
// into an indexFile does, and returns its version. It calls start, and
// then each for every record in turn; start again if it starts over,
// each's records so far void. The
// record given to each is reused after each returns; its strings and
// raw values may be views of data, which must not be modified
// afterwards.
func decodeIndexFile(data []byte, start func(), each func(r *indexRecord)) (version int, err error) {
	if v, ok := decodeIndexFast(data, start, each); ok {
		return v, nil
	}
	var f indexFile
	if err := json.Unmarshal(data, &f); err != nil {
		return 0, err
	}
	start()
	for k := range f.Files {
		each(&f.Files[k])
	}
	return f.Version, nil
}

// decodeIndexFast is decodeIndexFile for the form saveIndex writes;
// false for anything else.
func decodeIndexFast(data []byte, start func(), each func(r *indexRecord)) (version int, ok bool) {
	c := jsonx.NewCursor(data)
	c.Share = true
	top, ok := c.Object()
	if !ok {
		return 0, false
	}
	var seen uint
	for {
		key, esc, ok := top.Next()
		if !ok {
			break
		}
		if esc {
			return 0, false
		}
		var bit uint
		switch string(key) {
		case "version":
			bit = 1
			n, ok := c.Int()
			if !ok || int64(int(n)) != n {
				return 0, false
			}
			version = int(n)
		case "files":
			bit = 2
			if !decodeIndexRecords(c, start, each) {
				return 0, false
			}
		default:
			return 0, false
		}
		if seen&bit != 0 {
			return 0, false
		}
		seen |= bit
	}
	return version, c.Err() == nil && c.AtEnd()
}

// decodeIndexRecords reads the array of records at c, giving each to
// each.
func decodeIndexRecords(c *jsonx.Cursor, start func(), each func(r *indexRecord)) bool {
	arr, ok := c.Array()
	if !ok {
		return false
	}
	start()
	var r indexRecord
	for arr.Next() {
		r = indexRecord{}
		if !decodeIndexRecord(c, &r) {
			return false
		}
		each(&r)
	}
	return c.Err() == nil
}

// decodeIndexRecord reads one record at c into r.
func decodeIndexRecord(c *jsonx.Cursor, r *indexRecord) bool {
	obj, ok := c.Object()
	if !ok {
		return false
	}
	var seen uint32
	for {
		key, esc, ok := obj.Next()
		if !ok {
			break
		}
		if esc {
			return false
		}
		var bit uint32
		ok = false
		switch string(key) {
		case "path":
			bit = 1 << 0
			r.Path, ok = c.Str()
		case "ino":
			bit = 1 << 1
			var n int64
			if n, ok = c.Int(); ok && n < 0 {
				ok = false
			}
			r.Ino = uint64(n)
		case "size":
			bit = 1 << 2
			r.Size, ok = c.Int()
		case "mtime":
			bit = 1 << 3
			r.Mtime, ok = c.Int()
		case "end":
			bit = 1 << 4
			r.End, ok = c.Int()
		case "lines":
			bit = 1 << 5
			r.Lines, ok = indexInt(c)
		case "ok":
			bit = 1 << 6
			r.OK, ok = c.Bool()
		case "id":
			bit = 1 << 7
			r.ID, ok = c.Str()
		case "cwd":
			bit = 1 << 8
			r.Cwd, ok = c.Str()
		case "created":
			bit = 1 << 9
			ok = indexTime(c, &r.Created)
		case "parent":
			bit = 1 << 10
			r.Parent, ok = c.Str()
		case "header":
			bit = 1 << 11
			r.Header, ok = c.Str()
		case "meta":
			bit = 1 << 12
			if c.Kind() != jsonx.KindNull {
				// json.RawMessage keeps the value's bytes as they are.
				r.Meta = c.Skip()
				ok = r.Meta != nil
			}
		case "fold":
			bit = 1 << 13
			ok = decodeIndexFold(c, &r.Fold)
		case "entries":
			bit = 1 << 14
			r.Entries, ok = indexInt(c)
		case "updated":
			bit = 1 << 15
			ok = indexTime(c, &r.Updated)
		case "archived":
			bit = 1 << 16
			ok = indexTime(c, &r.Archived)
		case "compressed":
			bit = 1 << 17
			r.Compressed, ok = c.Bool()
		}
		if !ok || seen&bit != 0 {
			return false
		}
		seen |= bit
	}
	return c.Err() == nil
}

// decodeIndexFold reads a record's InfoFold at c into f.
func decodeIndexFold(c *jsonx.Cursor, f *InfoFold) bool {
	obj, ok := c.Object()
	if !ok {
		return false
	}
	var seen uint
	for {
		key, esc, ok := obj.Next()
		if !ok {
			break
		}
		if esc {
			return false
		}
		var bit uint
		ok = false
		switch string(key) {
		case "name":
			bit = 1 << 0
			f.Name, ok = c.Str()
		case "firstUser":
			bit = 1 << 1
			f.FirstUser, ok = c.Str()
		case "projectId":
			bit = 1 << 2
			var s string
			if s, ok = c.Str(); ok {
				f.ProjectID = &s
			}
		case "appVersion":
			bit = 1 << 3
			var s string
			if s, ok = c.Str(); ok {
				f.AppVersion = &s
			}
		case "metadata":
			bit = 1 << 4
			ok = decodeIndexMetadata(c, f)
		}
		if !ok || seen&bit != 0 {
			return false
		}
		seen |= bit
	}
	return c.Err() == nil
}

// decodeIndexMetadata reads a fold's metadata at c into f.Metadata: a
// null value (a key removed) as a nil pointer.
func decodeIndexMetadata(c *jsonx.Cursor, f *InfoFold) bool {
	obj, ok := c.Object()
	if !ok {
		return false
	}
	f.Metadata = map[string]*string{}
	for {
		key, esc, ok := obj.Next()
		if !ok {
			break
		}
		if esc {
			return false
		}
		k := string(key)
		if c.Null() {
			f.Metadata[k] = nil
			continue
		}
		v, ok := c.Str()
		if !ok {
			return false
		}
		f.Metadata[k] = &v
	}
	return c.Err() == nil
}

// indexInt reads an integer that fits an int.
func indexInt(c *jsonx.Cursor) (int, bool) {
	n, ok := c.Int()
	if !ok || int64(int(n)) != n {
		return 0, false
	}
	return int(n), true
}

// indexTime reads a time as json.Unmarshal does (time.Time's
// UnmarshalJSON of the value's bytes); a null is left to encoding/json.
func indexTime(c *jsonx.Cursor, t *time.Time) bool {
	if c.Kind() != jsonx.KindString {
		return false
	}
	raw := c.Skip()
	return raw != nil && t.UnmarshalJSON(raw) == nil
}
