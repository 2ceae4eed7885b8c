package importer

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"

	session "github.com/agentsession/session"
)

// Format names a session format.
type Format string

// The formats Import reads.
const (
	Claude   Format = "claude"   // Claude Code transcripts (~/.claude/projects/*/*.jsonl)
	Codex    Format = "codex"    // Codex rollout files (~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl)
	OpenCode Format = "opencode" // OpenCode `session export` JSON
	Dive     Format = "dive"     // Dive session files (session.FileStore: <dir>/<id>.jsonl)
	JSON     Format = "json"     // this module's export envelope (package export)
)

// Options configures Import. The zero value (or nil) detects the format
// and writes.
type Options struct {
	// Format, when set, reads every file as this format; "" detects it
	// per file.
	Format Format
	// DryRun reads and reports but writes nothing.
	DryRun bool
	// Progress, when set, is called after each file of a directory with
	// the count done and the total.
	Progress func(done, total int)
}

// LineError is a record that could not be read: its file, its line (1
// based; 0 when the format is not line based) and why.
type LineError struct {
	Path string
	Line int
	Err  error
}

func (e *LineError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d: %v", e.Path, e.Line, e.Err)
	}
	return fmt.Sprintf("%s: %v", e.Path, e.Err)
}

func (e *LineError) Unwrap() error { return e.Err }

// Parsed is one session read from a file, ready to store: what a format
// reader returns.
type Parsed struct {
	Format Format
	Source string // the file it was read from
	Header session.Header
	// Entries in log order: every parent before its children.
	Entries []session.Entry
	// Children are sessions started from this one (subagents); Import
	// stores them after it with Header.ParentSession set to this one.
	Children []*Parsed
	// Unknown counts records of types the reader does not model, by type
	// ("codex.web_search_call"): kept as custom entries of that type. A
	// name that ends with a reason in parentheses ("codex.user_message
	// (duplicate)", "codex.state (bookkeeping)") counts records not
	// stored, for that reason.
	Unknown map[string]int
	// Malformed lists the records that could not be read, and those read
	// only with a repair (a Claude Code line whose parent is missing is
	// attached to the line before it): errors.Is with the reader's
	// sentinel errors tells which.
	Malformed []LineError
	// Blobs holds blob data by reference ("blob:sha256:<hex>") that the
	// entries refer to; Import puts them into the store first when it is
	// a session.BlobStore.
	Blobs map[string][]byte
}

// Session reports one session imported (or, with DryRun, readable).
type Session struct {
	ID            string
	ParentSession string
	Format        Format
	Source        string
	Entries       int
	Unknown       map[string]int
	Malformed     []LineError
	// Resumed is the number of entries that were in the store already
	// (an import that stopped half way, completed by this one).
	Resumed int
	// Blobs is the number of blobs put into the store.
	Blobs int
	// Warnings says what was imported with a loss the caller should know
	// of (blobs the store cannot keep).
	Warnings []string
}

// Report is what Import did.
type Report struct {
	// Imported are the sessions written (or, with DryRun, readable),
	// including those an earlier, interrupted import had begun
	// (Session.Resumed).
	Imported []Session
	// Skipped are sessions already in the store with the same entries:
	// importing twice stores nothing twice.
	Skipped []Session
	// Errors are files, or sessions of a file, that could not be
	// imported: unreadable files, conflicts (*ConflictError), writes that
	// failed half way (*PartialError).
	Errors []LineError
}

// reader is one format: how to recognise its files and read them.
type reader struct {
	format Format
	// sniff tells from the first bytes of a file (up to 64 KiB) whether
	// it is of this format.
	sniff func(head []byte) bool
	// owned reports files that another file of the format reads along
	// (a Claude Code subagent transcript), or that its agent leaves
	// aside (a Dive temporary file), which a directory walk skips.
	owned func(path string) bool
	// read reads one file.
	read func(ctx context.Context, path string) ([]*Parsed, error)
}

// readers, in detection order; each format's file registers itself.
var readers []reader

func register(r reader) { readers = append(readers, r) }

// ErrNoSessions is the error of a directory with no session file of a
// known format under it.
var ErrNoSessions = errors.New("importer: no session file of a known format here")

// ErrNothingRead is the error of a file of which no record could be
// read: it imports as no session at all, not as an empty one.
var ErrNothingRead = errors.New("importer: no record could be read")

// ErrUnknownFormat is returned for a file no reader recognises.
var ErrUnknownFormat = errors.New("importer: unknown session format")

// Import reads the session file at path, or every session file under the
// directory path, into store.
//
// What could not be imported is listed in Report.Errors, one LineError
// per file or session, and the rest imports. For a single file the
// error returned joins them too; for a directory it is only about the
// directory itself (it cannot be walked, ctx ended).
func Import(ctx context.Context, store session.Store, path string, opts *Options) (*Report, error) {
	if opts == nil {
		opts = &Options{}
	}
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	rep := &Report{}
	if !st.IsDir() {
		n := len(rep.Errors)
		importFile(ctx, store, path, opts, rep)
		if len(rep.Errors) > n {
			errs := make([]error, 0, len(rep.Errors)-n)
			for i := n; i < len(rep.Errors); i++ {
				errs = append(errs, &rep.Errors[i])
			}
			return rep, errors.Join(errs...)
		}
		return rep, nil
	}
	// A symlink to the directory is walked (WalkDir does not follow a
	// root that is a link).
	dir, err := filepath.EvalSymlinks(path)
	if err != nil {
		return nil, err
	}
	files, err := walk(dir, opts)
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		err := error(ErrNoSessions)
		if opts.Format != "" {
			err = fmt.Errorf("%w (of format %s)", ErrNoSessions, opts.Format)
		}
		rep.Errors = append(rep.Errors, LineError{Path: path, Err: err})
		return rep, &rep.Errors[0]
	}
	for i, f := range files {
		if err := ctx.Err(); err != nil {
			return rep, err
		}
		importFile(ctx, store, f, opts, rep)
		if opts.Progress != nil {
			opts.Progress(i+1, len(files))
		}
	}
	return rep, nil
}

// walk lists the files under dir that some reader recognises (of the
// format Options.Format names, when it does: in a directory a forced
// format picks among the files, it does not make every file one),
// skipping files another file reads along.
func walk(dir string, opts *Options) ([]string, error) {
	var files []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() || !d.Type().IsRegular() {
			return nil
		}
		r, err := detect(p, "")
		if err != nil || (opts.Format != "" && r.format != opts.Format) || (r.owned != nil && r.owned(p)) {
			return nil // not a session file: a directory holds other things too
		}
		files = append(files, p)
		return nil
	})
	sort.Strings(files)
	return files, err
}

func detect(path string, want Format) (*reader, error) {
	head, err := readHead(path, 64<<10)
	if err != nil {
		return nil, err
	}
	for i := range readers {
		r := &readers[i]
		if want != "" && r.format != want {
			continue
		}
		if want != "" || r.sniff(head) {
			return r, nil
		}
	}
	return nil, ErrUnknownFormat // the caller names the file
}

// Detect returns the format of the session file at path.
func Detect(path string) (Format, error) {
	r, err := detect(path, "")
	if err != nil {
		return "", fmt.Errorf("%s: %w", path, err)
	}
	return r.format, nil
}

func readHead(path string, n int) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	buf := make([]byte, n)
	k, err := io.ReadFull(f, buf)
	if k == 0 && err == io.EOF {
		return nil, fmt.Errorf("%w (the file is empty)", ErrUnknownFormat)
	}
	if err != nil && err != io.ErrUnexpectedEOF {
		return nil, err
	}
	return buf[:k], nil
}

// importFile imports the sessions of one file, noting in rep.Errors what
// could not be imported.
func importFile(ctx context.Context, store session.Store, path string, opts *Options, rep *Report) {
	r, err := detect(path, opts.Format)
	if err != nil {
		rep.Errors = append(rep.Errors, LineError{Path: path, Err: err})
		return
	}
	ps, err := r.read(ctx, path)
	if err != nil {
		rep.Errors = append(rep.Errors, LineError{Path: path, Err: err})
		return
	}
	for _, p := range ps {
		if p.Source == "" {
			p.Source = path
		}
		if len(p.Entries) == 0 && len(p.Malformed) > 0 {
			// Not a session of this format (a file read with a forced
			// format, or one broken through): no empty session for it.
			rep.Errors = append(rep.Errors, LineError{Path: p.Source, Err: fmt.Errorf("%w as %s (%d records reported, the first: %v)",
				ErrNothingRead, r.format, len(p.Malformed), &p.Malformed[0])})
			continue
		}
		if err := write(ctx, store, p, "", opts, rep); err != nil {
			rep.Errors = append(rep.Errors, LineError{Path: p.Source, Err: err})
		}
	}
}
