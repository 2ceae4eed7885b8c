package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"text/tabwriter"
	"time"

	session "github.com/agentsession/session"
)

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

func cmdLs(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("agentsession ls", flag.ContinueOnError)
	fs.SetOutput(stderr)
	root := fs.String("root", defaultRoot(), "the FileStore root")
	cwd := fs.String("cwd", "", "list the sessions of this directory (default: the current one)")
	all := fs.Bool("all", false, "list the sessions of every directory")
	archived := fs.Bool("archived", false, "include archived sessions")
	asJSON := fs.Bool("json", false, "print one JSON object per line")
	if rest, err := parseInterspersed(fs, args); err != nil || len(rest) > 0 {
		if err == nil {
			fmt.Fprintf(stderr, "agentsession ls: unexpected argument %q\n%s", rest[0], usage)
		}
		return exitError
	}
	if _, err := os.Stat(*root); err != nil {
		fmt.Fprintf(stderr, "agentsession: %v\n", err)
		return exitError
	}
	opts := session.ListOptions{Archived: *archived, Limit: 1000}
	if !*all {
		opts.Cwd = *cwd
		if opts.Cwd == "" {
			wd, err := os.Getwd()
			if err != nil {
				fmt.Fprintf(stderr, "agentsession: %v\n", err)
				return exitError
			}
			opts.Cwd = wd
		}
	}
	store, err := session.OpenFileStore(*root, nil)
	if err != nil {
		fmt.Fprintf(stderr, "agentsession: %v\n", err)
		return exitError
	}
	defer store.Close()
	ctx := context.Background()
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	if !*asJSON {
		fmt.Fprintln(tw, "UPDATED\tID\tENTRIES\tSIZE\tCWD\tTITLE")
	}
	enc := json.NewEncoder(stdout)
	for {
		p, err := store.List(ctx, opts)
		if err != nil {
			fmt.Fprintf(stderr, "agentsession: %v\n", err)
			return exitError
		}
		for _, info := range p.Sessions {
			if *asJSON {
				_ = enc.Encode(info)
				continue
			}
			title := info.Title
			if info.Archived {
				title = "(archived) " + title
			}
			fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%s\n", info.Updated.Local().Format(time.DateTime), info.ID, info.Entries, size(info.Size), info.Cwd, title)
		}
		if p.Next == "" {
			break
		}
		opts.Cursor = p.Next
	}
	tw.Flush()
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

func cmdMigrate(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("agentsession migrate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dry := fs.Bool("dry-run", false, "say what would be migrated, write nothing")
	files, err := parseInterspersed(fs, args)
	if err != nil {
		return exitError
	}
	if len(files) == 0 {
		fmt.Fprintf(stderr, "agentsession migrate: expected FILE...\n%s", usage)
		return exitError
	}
	code := exitOK
	for _, path := range files {
		from, err := session.MigrateFile(context.Background(), path, *dry)
		switch {
		case err != nil:
			fmt.Fprintf(stderr, "agentsession: %s\n", describe(err, path))
			code = exitError
		case from == session.CurrentVersion:
			fmt.Fprintf(stdout, "%s: already version %d\n", path, from)
		case *dry:
			fmt.Fprintf(stdout, "%s: would migrate from version %d to %d\n", path, from, session.CurrentVersion)
		default:
			fmt.Fprintf(stdout, "%s: migrated from version %d to %d\n", path, from, session.CurrentVersion)
		}
	}
	return code
}
