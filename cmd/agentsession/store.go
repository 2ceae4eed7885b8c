package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	session "github.com/agentsession/session"
)

// The commands on a store and on files as files: ls and migrate.

var cmdLs = &command{
	name:    "ls",
	summary: "list the sessions of a store, most recent first",
	usage:   lsUsage,
	common:  withJSON | withRoot | withLimit | withPager,
	nargs:   [2]int{0, 0},
	setup: func(fs *flag.FlagSet, c *call) func([]string) int {
		cwd := fs.String("cwd", "", "list the sessions of `DIR` (default: the current directory)")
		all := fs.Bool("all", false, "list the sessions of every directory")
		archived := fs.Bool("archived", false, "include archived sessions")
		onlyArchived := fs.Bool("only-archived", false, "list archived sessions only")
		project := fs.String("project", "", "list the sessions of project `ID` only")
		user := fs.String("user", "", "list the sessions of user `NAME` only")
		app := fs.String("app", "", "list the sessions of app `NAME` only")
		meta := metaFlag{}
		fs.Var(meta, "meta", "list the sessions whose metadata has `KEY=VALUE` (repeatable; all must match)")
		since := fs.String("since", "", "list the sessions updated on or after `DATE` (YYYY-MM-DD, local time, or RFC 3339) or within a DURATION before now (90m, 12h, 7d)")
		return func([]string) int {
			if *all && *cwd != "" {
				return c.usageError("--cwd and --all do not go together")
			}
			opts := session.ListOptions{Archived: *archived, OnlyArchived: *onlyArchived, Cwd: *cwd,
				ProjectID: *project, User: *user, App: *app}
			if len(meta) > 0 {
				opts.Metadata = meta
			}
			if *since != "" {
				from, err := parseSinceOrAgo(*since, time.Now())
				if err != nil {
					return c.usageError("--since: %v", err)
				}
				opts.UpdatedAfter = from.Add(-time.Nanosecond) // on or after: the store's is strictly after
			}
			if !*all && opts.Cwd == "" {
				wd, err := os.Getwd()
				if err != nil {
					return c.fail("%v", err)
				}
				opts.Cwd = wd
			}
			return c.ls(opts)
		}
	},
}

const lsUsage = "[--cwd DIR | --all] [--archived | --only-archived] [--project ID] [--user NAME] [--app NAME] [--meta KEY=VALUE]... [--since DATE|DURATION] [--limit N] [--json]"

// metaFlag is ls --meta: KEY=VALUE pairs, each key given once.
type metaFlag map[string]string

func (m metaFlag) String() string {
	keys := slices.Sorted(maps.Keys(m))
	for i, k := range keys {
		keys[i] = k + "=" + m[k]
	}
	return strings.Join(keys, ",")
}

func (m metaFlag) Set(s string) error {
	k, v, ok := strings.Cut(s, "=")
	switch {
	case !ok:
		return fmt.Errorf("%q is not KEY=VALUE", s)
	case k == "":
		return fmt.Errorf("%q has no key", s)
	}
	if old, dup := m[k]; dup && old != v {
		return fmt.Errorf("key %q given twice (%q and %q); no session can match both", k, old, v)
	}
	m[k] = v
	return nil
}

// parseSinceOrAgo reads what parseSince reads (as stats --since does),
// or a duration back from now: a Go duration (90m, 12h) or a number of
// days (7d).
func parseSinceOrAgo(s string, now time.Time) (time.Time, error) {
	if t, err := parseSince(s); err == nil {
		return t, nil
	}
	var d time.Duration
	if n, ok := strings.CutSuffix(s, "d"); ok {
		days, err := strconv.Atoi(n)
		if err != nil || days < 0 {
			return time.Time{}, fmt.Errorf("%q is neither YYYY-MM-DD, an RFC 3339 time nor a duration (90m, 12h, 7d)", s)
		}
		d = time.Duration(days) * 24 * time.Hour
	} else {
		var err error
		if d, err = time.ParseDuration(s); err != nil || d < 0 {
			return time.Time{}, fmt.Errorf("%q is neither YYYY-MM-DD, an RFC 3339 time nor a duration (90m, 12h, 7d)", s)
		}
	}
	return now.Add(-d), nil
}

// lsJSON is what ls --json prints of a session.
type lsJSON struct {
	ID            string            `json:"id"`
	Title         string            `json:"title"`
	TitleDerived  bool              `json:"titleDerived"`
	Cwd           string            `json:"cwd"`
	Created       time.Time         `json:"created"`
	Updated       time.Time         `json:"updated"`
	ParentSession string            `json:"parentSession"`
	Entries       int               `json:"entries"`
	Size          int64             `json:"size"`
	Archived      bool              `json:"archived"`
	ArchivedAt    *time.Time        `json:"archivedAt"`
	Compressed    bool              `json:"compressed"`
	Compacting    *time.Time        `json:"compacting"`
	ProjectID     string            `json:"projectId"`
	AppVersion    string            `json:"appVersion"`
	User          string            `json:"user"`
	App           string            `json:"app"`
	Metadata      map[string]string `json:"metadata"`
	Path          string            `json:"path"`
}

func newLsJSON(info session.SessionInfo, path string) lsJSON {
	md := info.Metadata
	if md == nil {
		md = map[string]string{}
	}
	return lsJSON{ID: info.ID, Title: info.Title, TitleDerived: info.TitleDerived, Cwd: info.Cwd,
		Created: info.Created, Updated: info.Updated, ParentSession: info.ParentSession,
		Entries: info.Entries, Size: info.Size, Archived: info.Archived, ArchivedAt: timeOrNil(info.ArchivedAt),
		Compressed: info.Compressed, Compacting: timeOrNil(info.Compacting), ProjectID: info.ProjectID, AppVersion: info.AppVersion,
		User: info.User, App: info.App, Metadata: md, Path: path}
}

// filtered tells whether opts has filters beyond the directory.
func filtered(opts session.ListOptions) bool {
	return opts.OnlyArchived || opts.ProjectID != "" || opts.User != "" || opts.App != "" ||
		len(opts.Metadata) > 0 || !opts.UpdatedAfter.IsZero()
}

func (c *call) ls(opts session.ListOptions) int {
	if err := c.checkRoot(); err != nil {
		return c.fail("%v", err)
	}
	store, err := session.OpenFileStore(c.root, nil)
	if err != nil {
		return c.fail("%v", err)
	}
	defer store.Close()
	prog := c.progress("listing sessions in " + c.root)
	defer prog.end()
	ctx := context.Background()
	var infos []session.SessionInfo
	opts.Limit = 1000
	for c.limit == 0 || len(infos) <= c.limit {
		p, err := store.List(ctx, opts)
		if err != nil {
			return c.fail("%v", err)
		}
		infos = append(infos, p.Sessions...)
		prog.set("", len(infos), 0)
		if p.Next == "" {
			break
		}
		opts.Cursor = p.Next
	}
	var all []session.SessionInfo // the whole scope, when infos is
	if !filtered(opts) && (c.limit == 0 || len(infos) <= c.limit) {
		all = infos
	}
	scope := opts
	scope.Cursor = ""
	bad, err := c.unlistable(ctx, store, scope, all)
	if err != nil {
		return c.fail("%v", err)
	}
	prog.end()
	for _, b := range bad {
		fmt.Fprintf(c.stderr, "agentsession: warning: %s; left out\n", b)
	}
	more := false
	if n := c.limited(len(infos)); n < len(infos) {
		infos, more = infos[:n], true
	}
	if len(infos) == 0 {
		if !c.json {
			var hints []string
			where := ""
			if opts.Cwd != "" {
				where = " for " + opts.Cwd
				hints = append(hints, "--all lists those of every directory")
			}
			if filtered(opts) {
				where += " that match the filters"
			}
			if !opts.Archived && !opts.OnlyArchived {
				hints = append(hints, "--archived archived ones")
			}
			msg := "no sessions in " + c.root + where
			if len(bad) > 0 {
				msg += fmt.Sprintf(" (%d unreadable left out)", len(bad))
			}
			if len(hints) > 0 {
				msg += "; " + strings.Join(hints, ", ")
			}
			fmt.Fprintf(c.stderr, "agentsession: %s\n", msg)
		}
		return exitOK
	}
	// The PROJECT column is there when a session listed has a project.
	project := slices.ContainsFunc(infos, func(i session.SessionInfo) bool { return i.ProjectID != "" })
	head := []string{"UPDATED", "ID", "ENTRIES", "SIZE", "CWD", "TITLE"}
	if project {
		head = slices.Insert(head, 4, "PROJECT")
	}
	t := c.table(head...)
	if c.term.outTTY && c.term.cols > 0 {
		t.fit(c.term.cols, lsMinTitleWidth) // the title takes what the terminal leaves
	} else {
		t.limit(len(head)-1, lsTitleWidth)
	}
	for _, info := range infos {
		if c.json {
			path, _ := store.Path(info.ID)
			if err := c.printJSONLine(newLsJSON(info, path)); err != nil {
				return c.fail("%v", err)
			}
			continue
		}
		title, st := info.Title, style("")
		if info.Archived {
			title, st = "(archived) "+title, dim
			if info.Compressed {
				title = "(archived, compressed) " + info.Title
			}
		}
		row := []string{info.Updated.Local().Format(time.DateTime), info.ID, fmt.Sprint(info.Entries), size(info.Size), info.Cwd, title}
		if project {
			row = slices.Insert(row, 4, info.ProjectID)
		}
		t.styled(st, row...)
	}
	if !c.json {
		t.flush()
	}
	if more {
		fmt.Fprintf(c.stderr, "agentsession: the first %s shown; --limit 0 shows all\n", plural(len(infos), "session"))
	}
	return exitOK
}

// lsTitleWidth is the most display columns of ls's TITLE column but on
// a terminal of known width, where the title takes what the line leaves
// (lsMinTitleWidth at least): a longer title is cut, with an ellipsis
// (--json gives it whole).
const (
	lsTitleWidth    = 60
	lsMinTitleWidth = 20
)

func size(n int64) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}

var cmdMigrate = &command{
	name:    "migrate",
	summary: "upgrade version 1 and 2 files to version 3 in place",
	usage:   "[--dry-run] [--backup] [--json] FILE|ID...",
	common:  withJSON | withRoot,
	nargs:   [2]int{1, -1},
	setup: func(fs *flag.FlagSet, c *call) func([]string) int {
		dry := fs.Bool("dry-run", false, "say what would be migrated, write nothing")
		backup := fs.Bool("backup", false, "copy each file to FILE.bak before rewriting it")
		return func(args []string) int {
			code := exitOK
			for _, arg := range args {
				if c.migrate(arg, *dry, *backup) != exitOK {
					code = exitError
				}
			}
			return code
		}
	},
}

// migrateJSON is what migrate --json prints of a file.
type migrateJSON struct {
	Path     string `json:"path"`
	From     int    `json:"from"`
	To       int    `json:"to"`
	Migrated bool   `json:"migrated"`
	DryRun   bool   `json:"dryRun"`
	Backup   string `json:"backup"`
	Mode     string `json:"mode"`
}

// migrate migrates one file: session.MigrateFile keeps its mode, and
// makes the backup under the lock it migrates under.
func (c *call) migrate(arg string, dry, backup bool) int {
	path, err := c.locate(arg)
	fail := func(err error) int {
		msg := describe(err, path)
		if c.json {
			c.printJSONLine(struct {
				Path  string `json:"path"`
				Error string `json:"error"`
			}{path, strings.TrimPrefix(msg, path+": ")})
		}
		return c.fail("%s", msg)
	}
	if err != nil {
		return fail(err)
	}
	ctx := context.Background()
	fi, err := os.Stat(path)
	if err != nil {
		return fail(err)
	}
	out := migrateJSON{Path: path, To: session.CurrentVersion, DryRun: dry, Mode: fmt.Sprintf("%04o", fi.Mode().Perm())}
	if out.From, err = session.MigrateFile(ctx, path, &session.MigrateFileOptions{DryRun: true}); err != nil {
		return fail(err)
	}
	if out.From != session.CurrentVersion && !dry {
		from, err := session.MigrateFile(ctx, path, &session.MigrateFileOptions{Backup: backup})
		if errors.Is(err, fs.ErrExist) {
			return fail(fmt.Errorf("backup %s exists; move it away or migrate without --backup", path+".bak"))
		}
		if err != nil {
			return fail(err)
		}
		out.From, out.Migrated = from, from != session.CurrentVersion
		if backup && out.Migrated {
			out.Backup = path + ".bak"
		}
	}
	if c.json {
		if err := c.printJSONLine(out); err != nil {
			return c.fail("%v", err)
		}
		return exitOK
	}
	switch {
	case out.From == session.CurrentVersion:
		fmt.Fprintf(c.stdout, "%s: already version %d, left as it is\n", path, out.From)
	case dry:
		fmt.Fprintf(c.stdout, "%s: would migrate from version %d to %d\n", path, out.From, session.CurrentVersion)
	default:
		fmt.Fprintf(c.stdout, "%s: migrated from version %d to %d, rewritten in place (mode %s kept)", path, out.From, session.CurrentVersion, out.Mode)
		if out.Backup != "" {
			fmt.Fprintf(c.stdout, "; the old file is in %s", out.Backup)
		}
		fmt.Fprintln(c.stdout)
	}
	return exitOK
}
