package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	session "github.com/agentsession/session"
)

// The commands that write: compact appends to the file it is given,
// through a FileStore (its file lock, whole lines, a torn tail cut first);
// fork reads its source like the read commands and creates the new session
// through a FileStore. Neither writes to a file that cannot be read as a
// session, and neither migrates one: compact refuses a file of an older
// format version (run migrate first), fork reads it as it is.

// errOldVersion refuses to append to a file of an older format version:
// opening it for writing would migrate (rewrite) it, which only migrate
// does.
type errOldVersion struct{ version int }

func (e errOldVersion) Error() string {
	return fmt.Sprintf("format version %d: run `agentsession migrate` on it first", e.version)
}

// openForWrite opens the session named by arg (a file, or an id in the
// store at root) through a FileStore: the store of the seed layout the
// file is in, or else a store of its own in a temporary directory, so
// that nothing is created anywhere but in the file. The file is read as a
// session first: one that cannot be read gives the same error as with
// the read commands, and one of an older version errOldVersion, before
// any store is opened. done closes the store and removes what was
// temporary.
func openForWrite(ctx context.Context, arg, root string) (s *session.Session, path string, done func() error, err error) {
	if path, err = locate(arg, root); err != nil {
		return nil, arg, nil, err
	}
	log, err := readLog(path)
	if err != nil {
		return nil, path, nil, err
	}
	if log.MigratedFrom != 0 {
		return nil, path, nil, errOldVersion{log.MigratedFrom}
	}
	var opts *session.FileStoreOptions
	cleanup := func() error { return nil }
	storeRoot, ok := layoutRoot(path)
	if !ok {
		tmp, err := os.MkdirTemp("", "agentsession-")
		if err != nil {
			return nil, path, nil, err
		}
		storeRoot = filepath.Join(tmp, "sessions")
		opts = &session.FileStoreOptions{BlobDir: filepath.Join(tmp, "blobs")}
		cleanup = func() error { return os.RemoveAll(tmp) }
	}
	store, err := session.OpenFileStore(storeRoot, opts)
	if err != nil {
		return nil, path, nil, errors.Join(err, cleanup())
	}
	done = func() error { return errors.Join(store.Close(), cleanup()) }
	if s, err = store.OpenPath(ctx, path); err != nil {
		return nil, path, nil, errors.Join(err, done())
	}
	return s, path, done, nil
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

func cmdCompact(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("agentsession compact", flag.ContinueOnError)
	fs.SetOutput(stderr)
	root := fs.String("root", defaultRoot(), "the FileStore root where session ids are looked up")
	dry := fs.Bool("dry-run", false, "print the plan, write nothing")
	keep := fs.Int64("keep-tokens", session.DefaultKeepRecentTokens, "about how many tokens of recent history to keep")
	instructions := fs.String("instructions", "", "what the summary should focus on")
	files, err := parseInterspersed(fs, args)
	if err != nil {
		return exitError
	}
	if len(files) != 1 {
		fmt.Fprintf(stderr, "agentsession compact: expected one FILE\n%s", usage)
		return exitError
	}
	if *keep <= 0 {
		fmt.Fprintf(stderr, "agentsession compact: --keep-tokens must be positive\n")
		return exitError
	}
	opts := &session.CompactionOptions{KeepRecentTokens: *keep, Instructions: *instructions}
	ctx := context.Background()
	if *dry {
		// Read only, like the read commands: nothing is opened for writing.
		s, path, ok := openRead(files[0], *root, "", stderr)
		if !ok {
			return exitError
		}
		plan, err := s.PlanCompaction(opts)
		if err != nil {
			return nothingOr(err, path, stdout, stderr)
		}
		printPlan(plan, path, stdout)
		return exitOK
	}
	s, path, done, err := openForWrite(ctx, files[0], *root)
	if err != nil {
		fmt.Fprintf(stderr, "agentsession: %s\n", describe(err, path))
		return exitError
	}
	res, err := s.Compact(ctx, session.ExtractiveSummarizer{}, opts)
	if err == nil {
		err = s.Close()
	}
	err = errors.Join(err, done())
	if err != nil {
		return nothingOr(err, path, stdout, stderr)
	}
	p := res.Plan
	fmt.Fprintf(stdout, "%s: compacted: %s summarized, history kept from entry %s; context ~%d tokens before, ~%d after; new leaf %s\n",
		path, plural(len(p.Summarize)+len(p.TurnPrefix), "message"), p.FirstKeptEntryID, p.TokensBefore, res.TokensAfter, res.Entry.ID())
	return exitOK
}

// nothingOr reports ErrNothingToCompact as a fact (exit 0), anything else
// as an error.
func nothingOr(err error, path string, stdout, stderr io.Writer) int {
	if errors.Is(err, session.ErrNothingToCompact) {
		fmt.Fprintf(stdout, "%s: nothing to compact: the context fits in what would be kept\n", path)
		return exitOK
	}
	fmt.Fprintf(stderr, "agentsession: %s\n", describe(err, path))
	return exitError
}

func printPlan(p *session.CompactionPlan, path string, w io.Writer) {
	fmt.Fprintf(w, "%s: would compact at leaf %s\n", path, p.LeafID)
	fmt.Fprintf(w, "  summarize:     %s\n", plural(len(p.Summarize), "message"))
	if p.SplitTurn {
		fmt.Fprintf(w, "  split turn:    %s of the turn cut through, summarized on their own\n", plural(len(p.TurnPrefix), "message"))
	}
	fmt.Fprintf(w, "  keep from:     entry %s\n", p.FirstKeptEntryID)
	fmt.Fprintf(w, "  tokens:        ~%d now, ~%d kept (the summary comes on top)\n", p.TokensBefore, p.TokensKept)
	if p.PreviousSummary != "" {
		fmt.Fprintf(w, "  updates:       the previous compaction's summary (%s)\n", plural(len(p.PreviousSummary), "byte"))
	}
	if len(p.Files.Read) > 0 {
		fmt.Fprintf(w, "  files read:    %s\n", strings.Join(p.Files.Read, " "))
	}
	if len(p.Files.Modified) > 0 {
		fmt.Fprintf(w, "  files changed: %s\n", strings.Join(p.Files.Modified, " "))
	}
}

func cmdFork(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("agentsession fork", flag.ContinueOnError)
	fs.SetOutput(stderr)
	root := fs.String("root", defaultRoot(), "the FileStore root where session ids are looked up, and where a fork of a file outside any store goes")
	at := fs.String("at", "", "the entry the fork ends at (default: the leaf)")
	title := fs.String("title", "", `the fork's title (default: "<source title> (fork)")`)
	labels := fs.Bool("labels", false, "copy the labels (checkpoints) of the copied entries")
	files, err := parseInterspersed(fs, args)
	if err != nil {
		return exitError
	}
	if len(files) != 1 {
		fmt.Fprintf(stderr, "agentsession fork: expected one FILE\n%s", usage)
		return exitError
	}
	// The source is only read, like with the read commands.
	s, path, ok := openRead(files[0], *root, "", stderr)
	if !ok {
		return exitError
	}
	if *at == "" && s.LeafID() == "" {
		fmt.Fprintf(stderr, "agentsession: %s: nothing to fork: the leaf is before the first entry (name one with --at)\n", path)
		return exitError
	}
	storeRoot, ok := layoutRoot(path)
	if !ok {
		storeRoot = *root
	}
	store, err := session.OpenFileStore(storeRoot, nil)
	if err != nil {
		fmt.Fprintf(stderr, "agentsession: %v\n", err)
		return exitError
	}
	defer store.Close()
	ctx := context.Background()
	f, err := s.Fork(ctx, &session.ForkOptions{At: *at, Title: *title, CopyLabels: *labels, Store: store})
	if errors.Is(err, session.ErrNotFound) {
		fmt.Fprintf(stderr, "agentsession: %s: entry %s not found\n", path, *at)
		return exitError
	}
	if err == nil {
		err = f.Close()
	}
	if err != nil {
		fmt.Fprintf(stderr, "agentsession: %s: fork: %v\n", path, err)
		return exitError
	}
	where, err := store.Path(f.ID())
	if err != nil {
		where = "session " + f.ID()
	}
	fmt.Fprintf(stdout, "%s: forked %s to %s (session %s)\n", path, plural(f.Len(), "entry"), where, f.ID())
	return exitOK
}

func cmdCheckpoints(s *session.Session, w io.Writer) int {
	cps := s.Checkpoints()
	if len(cps) == 0 {
		return exitOK
	}
	onPath := map[string]bool{}
	path, _ := s.PathTo(s.LeafID()) // the leaf is known: no error
	for _, e := range path {
		onPath[e.ID()] = true
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TIME\tENTRY\tNAME")
	for _, c := range cps {
		name := c.Name
		if onPath[c.EntryID] {
			name += " (on the current path)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", c.Time.Local().Format(time.DateTime), c.EntryID, name)
	}
	tw.Flush()
	return exitOK
}
