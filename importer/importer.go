package importer

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	session "github.com/agentsession/session"
)

// Format names a session format.
type Format string

// The formats Import reads.
const (
	Claude   Format = "claude"   // Claude Code transcripts (~/.claude/projects/*/*.jsonl)
	Codex    Format = "codex"    // Codex rollout files (~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl)
	OpenCode Format = "opencode" // OpenCode: `opencode export` JSON, its storage tree (up to 1.1), its SQLite database (1.2 on; see RegisterOpenCodeDB)
	Dive     Format = "dive"     // Dive session files (session.FileStore: <dir>/<id>.jsonl)
	JSON     Format = "json"     // this module's export envelope (package export)
)

// Options configures Import. The zero value (or nil) detects the format
// and writes.
type Options struct {
	// Format, when set, reads every file as this format (one of
	// FormatNames; another is refused with ErrUnknownFormat); "" detects
	// it per file.
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
	// NotImported names every file below an imported directory that was
	// not read, and why: no session of a known format
	// (ErrUnknownFormat), another format than the one forced, a symbolic
	// link (ErrSymlink), a FIFO or device (ErrNotRegular), a subagent's
	// file whose session did not read it (ErrNotRead), a file of
	// OpenCode's that is no session's own (ErrOpenCodeNotSession), an
	// OpenCode database no reader is registered for
	// (ErrOpenCodeDatabase). Files read along with a session's file (a
	// subagent's transcript, its meta.json; an OpenCode session's
	// messages and parts) are not in it.
	NotImported []LineError
}

// reader is one kind of file of a format: how to recognise its files
// and read them. The readers, in detection order, are the table of
// formats.go.
type reader struct {
	format Format
	// reads says what files it reads, for a person (FormatInfo.Reads).
	reads string
	// available, when set, tells whether this program can read such a
	// file (a reader of OpenCode's database is registered); a file it
	// cannot read is still recognised, and refused with its reason.
	available func() bool
	// sniff tells from the first bytes of a file (up to 64 KiB) whether
	// it is of this format.
	sniff func(head []byte) bool
	// owned reports, with the reason, files that another file of the
	// format reads along (a Claude Code subagent transcript: ErrNotRead),
	// or that its agent leaves aside (a Dive temporary file), which a
	// directory walk skips; nil for a file of its own.
	owned func(rt *root, rel string) error
	// rootOf, when set, gives the root of a file imported on its own
	// (path resolved, absolute) and the file's path in it: the tree its
	// agent keeps the session's other files in. By default the root is
	// the file's directory.
	rootOf func(path string) (dir, rel string)
	// read reads one file of the root.
	read func(ctx context.Context, rt *root, rel string) ([]*Parsed, error)
	// claims, when set, recognises the files of a tree its agent lays
	// out by their place in the root (OpenCode's storage directory),
	// before any reader looks at their first bytes.
	claims func(rt *root, rel string) bool
	// each, when set, reads in place of read a file that holds many
	// sessions (a database), giving them one at a time (or the error of
	// one), so that each is stored before the next is read.
	each func(ctx context.Context, rt *root, rel string, yield func(*Parsed, error)) error
}

// ErrNoSessions is the error of a directory with no session file of a
// known format under it.
var ErrNoSessions = errors.New("importer: no session file of a known format here")

// ErrNothingRead is the error of a file of which no record could be
// read: it imports as no session at all, not as an empty one.
var ErrNothingRead = errors.New("importer: no record could be read")

// ErrUnknownFormat is returned for a file no reader recognises.
var ErrUnknownFormat = errors.New("importer: unknown session format")

// ErrNotRead is the reason, in Report.NotImported, of a file that a
// session's file reads along (a subagent's transcript) when no session
// read it: its session's file failed, or is not of the format forced.
var ErrNotRead = errors.New("importer: a file read along with its session's file, which did not read it")

// errOtherFormat is the reason of a file of another format than
// Options.Format.
type errOtherFormat struct{ got, want Format }

func (e errOtherFormat) Error() string {
	return fmt.Sprintf("importer: a session file of format %s, not the %s asked for", e.got, e.want)
}

// Import reads the session file at path, or every session file under the
// directory path, into store.
//
// It reads nothing outside what path names: the file and the files its
// agent keeps beside it, or the directory's tree, following no symbolic
// link below it and opening no FIFO or device (see ErrSymlink,
// ErrNotRegular, ErrOutsideRoot).
//
// What could not be imported is listed in Report.Errors, one LineError
// per file or session, and the rest imports; a directory's files that
// were not read at all are named in Report.NotImported with the reason.
// For a single file the error returned joins the errors too; for a
// directory it is only about the directory itself (it cannot be walked,
// ctx ended).
func Import(ctx context.Context, store session.Store, path string, opts *Options) (*Report, error) {
	if opts == nil {
		opts = &Options{}
	}
	if err := checkFormat(opts.Format); err != nil {
		return nil, err
	}
	// What the user named is followed when it is a symbolic link (they
	// named it), and nothing below it.
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return nil, err
	}
	if real, err = filepath.Abs(real); err != nil {
		return nil, err
	}
	st, err := os.Stat(real)
	if err != nil {
		return nil, err
	}
	rep := &Report{}
	if !st.IsDir() {
		return rep, importNamed(ctx, store, path, real, opts, rep)
	}
	rt, err := openRoot(real)
	if err != nil {
		return nil, err
	}
	defer rt.close()
	files, skipped, err := walk(rt, opts)
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		err := error(ErrNoSessions)
		if opts.Format != "" {
			err = fmt.Errorf("%w (of format %s)", ErrNoSessions, opts.Format)
		}
		rep.Errors = append(rep.Errors, LineError{Path: path, Err: err})
		rep.NotImported = notImported(rt, skipped)
		return rep, &rep.Errors[0]
	}
	for i, f := range files {
		if err := ctx.Err(); err != nil {
			return rep, err
		}
		importFile(ctx, store, rt, f.rel, f.r, opts, rep)
		if opts.Progress != nil {
			opts.Progress(i+1, len(files))
		}
	}
	rep.NotImported = notImported(rt, skipped)
	return rep, nil
}

// importNamed imports the one file the user named (path, resolved to
// real).
func importNamed(ctx context.Context, store session.Store, path, real string, opts *Options, rep *Report) error {
	fail := func(err error) error {
		rep.Errors = append(rep.Errors, LineError{Path: path, Err: err})
		return &rep.Errors[len(rep.Errors)-1]
	}
	dir, rel := filepath.Split(real)
	rt, err := openRoot(dir)
	if err != nil {
		return fail(err)
	}
	r, err := detect(rt, rel, opts.Format)
	rt.close()
	if err != nil {
		return fail(err)
	}
	if r.rootOf != nil {
		dir, rel = r.rootOf(real)
	}
	if rt, err = openRoot(dir); err != nil {
		return fail(err)
	}
	defer rt.close()
	n := len(rep.Errors)
	importFile(ctx, store, rt, rel, r, opts, rep)
	if len(rep.Errors) > n {
		errs := make([]error, 0, len(rep.Errors)-n)
		for i := n; i < len(rep.Errors); i++ {
			errs = append(errs, &rep.Errors[i])
		}
		return errors.Join(errs...)
	}
	return nil
}

// found is a session file of a directory and its reader.
type found struct {
	rel string
	r   *reader
}

// walk lists the files below the root that some reader recognises (of
// the format Options.Format names, when it does: in a directory a forced
// format picks among the files, it does not make every file one),
// skipping files another file reads along. skipped is every other file,
// with the reason it is not a session file.
func walk(rt *root, opts *Options) (files []found, skipped []LineError, err error) {
	err = rt.walk(".", func(p string, d fs.DirEntry) error {
		switch {
		case d.IsDir():
			return nil
		case d.Type()&fs.ModeSymlink != 0:
			skipped = append(skipped, LineError{Path: p, Err: ErrSymlink})
			return nil
		case !d.Type().IsRegular():
			skipped = append(skipped, LineError{Path: p, Err: fmt.Errorf("%w (%s)", ErrNotRegular, kindOf(d.Type()))})
			return nil
		}
		r, err := detect(rt, p, "")
		switch {
		case err != nil:
			skipped = append(skipped, LineError{Path: p, Err: err})
		case opts.Format != "" && r.format != opts.Format:
			skipped = append(skipped, LineError{Path: p, Err: errOtherFormat{r.format, opts.Format}})
		default:
			if r.owned != nil {
				if why := r.owned(rt, p); why != nil {
					skipped = append(skipped, LineError{Path: p, Err: why})
					return nil
				}
			}
			files = append(files, found{p, r})
		}
		return nil
	}, func(p string, err error) {
		skipped = append(skipped, LineError{Path: p, Err: err})
	})
	return files, skipped, err
}

// notImported is what a directory import did not read: the files of
// skipped that no reader opened along with a session's file.
func notImported(rt *root, skipped []LineError) []LineError {
	var out []LineError
	for _, s := range skipped {
		if !rt.read(s.Path) {
			out = append(out, LineError{Path: rt.path(s.Path), Err: s.Err})
		}
	}
	return out
}

// detect returns the reader of rel: the one of format want, or the first
// that recognises its head.
func detect(rt *root, rel string, want Format) (*reader, error) {
	// A file a format claims by its place first (its bytes unread), then
	// by its first bytes; with want, a reader of that format that
	// recognises the file, else the first of that format.
	var first *reader
	for i := range readers {
		r := &readers[i]
		if want != "" && r.format != want {
			continue
		}
		if first == nil {
			first = r
		}
		if r.claims != nil && r.claims(rt, rel) {
			return r, nil
		}
	}
	head, err := rt.head(rel, 64<<10)
	if err != nil {
		return nil, err
	}
	for i := range readers {
		r := &readers[i]
		if (want == "" || r.format == want) && r.sniff(head) {
			return r, nil
		}
	}
	if want != "" && first != nil {
		return first, nil
	}
	return nil, ErrUnknownFormat // the caller names the file
}

// Detect returns the format of the session file at path.
func Detect(path string) (Format, error) {
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return "", err
	}
	dir, rel := filepath.Split(real)
	rt, err := openRoot(dir)
	if err != nil {
		return "", err
	}
	defer rt.close()
	r, err := detect(rt, rel, "")
	if err != nil {
		return "", fmt.Errorf("%s: %w", path, err)
	}
	return r.format, nil
}

// importFile imports the sessions of the file rel of rt, noting in
// rep.Errors what could not be imported.
func importFile(ctx context.Context, store session.Store, rt *root, rel string, r *reader, opts *Options, rep *Report) {
	path := rt.path(rel)
	one := func(p *Parsed) {
		if p.Source == "" {
			p.Source = path
		}
		if len(p.Entries) == 0 && len(p.Malformed) > 0 && !ocInfoRead(p.Malformed) {
			// Not a session of this format (a file read with a forced
			// format, or one broken through): no empty session for it.
			rep.Errors = append(rep.Errors, LineError{Path: p.Source, Err: fmt.Errorf("%w as %s (%d records reported, the first: %v)",
				ErrNothingRead, r.format, len(p.Malformed), &p.Malformed[0])})
			return
		}
		if err := write(ctx, store, p, "", opts, rep); err != nil {
			rep.Errors = append(rep.Errors, LineError{Path: p.Source, Err: err})
		}
	}
	if r.each != nil {
		err := r.each(ctx, rt, rel, func(p *Parsed, err error) {
			if err != nil {
				rep.Errors = append(rep.Errors, LineError{Path: path, Err: err})
				return
			}
			one(p)
		})
		if err != nil {
			rep.Errors = append(rep.Errors, LineError{Path: path, Err: err})
		}
		return
	}
	ps, err := r.read(ctx, rt, rel)
	if err != nil {
		rep.Errors = append(rep.Errors, LineError{Path: path, Err: err})
		return
	}
	for _, p := range ps {
		one(p)
	}
}
