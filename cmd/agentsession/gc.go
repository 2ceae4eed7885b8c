package main

import (
	"flag"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	session "github.com/agentsession/session"
)

// gc: the retention policy (session.Sweep) applied to the store at
// --root.

var cmdGC = &command{
	name:    "gc",
	summary: "archive or delete the sessions untouched for a time",
	usage:   "--older-than AGE [--keep N] [--group cwd|user] [--archive-only] [--delete-archived-after AGE] [--include-labeled] [--keep-blobs] [--compress] [--dry-run] [--json]",
	common:  withJSON | withRoot | withBlobs,
	nargs:   [2]int{0, 0},
	setup: func(fs *flag.FlagSet, c *call) func([]string) int {
		older := fs.String("older-than", "", "expire the sessions not updated for `AGE` (30d, 12h)")
		keep := fs.Int("keep", 0, "keep the newest `N` sessions of each group, expired or not")
		group := fs.String("group", "cwd", "the groups of --keep: cwd (working directory) or user")
		archive := fs.Bool("archive-only", false, "archive the expired sessions instead of deleting them")
		archived := fs.String("delete-archived-after", "", "delete the archived sessions neither archived nor updated for `AGE`")
		labeled := fs.Bool("include-labeled", false, "expire sessions with labels or checkpoints too (kept by default)")
		keepBlobs := fs.Bool("keep-blobs", false, "leave the blobs of the deleted sessions in the store")
		compress := fs.Bool("compress", false, "keep every archived session zstd-compressed (reads stay transparent)")
		dry := fs.Bool("dry-run", false, "list what would be archived or deleted, change nothing")
		return func([]string) int {
			p := &session.SweepPolicy{KeepNewest: *keep, ArchiveOnly: *archive, IncludeLabeled: *labeled, KeepBlobs: *keepBlobs,
				Compress: *compress, DryRun: *dry}
			var err error
			if *older == "" && *archived == "" {
				return c.usageError("--older-than (or --delete-archived-after) is required")
			}
			if *older != "" {
				if p.OlderThan, err = parseAge(*older); err != nil {
					return c.usageError("--older-than: %v", err)
				}
			}
			if *archived != "" {
				if p.DeleteArchivedAfter, err = parseAge(*archived); err != nil {
					return c.usageError("--delete-archived-after: %v", err)
				}
			}
			if *keep < 0 {
				return c.usageError("--keep: %d is negative", *keep)
			}
			switch *group {
			case "cwd":
			case "user":
				p.GroupBy = session.GroupByUser
			default:
				return c.usageError("--group: %q is neither cwd nor user", *group)
			}
			return c.gc(p)
		}
	},
}

// parseAge reads a positive duration: a Go duration (90m, 12h) or a
// number of days (30d).
func parseAge(s string) (time.Duration, error) {
	if n, ok := strings.CutSuffix(s, "d"); ok {
		if days, err := strconv.Atoi(n); err == nil && days > 0 {
			return time.Duration(days) * 24 * time.Hour, nil
		}
	} else if d, err := time.ParseDuration(s); err == nil && d > 0 {
		return d, nil
	}
	return 0, fmt.Errorf("%q is no positive duration (90m, 12h, 30d)", s)
}

// gcJSON is what gc --json prints.
type gcJSON struct {
	DryRun   bool     `json:"dryRun"`
	Listed   int      `json:"listed"`
	Deleted  []string `json:"deleted"`
	Archived []string `json:"archived"`
	// Compressed lists the archived sessions compressed (--compress).
	Compressed []string     `json:"compressed"`
	Kept       []gcKeptJSON `json:"kept"`
	Skipped    []string     `json:"skipped"`
	Blobs      int          `json:"blobs"`
	Errors     []gcErrJSON  `json:"errors"`
}

type gcKeptJSON struct {
	ID     string `json:"id"`
	Reason string `json:"reason"`
}

type gcErrJSON struct {
	ID    string `json:"id"`
	Error string `json:"error"`
}

func (c *call) gc(p *session.SweepPolicy) int {
	if err := c.checkRoot(); err != nil {
		return c.fail("%v", err)
	}
	var opts *session.FileStoreOptions
	if c.blobs != "" {
		opts = &session.FileStoreOptions{BlobDir: c.blobs}
	}
	store, err := session.OpenFileStore(c.root, opts)
	if err != nil {
		return c.fail("%v", err)
	}
	defer store.Close()
	prog := c.progress("gc " + c.root)
	p.Progress = func(done, total int) { prog.set("", done, total) }
	res, err := session.Sweep(c.ctx, store, p)
	prog.end()
	if res == nil {
		return c.fail("%v", err)
	}
	out := gcJSON{DryRun: p.DryRun, Listed: res.Listed, Deleted: res.Deleted, Archived: res.Archived, Compressed: res.Compressed,
		Kept: []gcKeptJSON{}, Skipped: res.Skipped, Blobs: res.Blobs, Errors: []gcErrJSON{}}
	for _, k := range res.Kept {
		out.Kept = append(out.Kept, gcKeptJSON(k))
	}
	for id, e := range res.Errors {
		out.Errors = append(out.Errors, gcErrJSON{id, e.Error()})
	}
	slices.SortFunc(out.Errors, func(a, b gcErrJSON) int { return strings.Compare(a.ID, b.ID) })
	for _, l := range []*[]string{&out.Deleted, &out.Archived, &out.Compressed, &out.Skipped} {
		if *l == nil {
			*l = []string{}
		}
	}
	code := exitOK
	if err != nil || len(out.Errors) > 0 {
		code = exitError
	}
	if c.json {
		c.printJSON(out)
	} else {
		c.printGC(out)
	}
	for _, e := range out.Errors {
		fmt.Fprintf(c.stderr, "agentsession gc: %s: %s\n", e.ID, e.Error)
	}
	if err != nil {
		fmt.Fprintf(c.stderr, "agentsession: %v\n", err)
	}
	return code
}

func (c *call) printGC(out gcJSON) {
	del, arch := "deleted", "archived"
	if out.DryRun {
		del, arch = "would delete", "would archive"
	}
	for _, id := range out.Archived {
		fmt.Fprintf(c.stdout, "%s %s\n", arch, cell(id))
	}
	for _, id := range out.Deleted {
		fmt.Fprintf(c.stdout, "%s %s\n", del, cell(id))
	}
	why := map[string]int{}
	for _, k := range out.Kept {
		why[k.Reason]++
	}
	var reasons []string
	for _, r := range []string{session.KeptYoung, session.KeptNewest, session.KeptLabeled, session.KeptArchived} {
		if why[r] > 0 {
			reasons = append(reasons, fmt.Sprintf("%d %s", why[r], r))
		}
	}
	kept := plural(len(out.Kept), "session") + " kept"
	if len(reasons) > 0 {
		kept += " (" + strings.Join(reasons, ", ") + ")"
	}
	line := fmt.Sprintf("%d listed: %d %s, %d %s, %s", out.Listed, len(out.Deleted), del, len(out.Archived), arch, kept)
	if n := len(out.Compressed); n > 0 {
		if out.DryRun {
			line += fmt.Sprintf(", %d would be compressed", n)
		} else {
			line += fmt.Sprintf(", %d compressed", n)
		}
	}
	if n := len(out.Skipped); n > 0 {
		line += fmt.Sprintf(", %d skipped (changed during the sweep)", n)
	}
	if !out.DryRun {
		line += ", " + plural(out.Blobs, "blob") + " freed"
	}
	if n := len(out.Errors); n > 0 {
		line += fmt.Sprintf(", %d failed", n)
	}
	fmt.Fprintln(c.stdout, line)
}
