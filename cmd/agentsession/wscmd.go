package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	session "github.com/agentsession/session"
	"github.com/agentsession/session/workspace"
)

// The workspace commands: snapshots, diff and restore. They read the
// session as the read commands do (nothing is written to it) and the
// snapshots (manifests and file contents) from the blob directory of its
// store, or --blobs DIR. Only restore writes, and only in --dir DIR.

// shortSnap is a snapshot id as the tables print it: the first 12 hex
// digits of its hash, as git shortens.
func shortSnap(id string) string {
	h := strings.TrimPrefix(id, session.BlobPrefix)
	if len(h) > 12 {
		h = h[:12]
	}
	return h
}

// changes says what a snapshot entry changed: "3 files +10 -2".
func changes(w session.WorkspaceSnapshot) string {
	return fmt.Sprintf("%s +%d -%d", plural(w.Files, "file"), w.Additions, w.Deletions)
}

// displayPath is a workspace path as text output prints it: as it is when
// it is printable UTF-8 without quotes or backslashes, else quoted as Go
// quotes strings (every byte kept), as git quotes unusual names.
func displayPath(p string) string {
	if utf8.ValidString(p) && !strings.ContainsAny(p, `"\`) && strings.IndexFunc(p, func(r rune) bool { return !unicode.IsPrint(r) }) < 0 {
		return p
	}
	return strconv.Quote(p)
}

// wsBlobs is where the snapshots of the session file at path are: the
// blob directory of its store (see blobDir), or --blobs DIR.
func (c *call) wsBlobs(path string) *session.BlobDir {
	return blobDir(path, c.blobs)
}

// wsError explains an error of the workspace package: where the blobs
// were looked for when one is missing.
func wsError(err error, blobs *session.BlobDir) error {
	if errors.Is(err, session.ErrNotFound) {
		hint := "it is not in the blob directory " + blobs.Dir()
		if _, serr := os.Stat(blobs.Dir()); errors.Is(serr, fs.ErrNotExist) {
			hint = "there is no blob directory at " + blobs.Dir()
		}
		return fmt.Errorf("%w (%s; --blobs DIR names the one the session's store keeps its blobs in)", err, hint)
	}
	return err
}

// snapshotIn returns the workspace snapshot in force at entry ref (an
// id, a unique prefix or a checkpoint name) of s: the latest recorded on
// the path to it, and the entry that records it.
func snapshotIn(s *session.Session, ref string) (entry string, w session.WorkspaceSnapshot, at session.Entry, err error) {
	if entry, err = resolveEntry(s, ref); err != nil {
		return "", w, at, err
	}
	w, at, ok, err := s.SnapshotAt(entry)
	if err != nil {
		return "", w, at, err
	}
	if !ok {
		return "", w, at, fmt.Errorf("no workspace snapshot at entry %s: its path records none", entry)
	}
	return entry, w, at, nil
}

// firstSnapshot returns the first workspace snapshot recorded on the path
// to entry id, and the entry that records it.
func firstSnapshot(s *session.Session, id string) (session.WorkspaceSnapshot, session.Entry, bool) {
	if id == "" {
		return session.WorkspaceSnapshot{}, session.Entry{}, false
	}
	path, err := s.PathTo(id)
	if err != nil {
		return session.WorkspaceSnapshot{}, session.Entry{}, false
	}
	for _, e := range path {
		if w, ok := session.SnapshotOf(e); ok {
			return w, e, true
		}
	}
	return session.WorkspaceSnapshot{}, session.Entry{}, false
}

// ---- snapshots ----

var cmdSnapshots = &command{
	name:    "snapshots",
	summary: "list the workspace snapshots a session recorded",
	usage:   "[--limit N] [--json] FILE|ID",
	common:  readCommon,
	nargs:   [2]int{1, 1},
	setup: func(fs *flag.FlagSet, c *call) func([]string) int {
		return func(args []string) int {
			s, path, ok := c.openRead(args[0])
			if !ok {
				return exitError
			}
			return c.snapshots(s, path)
		}
	},
}

// snapshotJSON is what snapshots --json prints of a snapshot entry.
type snapshotJSON struct {
	EntryID   string    `json:"entryId"`
	Time      time.Time `json:"time"`
	Kind      string    `json:"kind"`
	Snapshot  string    `json:"snapshot"`
	Previous  string    `json:"previous"`
	Files     int       `json:"files"`
	Additions int       `json:"additions"`
	Deletions int       `json:"deletions"`
	Dir       string    `json:"dir"`
	First     bool      `json:"first"`
	OnPath    bool      `json:"onPath"`
	InForce   bool      `json:"inForce"`
}

func (c *call) snapshots(s *session.Session, file string) int {
	onPath := map[string]bool{}
	inForce := ""
	if leaf := s.LeafID(); leaf != "" {
		path, _ := s.PathTo(leaf) // the leaf is known: no error
		for _, e := range path {
			onPath[e.ID()] = true
		}
		if _, at, ok, _ := s.SnapshotAt(leaf); ok {
			inForce = at.ID()
		}
	}
	var rows []snapshotJSON
	for n := range s.Tree() {
		w, ok := session.SnapshotOf(n.Entry)
		if !ok {
			continue
		}
		first := true
		if p := n.Entry.ParentID(); p != "" {
			_, _, had, _ := s.SnapshotAt(p)
			first = !had
		}
		rows = append(rows, snapshotJSON{n.Entry.ID(), n.Entry.Time(), w.Kind, w.Snapshot, w.Previous,
			w.Files, w.Additions, w.Deletions, w.Dir, first, onPath[n.Entry.ID()], n.Entry.ID() == inForce})
	}
	if len(rows) == 0 && !c.json {
		fmt.Fprintf(c.stderr, "agentsession: no workspace snapshots in %s\n", file)
		return exitOK
	}
	total := len(rows)
	rows = rows[total-c.limited(total):]
	t := c.table("TIME", "ENTRY", "KIND", "SNAPSHOT", "CHANGES", "DIR", "")
	for _, r := range rows {
		if c.json {
			if err := c.printJSONLine(r); err != nil {
				return c.fail("%v", err)
			}
			continue
		}
		when := "-"
		if !r.Time.IsZero() {
			when = r.Time.Local().Format(time.DateTime)
		}
		ch := changes(session.WorkspaceSnapshot{Files: r.Files, Additions: r.Additions, Deletions: r.Deletions})
		if r.First {
			ch = "(first)"
		}
		note, st := "", style("")
		switch {
		case r.InForce:
			note = "<- in force at the leaf"
		case !r.OnPath:
			note, st = "(off the current path)", dim
		}
		t.styled(st, when, r.EntryID, r.Kind, shortSnap(r.Snapshot), ch, r.Dir, note)
	}
	if !c.json {
		t.flush()
	}
	c.truncated(len(rows), total, "snapshot")
	return exitOK
}

// ---- diff ----

// ignoreFlag collects --ignore PATTERN, repeated.
func ignoreFlag(fs *flag.FlagSet) *[]string {
	var pats []string
	fs.Func("ignore", "also ignore what gitignore `PATTERN` matches in DIR (repeatable): the host's workspace Options.Ignore, which the session does not record", func(p string) error {
		pats = append(pats, p)
		return nil
	})
	return &pats
}

var cmdDiff = &command{
	name:    "diff",
	summary: "show how the workspace changed between two entries' snapshots",
	usage:   "[--from ENTRY] [--to ENTRY] [--dir DIR] [--ignore PATTERN]... [--stat] [--json] FILE|ID",
	common:  withJSON | withRoot | withBlobs | withPager,
	nargs:   [2]int{1, 1},
	setup: func(fs *flag.FlagSet, c *call) func([]string) int {
		var a diffArgs
		fs.StringVar(&a.from, "from", "", "compare from the snapshot in force at `ENTRY` (default: the first on the path to --to's entry; \"\": the files in DIR)")
		fs.StringVar(&a.to, "to", "", "compare to the snapshot in force at `ENTRY` (default: the leaf's, or with --dir the files in DIR; \"\": the files in DIR)")
		fs.StringVar(&a.dir, "dir", "", "the workspace's directory `DIR`, to compare a snapshot with its files as they are now")
		fs.BoolVar(&a.stat, "stat", false, "print a line per file (lines added and deleted) and the totals, no diff text")
		ignore := ignoreFlag(fs)
		return func(args []string) int {
			fs.Visit(func(f *flag.Flag) {
				a.fromSet = a.fromSet || f.Name == "from"
				a.toSet = a.toSet || f.Name == "to"
			})
			a.ignore = *ignore
			if a.dir == "" && (a.fromSet && a.from == "" || a.toSet && a.to == "") {
				return c.usageError("an empty ENTRY stands for the files in DIR: it needs --dir DIR")
			}
			return c.diff(args[0], &a)
		}
	},
}

// diffArgs is a diff's command line, and the sides it names.
type diffArgs struct {
	from, to, dir  string
	fromSet, toSet bool // --from, --to given (an empty one: the files in DIR)
	stat           bool
	ignore         []string

	// Each side: the entry named (resolved), the snapshot in force there
	// and the entry that records it; all "" for the files in DIR.
	fromEnt, fromSnap, fromAt string
	toEnt, toSnap, toAt       string
}

// diffJSON is what diff --json prints.
type diffJSON struct {
	Path        string         `json:"path"`
	ID          string         `json:"id"`
	Dir         string         `json:"dir"`
	From        string         `json:"from"`
	To          string         `json:"to"`
	FromEntryID string         `json:"fromEntryId"`
	ToEntryID   string         `json:"toEntryId"`
	Files       []fileDiffJSON `json:"files"`
	Additions   int            `json:"additions"`
	Deletions   int            `json:"deletions"`
}

type fileDiffJSON struct {
	Path      string `json:"path"`
	Status    string `json:"status"`
	OldType   string `json:"oldType"`
	NewType   string `json:"newType"`
	OldMode   string `json:"oldMode"`
	NewMode   string `json:"newMode"`
	Binary    bool   `json:"binary"`
	Additions int    `json:"additions"`
	Deletions int    `json:"deletions"`
	Note      string `json:"note"`
	Unified   string `json:"unified"`
}

// typeName is a manifest type as JSON spells it ("" for a side where the
// path is absent).
func typeName(t workspace.Type) string {
	if t == 0 {
		return ""
	}
	return t.String()
}

// modeName is a mode in octal ("0644"), "" for a side where the path is
// absent.
func modeName(t workspace.Type, m fs.FileMode) string {
	if t == 0 {
		return ""
	}
	return fmt.Sprintf("%04o", m.Perm())
}

// gitMode is a mode as git's diff headers write it.
func gitMode(t workspace.Type, m fs.FileMode) string {
	switch t {
	case workspace.Symlink:
		return "120000"
	case workspace.Dir:
		return "040000"
	}
	return fmt.Sprintf("100%03o", m.Perm())
}

// openWorkspace opens the workspace of dir, with the session's blobs; an
// empty directory of its own for dir "" (a diff of two snapshots reads
// only the blob store). done closes it and removes what was temporary.
func openWorkspace(dir string, blobs session.BlobStore, ignore []string) (w *workspace.Workspace, done func(), err error) {
	cleanup := func() {}
	if dir == "" {
		tmp, err := os.MkdirTemp("", "agentsession-diff-")
		if err != nil {
			return nil, nil, err
		}
		dir, cleanup = tmp, func() { os.RemoveAll(tmp) }
	}
	// One walk at most per command: the watcher would cost more than it
	// saves.
	w, err = workspace.Open(dir, &workspace.Options{Blobs: blobs, Ignore: ignore, NoWatch: true})
	if err != nil {
		cleanup()
		return nil, nil, err
	}
	return w, func() { w.Close(); cleanup() }, nil
}

func (c *call) diff(arg string, a *diffArgs) int {
	s, path, ok := c.openRead(arg)
	if !ok {
		return exitError
	}
	ctx := context.Background()
	failf := func(err error) int { return c.fail("%s: %v", path, err) }

	// The sides: --to first, as --from's default depends on it.
	toFiles := a.toSet && a.to == "" || !a.toSet && a.dir != ""
	if !toFiles {
		ref := a.to
		if !a.toSet {
			if ref = s.LeafID(); ref == "" {
				return failf(errors.New("no workspace snapshots: the session is empty"))
			}
		}
		ent, w, at, err := snapshotIn(s, ref)
		if err != nil {
			return failf(err)
		}
		a.toEnt, a.toSnap, a.toAt = ent, w.Snapshot, at.ID()
	}
	switch {
	case a.fromSet && a.from == "":
	case a.fromSet:
		ent, w, at, err := snapshotIn(s, a.from)
		if err != nil {
			return failf(err)
		}
		a.fromEnt, a.fromSnap, a.fromAt = ent, w.Snapshot, at.ID()
	default:
		along := a.toEnt
		if along == "" {
			along = s.LeafID()
		}
		w, at, ok := firstSnapshot(s, along)
		if !ok {
			where := "on the path to entry " + along
			if along == "" {
				where = "in the session (it is empty)"
			}
			return failf(fmt.Errorf("no workspace snapshot %s", where))
		}
		a.fromEnt, a.fromSnap, a.fromAt = at.ID(), w.Snapshot, at.ID()
	}

	blobs := c.wsBlobs(path)
	w, done, err := openWorkspace(a.dir, blobs, a.ignore)
	if err != nil {
		return c.fail("%v", err)
	}
	defer done()
	res, err := w.Diff(ctx, a.fromSnap, a.toSnap, &workspace.DiffOptions{Unified: !a.stat})
	if err != nil {
		return failf(wsError(err, blobs))
	}
	if c.json {
		out := diffJSON{Path: path, ID: s.ID(), From: res.From, To: res.To, FromEntryID: a.fromEnt, ToEntryID: a.toEnt,
			Files: []fileDiffJSON{}, Additions: res.Additions, Deletions: res.Deletions}
		if a.fromSnap == "" || a.toSnap == "" {
			out.Dir = w.Dir()
		}
		for _, f := range res.Files {
			out.Files = append(out.Files, fileDiffJSON{f.Path, string(f.Status), typeName(f.OldType), typeName(f.NewType),
				modeName(f.OldType, f.OldMode), modeName(f.NewType, f.NewMode), f.Binary, f.Additions, f.Deletions, f.Note, f.Unified})
		}
		return c.printJSON(out)
	}
	side := func(ent, at, snap string) string {
		if snap == "" {
			return "the files in " + w.Dir()
		}
		if ent == at {
			return fmt.Sprintf("entry %s (snapshot %s)", ent, shortSnap(snap))
		}
		return fmt.Sprintf("entry %s (snapshot %s, recorded at %s)", ent, shortSnap(snap), at)
	}
	fmt.Fprintln(c.stdout, c.paint(bold, "workspace from "+side(a.fromEnt, a.fromAt, a.fromSnap)+" to "+side(a.toEnt, a.toAt, a.toSnap)))
	if len(res.Files) == 0 {
		fmt.Fprintln(c.stdout, "no changes")
		return exitOK
	}
	if a.stat {
		c.printStat(res)
		return exitOK
	}
	for _, f := range res.Files {
		c.printFileDiff(&f)
	}
	return exitOK
}

// printFileDiff prints a file's change as git diff does: its header lines
// (with modes), then the unified diff.
func (c *call) printFileDiff(f *workspace.FileDiff) {
	out := c.stdout
	head := []string{"diff --git " + displayPath("a/"+f.Path) + " " + displayPath("b/"+f.Path)}
	switch f.Status {
	case workspace.Added:
		head = append(head, "new file mode "+gitMode(f.NewType, f.NewMode))
	case workspace.Deleted:
		head = append(head, "deleted file mode "+gitMode(f.OldType, f.OldMode))
	default:
		if om, nm := gitMode(f.OldType, f.OldMode), gitMode(f.NewType, f.NewMode); om != nm {
			head = append(head, "old mode "+om, "new mode "+nm)
		}
	}
	if f.Note != "" {
		head = append(head, "# "+f.Note)
	}
	for _, h := range head {
		fmt.Fprintln(out, c.paint(bold, cell(h)))
	}
	inHunk := false
	for line := range strings.SplitAfterSeq(f.Unified, "\n") {
		if line == "" {
			continue
		}
		text := strings.TrimSuffix(line, "\n")
		st := style("")
		switch {
		case strings.HasPrefix(text, "@@"):
			inHunk, st = true, cyan
		case !inHunk:
			st = bold // ---, +++, "Binary files ... differ"
		case strings.HasPrefix(text, "+"):
			st = green
		case strings.HasPrefix(text, "-"):
			st = red
		case strings.HasPrefix(text, `\`):
			st = dim
		}
		fmt.Fprintln(out, c.paint(st, termSafe(text)))
	}
}

// statWidth is the width git's --stat fits its lines in, off a terminal.
const statWidth = 80

// printStat prints git's --stat: " path | 12 +++++-----" per file and
// the summary line.
func (c *call) printStat(res *workspace.DiffResult) {
	type row struct{ name, count string }
	rows := make([]row, len(res.Files))
	nameW, countW, most := 0, 0, 0
	for i, f := range res.Files {
		r := row{name: displayPath(f.Path)}
		switch {
		case f.Binary:
			r.count = "Bin"
		case f.Note != "":
			r.count = "?"
		default:
			r.count = strconv.Itoa(f.Additions + f.Deletions)
			most = max(most, f.Additions+f.Deletions)
		}
		if n := utf8.RuneCountInString(r.name); n > 50 {
			rs := []rune(r.name)
			r.name = "..." + string(rs[len(rs)-47:])
		}
		nameW = max(nameW, utf8.RuneCountInString(r.name))
		countW = max(countW, len(r.count))
		rows[i] = r
	}
	barW := max(statWidth-nameW-countW-5, 10)
	scale := func(n int) int {
		if most <= barW || n == 0 {
			return n
		}
		return max(1, n*barW/most)
	}
	for i, f := range res.Files {
		r := rows[i]
		line := " " + r.name + strings.Repeat(" ", nameW-utf8.RuneCountInString(r.name)) + " | " +
			strings.Repeat(" ", countW-len(r.count)) + r.count
		if !f.Binary && f.Note == "" && f.Additions+f.Deletions > 0 {
			total := scale(f.Additions + f.Deletions)
			adds := scale(f.Additions)
			if adds > total {
				adds = total
			}
			if f.Deletions > 0 && adds == total {
				adds = total - 1
			}
			line += " " + c.paint(green, strings.Repeat("+", adds)) + c.paint(red, strings.Repeat("-", total-adds))
		}
		fmt.Fprintln(c.stdout, line)
	}
	fmt.Fprintln(c.stdout, statSummary(len(res.Files), res.Additions, res.Deletions))
}

// statSummary is git's summary line: " 2 files changed, 3 insertions(+),
// 1 deletion(-)", a zero count left out unless both are.
func statSummary(files, adds, dels int) string {
	s := " " + plural(files, "file") + " changed"
	if adds > 0 || dels == 0 {
		s += ", " + plural(adds, "insertion") + "(+)"
	}
	if dels > 0 || adds == 0 {
		s += ", " + plural(dels, "deletion") + "(-)"
	}
	return s
}

// ---- restore ----

var cmdRestore = &command{
	name:    "restore",
	summary: "bring a directory's files back to the workspace snapshot at an entry",
	usage:   "--to ENTRY --dir DIR [--expect ENTRY] [--ignore PATTERN]... [--dry-run] [--force] [--json] FILE|ID",
	common:  withJSON | withRoot | withBlobs,
	nargs:   [2]int{1, 1},
	setup: func(fs *flag.FlagSet, c *call) func([]string) int {
		var a restoreArgs
		fs.StringVar(&a.to, "to", "", "restore the snapshot in force at `ENTRY` (an id, a unique prefix of one, or a checkpoint name); required")
		fs.StringVar(&a.dir, "dir", "", "the workspace's directory `DIR`, whose files are restored; required")
		fs.StringVar(&a.expect, "expect", "", "check the files against the snapshot in force at `ENTRY` instead of the leaf's (after an earlier restore to ENTRY, say)")
		fs.BoolVar(&a.dry, "dry-run", false, "list what would change, change nothing")
		fs.BoolVar(&a.force, "force", false, "restore even files changed since the snapshot they are checked against, losing those changes")
		ignore := ignoreFlag(fs)
		return func(args []string) int {
			a.ignore = *ignore
			switch {
			case a.to == "":
				return c.usageError("--to ENTRY is required")
			case a.dir == "":
				return c.usageError("--dir DIR is required")
			case a.force && a.expect != "":
				return c.usageError("--expect and --force do not go together")
			}
			return c.restore(args[0], &a)
		}
	},
}

// restoreArgs is a restore's command line.
type restoreArgs struct {
	to, dir, expect string
	ignore          []string
	dry, force      bool
}

// restoreJSON is what restore --json prints.
type restoreJSON struct {
	Path            string        `json:"path"`
	ID              string        `json:"id"`
	Dir             string        `json:"dir"`
	EntryID         string        `json:"entryId"`
	SnapshotEntryID string        `json:"snapshotEntryId"`
	Snapshot        string        `json:"snapshot"`
	Expect          string        `json:"expect"`
	DryRun          bool          `json:"dryRun"`
	Force           bool          `json:"force"`
	Changes         []changeJSON  `json:"changes"`
	Left            []problemJSON `json:"left"`
}

type changeJSON struct {
	Op   string `json:"op"`
	Path string `json:"path"`
}

type problemJSON struct {
	Path   string `json:"path"`
	Reason string `json:"reason"`
}

func (c *call) restore(arg string, a *restoreArgs) int {
	s, path, ok := c.openRead(arg)
	if !ok {
		return exitError
	}
	ctx := context.Background()
	failf := func(err error) int { return c.fail("%s: %v", path, err) }
	ent, want, at, err := snapshotIn(s, a.to)
	if err != nil {
		return failf(err)
	}
	out := restoreJSON{Path: path, ID: s.ID(), EntryID: ent, SnapshotEntryID: at.ID(), Snapshot: want.Snapshot,
		DryRun: a.dry, Force: a.force, Changes: []changeJSON{}, Left: []problemJSON{}}
	// What the files are checked against: the snapshot in force at the
	// leaf (what they held when the agent last recorded them), or at
	// --expect.
	var leafW session.WorkspaceSnapshot
	hasLeaf := false
	if leaf := s.LeafID(); leaf != "" {
		leafW, _, hasLeaf, _ = s.SnapshotAt(leaf)
	}
	against := ""
	switch {
	case a.force:
	case a.expect != "":
		ent, w, _, err := snapshotIn(s, a.expect)
		if err != nil {
			return failf(fmt.Errorf("--expect: %w", err))
		}
		out.Expect, against = w.Snapshot, "the snapshot in force at entry "+ent
	case !hasLeaf:
		return failf(errors.New("no workspace snapshot at the leaf to check the files in DIR against (what they held when last recorded): --expect ENTRY names another, --force restores without the check"))
	default:
		out.Expect, against = leafW.Snapshot, "the snapshot in force at the leaf"
	}
	abs, err := filepath.Abs(a.dir)
	if err != nil {
		return c.fail("%v", err)
	}
	if hasLeaf && filepath.IsAbs(leafW.Dir) && filepath.Clean(leafW.Dir) != abs {
		fmt.Fprintf(c.stderr, "agentsession: warning: the session recorded its workspace in %s, not %s\n", leafW.Dir, abs)
	}
	blobs := c.wsBlobs(path)
	w, done, err := openWorkspace(a.dir, blobs, a.ignore)
	if err != nil {
		return c.fail("%v", err)
	}
	defer done()
	out.Dir = w.Dir()
	res, err := w.Restore(ctx, want.Snapshot, &workspace.RestoreOptions{DryRun: a.dry, Expect: out.Expect, Force: a.force})
	var ce *workspace.ConflictError
	switch {
	case errors.As(err, &ce):
		var b strings.Builder
		fmt.Fprintf(&b, "agentsession: %s: restore refused: %s in %s changed since %s (snapshot %s), and restoring would overwrite or delete them:\n",
			path, plural(len(ce.Paths), "path"), w.Dir(), against, shortSnap(out.Expect))
		for i, p := range ce.Paths {
			if i == maxConflictsShown {
				fmt.Fprintf(&b, "  … and %d more\n", len(ce.Paths)-i)
				break
			}
			fmt.Fprintf(&b, "  %s\n", displayPath(p))
		}
		b.WriteString("Nothing was changed. --force restores them too, losing their changes (--dry-run --force lists what it would do);\n" +
			"if an earlier restore put the files there, --expect ENTRY names the entry it restored.\n")
		io.WriteString(c.stderr, b.String())
		return exitFindings
	case errors.Is(err, workspace.ErrMidRestore):
		return failf(fmt.Errorf("%w; each file is either as it was or as in the snapshot, and running restore again finishes it", err))
	case err != nil:
		return failf(wsError(err, blobs))
	}
	for _, ch := range res.Changes {
		out.Changes = append(out.Changes, changeJSON{string(ch.Op), ch.Path})
	}
	for _, p := range res.Left {
		out.Left = append(out.Left, problemJSON{p.Path, p.Err.Error()})
	}
	if c.json {
		return c.printJSON(out)
	}
	where := fmt.Sprintf("snapshot %s (in force at entry %s)", shortSnap(want.Snapshot), ent)
	switch {
	case len(res.Changes) == 0:
		fmt.Fprintf(c.stdout, "%s already holds %s: nothing to change\n", w.Dir(), where)
	case a.dry:
		fmt.Fprintf(c.stdout, "would restore %s to %s: %s (dry run: nothing changed)\n", w.Dir(), where, plural(len(res.Changes), "change"))
	default:
		fmt.Fprintf(c.stdout, "restored %s to %s: %s\n", w.Dir(), where, plural(len(res.Changes), "change"))
	}
	t := &table{c: c} // no header: a list under the line above
	for _, ch := range res.Changes {
		t.styled(opStyle(ch.Op), "  "+string(ch.Op), displayPath(ch.Path))
	}
	t.flush()
	if len(res.Left) > 0 {
		fmt.Fprintf(c.stdout, "left as they are (%d):\n", len(res.Left))
		for _, p := range res.Left {
			fmt.Fprintf(c.stdout, "  %s: %v\n", displayPath(p.Path), p.Err)
		}
	}
	return exitOK
}

// maxConflictsShown is how many paths a refused restore lists.
const maxConflictsShown = 50

func opStyle(op workspace.Op) style {
	switch op {
	case workspace.OpCreate, workspace.OpMkdir:
		return green
	case workspace.OpDelete, workspace.OpRmdir:
		return red
	case workspace.OpUpdate:
		return yellow
	}
	return ""
}
