package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"time"

	session "github.com/agentsession/session"
)

// The commands on a store and on files as files: ls and migrate.

var cmdLs = &command{
	name:    "ls",
	summary: "list the sessions of a store, most recent first",
	usage:   "[--cwd DIR | --all] [--archived] [--limit N] [--json]",
	common:  withJSON | withRoot | withLimit | withPager,
	nargs:   [2]int{0, 0},
	setup: func(fs *flag.FlagSet, c *call) func([]string) int {
		cwd := fs.String("cwd", "", "list the sessions of `DIR` (default: the current directory)")
		all := fs.Bool("all", false, "list the sessions of every directory")
		archived := fs.Bool("archived", false, "include archived sessions")
		return func([]string) int {
			if *all && *cwd != "" {
				return c.usageError("--cwd and --all do not go together")
			}
			opts := session.ListOptions{Archived: *archived, Cwd: *cwd}
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

// lsJSON is what ls --json prints of a session.
type lsJSON struct {
	ID            string     `json:"id"`
	Title         string     `json:"title"`
	Cwd           string     `json:"cwd"`
	Created       time.Time  `json:"created"`
	Updated       time.Time  `json:"updated"`
	ParentSession string     `json:"parentSession"`
	Entries       int        `json:"entries"`
	Size          int64      `json:"size"`
	Archived      bool       `json:"archived"`
	ArchivedAt    *time.Time `json:"archivedAt"`
	Path          string     `json:"path"`
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
	prog.end()
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
			if !opts.Archived {
				hints = append(hints, "--archived archived ones")
			}
			msg := "no sessions in " + c.root + where
			if len(hints) > 0 {
				msg += "; " + strings.Join(hints, ", ")
			}
			fmt.Fprintf(c.stderr, "agentsession: %s\n", msg)
		}
		return exitOK
	}
	t := c.table("UPDATED", "ID", "ENTRIES", "SIZE", "CWD", "TITLE")
	for _, info := range infos {
		if c.json {
			path, _ := store.Path(info.ID)
			if err := c.printJSONLine(lsJSON{info.ID, info.Title, info.Cwd, info.Created, info.Updated,
				info.ParentSession, info.Entries, info.Size, info.Archived, timeOrNil(info.ArchivedAt), path}); err != nil {
				return c.fail("%v", err)
			}
			continue
		}
		title, st := info.Title, style("")
		if info.Archived {
			title, st = "(archived) "+title, dim
		}
		t.styled(st, info.Updated.Local().Format(time.DateTime), info.ID, fmt.Sprint(info.Entries), size(info.Size), info.Cwd, title)
	}
	if !c.json {
		t.flush()
	}
	if more {
		fmt.Fprintf(c.stderr, "agentsession: the first %s shown; --limit 0 shows all\n", plural(len(infos), "session"))
	}
	return exitOK
}

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
