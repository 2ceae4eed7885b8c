package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"github.com/agentsession/session/internal/names"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	session "github.com/agentsession/session"
)

// Finding what the command line names: a session by its file, its id or
// a unique prefix of its id (like git's short hashes); an entry by its
// id, a checkpoint name or a unique prefix of its id. Exact matches win
// over prefixes; an ambiguous prefix is an error that lists the
// candidates.

// defaultRoot is where pi keeps its sessions, unless AGENTSESSION_ROOT
// says otherwise.
func defaultRoot() string {
	if r := os.Getenv("AGENTSESSION_ROOT"); r != "" {
		return r
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "."
	}
	return filepath.Join(home, ".pi", "agent", "sessions")
}

// checkRoot fails, helpfully, when the store's root is not there.
func (c *call) checkRoot() error {
	_, err := os.Stat(c.root)
	if errors.Is(err, fs.ErrNotExist) {
		from := "the default"
		switch {
		case c.rootSet:
			from = "from --root"
		case os.Getenv("AGENTSESSION_ROOT") != "":
			from = "from $AGENTSESSION_ROOT"
		}
		return fmt.Errorf("no sessions folder at %s (%s); --root DIR or $AGENTSESSION_ROOT sets it", c.root, from)
	}
	return err
}

// locate returns the file of the session arg names: arg itself when it
// is a file or cannot be an id, else the file of the session of the
// store at --root whose id is arg or, failing that, starts with arg.
// Archived sessions count; of a live and an archived file of one id, the
// live one, as the store takes it.
func (c *call) locate(arg string) (string, error) {
	if _, err := os.Stat(arg); err == nil || session.ValidateID(arg) != nil {
		return arg, nil // a file, or a path whose error the read reports
	}
	// Ids may hold separators ("team/42"): a path-like argument is a
	// session's id only when the store has one of exactly that id.
	pathLike := strings.ContainsRune(arg, '/') || strings.ContainsRune(arg, filepath.Separator) || strings.HasSuffix(arg, ".jsonl")
	if err := c.checkRoot(); err != nil {
		if pathLike {
			return arg, nil
		}
		return arg, fmt.Errorf("no such file, and %w", err)
	}
	files := sessionFiles(c.root)
	if p, ok := files[arg]; ok {
		return p, nil
	}
	if pathLike {
		return arg, nil
	}
	var ids []string
	for id := range files {
		if strings.HasPrefix(id, arg) {
			ids = append(ids, id)
		}
	}
	switch len(ids) {
	case 0:
		return arg, fmt.Errorf("no such file, and no session %s in %s", arg, c.root)
	case 1:
		return files[ids[0]], nil
	}
	return arg, c.ambiguousSessions(arg, ids)
}

// sessionFiles maps the session ids of the store at root to their files,
// from the file names of its layout, as the FileStore finds them.
func sessionFiles(root string) map[string]string {
	files := map[string]string{}
	for _, top := range []string{filepath.Join(root, ".archive"), root} { // live ones last: they win
		dirs, _ := os.ReadDir(top)
		for _, d := range dirs {
			n := d.Name()
			if len(n) < 4 || !strings.HasPrefix(n, "--") || !strings.HasSuffix(n, "--") {
				continue
			}
			names, _ := os.ReadDir(filepath.Join(top, n))
			for _, f := range names {
				if id := idOfFile(f.Name(), filepath.Join(top, n)); id != "" {
					files[id] = filepath.Join(top, n, f.Name())
				}
			}
		}
	}
	return files
}

// idOfFile returns the session id in a seed-layout file name,
// "<timestamp>_<stem>.jsonl" (names.FileStem), or "". A long id's name
// holds a hash of it: the id is then read from the file's header, when
// dir names the file's directory.
func idOfFile(name string, dir ...string) string {
	if strings.HasPrefix(name, ".") || !strings.HasSuffix(name, ".jsonl") {
		return ""
	}
	_, stem, ok := strings.Cut(strings.TrimSuffix(name, ".jsonl"), "_")
	if !ok {
		return ""
	}
	id, hashed, ok := names.ParseStem(stem)
	if !ok || !hashed || len(dir) == 0 {
		return id
	}
	h, err := readHeader(filepath.Join(dir[0], name))
	if err != nil || names.FileStem(h.ID) != stem {
		return ""
	}
	return h.ID
}

// ambiguousError is a prefix that names several things; its message
// lists them, one per line.
type ambiguousError struct {
	what   string // "session id", "entry id"
	prefix string
	rows   [][3]string // id, time, title or description
}

func (e *ambiguousError) Error() string {
	var b bytes.Buffer
	fmt.Fprintf(&b, "%s prefix %q is ambiguous: %d match; give more of it", e.what, e.prefix, len(e.rows))
	tw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
	const most = 10
	for i, r := range e.rows {
		if i == most {
			fmt.Fprintf(tw, "\n  … and %d more", len(e.rows)-most)
			break
		}
		fmt.Fprintf(tw, "\n  %s\t%s\t%s", r[0], r[1], r[2])
	}
	tw.Flush()
	return b.String()
}

// ambiguousSessions describes the sessions ids names from the store's
// listing (title, last update), most recent first.
func (c *call) ambiguousSessions(prefix string, ids []string) error {
	infos := map[string]session.SessionInfo{}
	if store, err := session.OpenFileStore(c.root, nil); err == nil {
		infos = listAll(store)
		store.Close()
	}
	slices.SortFunc(ids, func(a, b string) int {
		if d := infos[b].Updated.Compare(infos[a].Updated); d != 0 {
			return d
		}
		return strings.Compare(a, b)
	})
	e := &ambiguousError{what: "session id", prefix: prefix}
	for _, id := range ids {
		info, ok := infos[id]
		row := [3]string{id, "-", "(not listed: run verify on it)"}
		if ok {
			row = [3]string{id, info.Updated.Local().Format(time.DateTime), info.Title}
			if row[2] == "" {
				row[2] = "(no title)"
			}
			if info.Archived {
				row[2] = "(archived) " + row[2]
			}
		}
		e.rows = append(e.rows, row)
	}
	return e
}

// listAll lists every session of the store, archived ones included, by
// id.
func listAll(store *session.FileStore) map[string]session.SessionInfo {
	out := map[string]session.SessionInfo{}
	opts := session.ListOptions{Archived: true, Limit: 1000}
	for {
		p, err := store.List(context.Background(), opts)
		if err != nil {
			return out
		}
		for _, info := range p.Sessions {
			out[info.ID] = info
		}
		if p.Next == "" {
			return out
		}
		opts.Cursor = p.Next
	}
}

// errEntryNotFound: no entry has the id, prefix or checkpoint name.
type errEntryNotFound struct{ ref string }

func (e errEntryNotFound) Error() string { return fmt.Sprintf("entry %s not found", e.ref) }

// resolveEntry returns the id of the entry ref names in s: the entry of
// that id, else the checkpoint of that name (of several, the last, as
// Session.Rewind takes it), else the one entry whose id starts with ref.
// Leaf markers and shadowed duplicates, which the tree leaves out, are
// not named.
func resolveEntry(s *session.Session, ref string) (string, error) {
	var entries []session.Entry
	shown := map[string]bool{}
	for n := range s.Tree() {
		entries = append(entries, n.Entry)
		shown[n.Entry.ID()] = true
	}
	if shown[ref] {
		return ref, nil
	}
	named := ""
	for _, cp := range s.Checkpoints() {
		if cp.Name == ref && shown[cp.EntryID] {
			named = cp.EntryID
		}
	}
	if named != "" {
		return named, nil
	}
	var match []session.Entry
	for _, e := range entries {
		if strings.HasPrefix(e.ID(), ref) {
			match = append(match, e)
		}
	}
	switch len(match) {
	case 0:
		return "", errEntryNotFound{ref}
	case 1:
		return match[0].ID(), nil
	}
	e := &ambiguousError{what: "entry id", prefix: ref}
	for _, m := range match {
		when := "-"
		if t := m.Time(); !t.IsZero() {
			when = t.Local().Format(time.DateTime)
		}
		e.rows = append(e.rows, [3]string{m.ID(), when, describeEntry(m)})
	}
	return "", e
}

// storeFiles lists the session files of the store at root, archived ones
// included, the most recently changed first.
func (c *call) storeFiles() ([]string, error) {
	if err := c.checkRoot(); err != nil {
		return nil, err
	}
	var files []string
	for _, pattern := range []string{
		filepath.Join(c.root, "--*--", "*.jsonl"),
		filepath.Join(c.root, ".archive", "--*--", "*.jsonl"),
	} {
		m, err := filepath.Glob(pattern)
		if err != nil {
			return nil, err
		}
		files = append(files, m...)
	}
	mtime := map[string]time.Time{}
	for _, f := range files {
		if fi, err := os.Stat(f); err == nil {
			mtime[f] = fi.ModTime()
		}
	}
	slices.SortStableFunc(files, func(a, b string) int { return mtime[b].Compare(mtime[a]) })
	return files, nil
}

// ---- Reading ----

// readLog reads a session file without ever opening it for writing,
// as a FileStore reads its files (session.ReadLogAt): its size is
// checked against the limits before anything is read, and it is read in
// chunks, a compressed one as a stream, never whole, a line over the
// limit never held. What is not a regular file (a pipe) is read as a
// stream, a line at a time (session.ReadLog).
func readLog(path string) (*session.Log, error) {
	f, err := openSessionFile(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	var log *session.Log
	if fi.Mode().IsRegular() {
		log, err = session.ReadLogAt(f, fi.Size(), nil)
	} else {
		log, err = session.ReadLog(f, nil)
	}
	if err != nil {
		return nil, session.WithPath(err, path)
	}
	return log, nil
}

// readHeader reads the header of a session file, and nothing after it.
func readHeader(path string) (session.Header, error) {
	f, err := openSessionFile(path)
	if err != nil {
		return session.Header{}, err
	}
	defer f.Close()
	h, err := session.NewDecoder(f, nil).Header()
	if err != nil {
		return session.Header{}, session.WithPath(err, path)
	}
	return h, nil
}

// load reads the session named by arg, a file or an id, and puts back
// the images its blob references stand for, from --blobs or the blob
// directory of the store the file is in. It writes nothing.
func (c *call) load(arg string) (path string, log *session.Log, unresolved int, err error) {
	path, err = c.locate(arg)
	if err != nil {
		return arg, nil, 0, err
	}
	if log, err = readLog(path); err != nil {
		return path, nil, 0, err
	}
	missing, err := session.ResolveBlobs(context.Background(), log, blobDir(path, c.blobs))
	if err != nil {
		return path, nil, 0, err
	}
	return path, log, len(missing), nil
}

// openRead opens the session named by arg for reading, in memory (see
// load), and warns on stderr about what the reader skipped. It reports
// an error on stderr and false if the session cannot be read.
func (c *call) openRead(arg string) (*session.Session, string, bool) {
	path, log, unresolved, err := c.load(arg)
	if err != nil {
		fmt.Fprintf(c.stderr, "agentsession: %s\n", describe(err, path))
		return nil, path, false
	}
	s := session.OpenLog(log)
	warnSkipped(log, path, unresolved, c.stderr)
	return s, path, true
}

// openSessionFile opens a session file for reading as a FileStore would:
// one in a store's layout (<root>/--cwd--/file) through the root, so that
// every command refuses one that escapes it (a symlinked directory, say)
// as compact, which writes through a FileStore, does.
func openSessionFile(path string) (*os.File, error) {
	root, ok := layoutRoot(path)
	if !ok {
		return os.Open(path)
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	rel, err := filepath.Rel(root, abs)
	if err != nil {
		return nil, err
	}
	r, err := os.OpenRoot(root)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	return r.Open(rel)
}

// layoutRoot returns the root of the FileStore whose layout path is in:
// <root>/--cwd--/file or <root>/.archive/--cwd--/file.
func layoutRoot(path string) (string, bool) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", false
	}
	dir := filepath.Dir(abs)
	base := filepath.Base(dir)
	if len(base) < 4 || !strings.HasPrefix(base, "--") || !strings.HasSuffix(base, "--") {
		return "", false
	}
	root := filepath.Dir(dir)
	if filepath.Base(root) == ".archive" {
		root = filepath.Dir(root)
	}
	return root, true
}

// blobDir is the blob directory of the session file at path: blobs when
// set, else the seed layout's, <root>/../blobs for <root>/--cwd--/file
// and <root>/.archive/--cwd--/file, as the FileStore keeps it (and the
// same place for a file outside any store's layout).
func blobDir(path, blobs string) *session.BlobDir {
	if blobs == "" {
		if root, ok := layoutRoot(path); ok {
			return session.DefaultBlobDir(root)
		} else {
			blobs = filepath.Join(filepath.Dir(filepath.Dir(filepath.Dir(path))), "blobs")
		}
	}
	return session.OpenBlobDir(blobs, nil)
}

// warnSkipped tells on stderr that the output leaves out lines the reader
// skipped, so a reader of the transcript knows it is not the whole file.
func warnSkipped(log *session.Log, path string, unresolved int, stderr io.Writer) {
	var parts []string
	if unresolved > 0 {
		parts = append(parts, plural(unresolved, "image")+" left as blob references (missing or damaged blobs)")
	}
	if n := len(log.Malformed); n > 0 {
		parts = append(parts, plural(n, "malformed line")+" skipped")
	}
	if log.Torn != nil {
		parts = append(parts, fmt.Sprintf("torn last line %d ignored", log.Torn.Line))
	}
	if len(parts) > 0 {
		fmt.Fprintf(stderr, "agentsession: warning: %s: %s; run verify for details\n", path, strings.Join(parts, ", "))
	}
}

// plural is "1 thing" or "n things".
func plural(n int, thing string) string {
	if n == 1 {
		return "1 " + thing
	}
	if strings.HasSuffix(thing, "y") {
		return fmt.Sprintf("%d %sies", n, strings.TrimSuffix(thing, "y"))
	}
	return fmt.Sprintf("%d %ss", n, thing)
}

// describe turns a read error into "FILE: reason".
func describe(err error, path string) string {
	var ce *session.CorruptError
	var ve *session.UnsupportedVersionError
	var le *session.LimitError
	var pe *os.PathError
	var ae *ambiguousError
	switch {
	case errors.As(err, &ae):
		return ae.Error() // it names what it is about
	case errors.As(err, &ce):
		where := ""
		if ce.Line > 0 {
			where = fmt.Sprintf("line %d: ", ce.Line)
		}
		return fmt.Sprintf("%s: not a session file: %s%v", path, where, ce.Err)
	case errors.As(err, &ve):
		return fmt.Sprintf("%s: not a session file: format version %d is newer than this tool supports (%d)", path, ve.Version, session.CurrentVersion)
	case errors.As(err, &le):
		short := *le
		short.Path = ""
		return fmt.Sprintf("%s: %s", path, strings.TrimPrefix(short.Error(), "session: "))
	case errors.As(err, &pe):
		return fmt.Sprintf("%s: %v", path, pe.Err)
	}
	return fmt.Sprintf("%s: %v", path, err)
}
