package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"

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
// store at --root) through a FileStore: the store of the seed layout the
// file is in, or else a store of its own in a temporary directory, so
// that nothing is created anywhere but in the file. The file is read as a
// session first: one that cannot be read gives the same error as with
// the read commands, and one of an older version errOldVersion, before
// any store is opened. done closes the store and removes what was
// temporary.
func (c *call) openForWrite(ctx context.Context, arg string) (s *session.Session, path string, done func() error, err error) {
	if path, err = c.locate(arg); err != nil {
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

var cmdCompact = &command{
	name:    "compact",
	summary: "summarize old history offline and append a compaction entry",
	usage:   "[--dry-run] [--keep-tokens N] [--instructions TEXT] [--json] FILE|ID",
	common:  withJSON | withRoot,
	nargs:   [2]int{1, 1},
	setup: func(fs *flag.FlagSet, c *call) func([]string) int {
		dry := fs.Bool("dry-run", false, "print the plan, write nothing")
		keep := fs.Int64("keep-tokens", session.DefaultKeepRecentTokens, "keep about `N` tokens of recent history")
		instructions := fs.String("instructions", "", "tell the summarizer what to focus on: `TEXT`")
		return func(args []string) int {
			if *keep <= 0 {
				return c.usageError("--keep-tokens must be positive")
			}
			return c.compact(args[0], *dry, &session.CompactionOptions{KeepRecentTokens: *keep, Instructions: *instructions})
		}
	},
}

// compactOut is what compact --json prints.
type compactOut struct {
	Path             string   `json:"path"`
	ID               string   `json:"id"`
	DryRun           bool     `json:"dryRun"`
	Compacted        bool     `json:"compacted"`
	LeafID           string   `json:"leafId"`
	EntryID          string   `json:"entryId"`
	FirstKeptEntryID string   `json:"firstKeptEntryId"`
	Summarized       int      `json:"summarized"`
	SplitTurn        bool     `json:"splitTurn"`
	TokensBefore     int64    `json:"tokensBefore"`
	TokensKept       int64    `json:"tokensKept"`
	TokensAfter      int64    `json:"tokensAfter"`
	FilesRead        []string `json:"filesRead"`
	FilesModified    []string `json:"filesModified"`
	Reason           string   `json:"reason"`
}

func planJSON(out *compactOut, p *session.CompactionPlan) {
	out.LeafID, out.FirstKeptEntryID = p.LeafID, p.FirstKeptEntryID
	out.Summarized, out.SplitTurn = len(p.Summarize)+len(p.TurnPrefix), p.SplitTurn
	out.TokensBefore, out.TokensKept = p.TokensBefore, p.TokensKept
	out.FilesRead, out.FilesModified = p.Files.Read, p.Files.Modified
}

func (c *call) compact(arg string, dry bool, opts *session.CompactionOptions) int {
	ctx := context.Background()
	out := compactOut{DryRun: dry}
	if dry {
		// Read only, like the read commands: nothing is opened for writing.
		s, path, ok := c.openRead(arg)
		if !ok {
			return exitError
		}
		out.Path, out.ID = path, s.ID()
		plan, err := s.PlanCompaction(opts)
		if err != nil {
			return c.nothingOr(err, &out)
		}
		planJSON(&out, plan)
		if c.json {
			return c.printJSON(out)
		}
		c.printPlan(plan, path)
		return exitOK
	}
	s, path, done, err := c.openForWrite(ctx, arg)
	if err != nil {
		return c.fail("%s", describe(err, path))
	}
	out.Path, out.ID = path, s.ID()
	res, err := s.Compact(ctx, session.ExtractiveSummarizer{}, opts)
	if err == nil {
		err = s.Close()
	}
	err = errors.Join(err, done())
	if err != nil {
		return c.nothingOr(err, &out)
	}
	p := res.Plan
	planJSON(&out, p)
	out.Compacted, out.EntryID, out.TokensAfter = true, res.Entry.ID(), res.TokensAfter
	if c.json {
		return c.printJSON(out)
	}
	fmt.Fprintf(c.stdout, "%s: compacted: %s summarized, history kept from entry %s; context ~%d tokens before, ~%d after; new leaf %s\n",
		path, plural(out.Summarized, "message"), p.FirstKeptEntryID, p.TokensBefore, res.TokensAfter, res.Entry.ID())
	return exitOK
}

// nothingOr reports ErrNothingToCompact as a fact (exit 0), anything else
// as an error.
func (c *call) nothingOr(err error, out *compactOut) int {
	if !errors.Is(err, session.ErrNothingToCompact) {
		return c.fail("%s", describe(err, out.Path))
	}
	out.Reason = "the context fits in what would be kept"
	if out.FilesRead == nil {
		out.FilesRead, out.FilesModified = []string{}, []string{}
	}
	if c.json {
		return c.printJSON(out)
	}
	fmt.Fprintf(c.stdout, "%s: nothing to compact: %s\n", out.Path, out.Reason)
	return exitOK
}

func (c *call) printPlan(p *session.CompactionPlan, path string) {
	w := c.stdout
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
		fmt.Fprintf(w, "  files read:    %s\n", cell(strings.Join(p.Files.Read, " ")))
	}
	if len(p.Files.Modified) > 0 {
		fmt.Fprintf(w, "  files changed: %s\n", cell(strings.Join(p.Files.Modified, " ")))
	}
}

var cmdFork = &command{
	name:    "fork",
	summary: "copy the path to an entry into a new session",
	usage:   "[--at ID] [--title TEXT] [--labels] [--out DIR] [--json] FILE|ID",
	common:  withJSON | withRoot,
	nargs:   [2]int{1, 1},
	setup: func(fs *flag.FlagSet, c *call) func([]string) int {
		at := fs.String("at", "", "end the fork at the entry `ID` (an id, a unique prefix of one, or a checkpoint name; default: the leaf)")
		title := fs.String("title", "", "give the fork the title `TEXT` (default: \"<source title> (fork)\")")
		labels := fs.Bool("labels", false, "copy the labels (checkpoints) of the copied entries")
		out := fs.String("out", "", "write the fork into the store at `DIR` (created if need be)")
		return func(args []string) int {
			return c.fork(args[0], *at, *out, &session.ForkOptions{Title: *title, CopyLabels: *labels})
		}
	},
}

func (c *call) fork(arg, at, out string, opts *session.ForkOptions) int {
	// The source is only read, like with the read commands.
	s, path, ok := c.openRead(arg)
	if !ok {
		return exitError
	}
	if at != "" {
		id, err := resolveEntry(s, at)
		if err != nil {
			return c.fail("%s: %v", path, err)
		}
		opts.At = id
	} else if s.LeafID() == "" {
		return c.fail("%s: nothing to fork: the leaf is before the first entry (name one with --at)", path)
	}
	dest := out
	if dest == "" {
		var inStore bool
		if dest, inStore = layoutRoot(path); !inStore {
			if !c.rootSet {
				return c.fail("%s: not in a session store (<root>/--cwd--/FILE), so the fork has no place beside it; say where it goes with --out DIR (or --root DIR)", path)
			}
			dest = c.root
		}
	}
	store, err := session.OpenFileStore(dest, nil)
	if err != nil {
		return c.fail("%v", err)
	}
	defer store.Close()
	opts.Store = store
	f, err := s.Fork(context.Background(), opts)
	if errors.Is(err, session.ErrNotFound) {
		return c.fail("%s: entry %s not found", path, opts.At)
	}
	if err == nil {
		err = f.Close()
	}
	if err != nil {
		return c.fail("%s: fork: %v", path, err)
	}
	where, err := store.Path(f.ID())
	if err != nil {
		where = "session " + f.ID() + " in " + dest
	}
	if opts.At == "" {
		opts.At = s.LeafID()
	}
	if c.json {
		return c.printJSON(struct {
			Source   string `json:"source"`
			SourceID string `json:"sourceId"`
			At       string `json:"at"`
			Path     string `json:"path"`
			ID       string `json:"id"`
			Title    string `json:"title"`
			Entries  int    `json:"entries"`
		}{path, s.ID(), opts.At, where, f.ID(), f.Title(), f.Len()})
	}
	fmt.Fprintf(c.stdout, "%s: forked %s to %s (session %s)\n", path, plural(f.Len(), "entry"), where, f.ID())
	return exitOK
}
