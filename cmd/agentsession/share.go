package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"

	session "github.com/agentsession/session"
	"github.com/agentsession/session/export"
	"github.com/agentsession/session/importer"
	"github.com/agentsession/session/redact"
)

// The commands that move sessions in and out of a store: export (JSON,
// Markdown, HTML, redacted on request) and import (Claude Code, Codex,
// OpenCode, Dive, our JSON).

var cmdExport = &command{
	name:    "export",
	summary: "write a session as JSON, Markdown or a self-contained HTML page",
	usage:   "[--format json|md|html] [--branch ENTRY] [--redact] [-o FILE] [--json] FILE|ID",
	common:  withJSON | withRoot | withBlobs,
	nargs:   [2]int{1, 1},
	setup: func(fs *flag.FlagSet, c *call) func([]string) int {
		format := fs.String("format", "", "json, md or html; default from the -o file's extension, else json")
		branch := fs.String("branch", "", "export only the path from the root to `ENTRY` (an id, a checkpoint name or a unique prefix)")
		red := fs.Bool("redact", false, "replace API keys, tokens, passwords and home paths first; what was replaced is counted on stderr")
		var out string
		fs.StringVar(&out, "o", "-", "write to `FILE` (\"-\": standard output)")
		fs.StringVar(&out, "out", "-", "the same as -o")
		return func(args []string) int { return c.export(args[0], *format, *branch, *red, out) }
	},
}

// exportFormats maps the --format names (and -o extensions) to writers.
var exportFormats = map[string]func(c *call, w io.Writer, s *session.Session, o *export.Options) error{
	"json": func(c *call, w io.Writer, s *session.Session, o *export.Options) error {
		return export.JSON(c.ctx, w, s, o)
	},
	"md": func(c *call, w io.Writer, s *session.Session, o *export.Options) error {
		return export.Markdown(c.ctx, w, s, o)
	},
	"html": func(c *call, w io.Writer, s *session.Session, o *export.Options) error {
		return export.HTML(c.ctx, w, s, o)
	},
}

// formatOf picks the format: --format, else the output's extension,
// else JSON.
func formatOf(format, out string) (string, error) {
	if format == "" {
		switch strings.ToLower(filepath.Ext(out)) {
		case ".md", ".markdown":
			return "md", nil
		case ".html", ".htm":
			return "html", nil
		}
		return "json", nil
	}
	f := strings.ToLower(format)
	if f == "markdown" {
		f = "md"
	}
	if exportFormats[f] == nil {
		return "", fmt.Errorf("unknown --format %q: json, md or html", format)
	}
	return f, nil
}

func (c *call) export(arg, format, branch string, red bool, out string) int {
	f, err := formatOf(format, out)
	if err != nil {
		return c.usageError("%v", err)
	}
	// --json: what goes to standard output is JSON. To standard output
	// that is the export itself, in the json format; written to a file,
	// the export is described. JSON and Markdown or HTML cannot share
	// standard output.
	toStdout := out == "-" || out == ""
	if c.json && toStdout && f != "json" {
		return c.usageError("--json prints JSON, and --format %s without -o would print %s to standard output: "+
			"write it to -o FILE (--json then describes the file), or drop --json", f, map[string]string{"md": "Markdown", "html": "HTML"}[f])
	}
	s, _, ok := c.openRead(arg)
	if !ok {
		return exitError
	}
	opts := &export.Options{}
	if branch != "" {
		if opts.Branch, err = resolveEntry(s, branch); err != nil {
			return c.fail("%v", err)
		}
	}
	var rep redact.Report
	if red {
		opts.Redactor, opts.Report = redact.New(nil), &rep
	}
	size, err := writeOut(out, c.stdout, func(w io.Writer) error { return exportFormats[f](c, w, s, opts) })
	if err != nil {
		return c.fail("export: %v", err)
	}
	o := exportJSON{ID: s.ID(), Format: f, Out: out, Bytes: size, Branch: opts.Branch}
	if red {
		o.Redacted = rep.Counts
		if o.Redacted == nil {
			o.Redacted = map[string]int{}
		}
	}
	if c.json && !toStdout {
		return c.printJSON(o)
	}
	if red {
		if rep.Total() == 0 {
			fmt.Fprintln(c.stderr, "redacted: nothing found")
		} else {
			fmt.Fprintf(c.stderr, "redacted %d: %s\n", rep.Total(), countList(rep.Counts))
		}
	}
	if out != "-" {
		fmt.Fprintf(c.stderr, "exported %s to %s (%s, %d bytes)\n", o.ID, out, f, size)
	}
	return exitOK
}

// exportJSON is what export --json prints.
type exportJSON struct {
	ID     string `json:"id"`
	Format string `json:"format"`
	Out    string `json:"out"`
	Bytes  int64  `json:"bytes"`
	Branch string `json:"branch,omitempty"`
	// Redacted counts what --redact replaced, by rule (never what).
	Redacted map[string]int `json:"redacted,omitempty"`
}

// writeOut writes to stdout (out "-") or to the file out, which it
// replaces only once the whole export is written (a temporary file
// beside it, renamed), so a failed export leaves no half file. It
// returns the size of the file.
func writeOut(out string, stdout io.Writer, write func(io.Writer) error) (int64, error) {
	if out == "-" || out == "" {
		return 0, write(stdout) // the size is --json's, which describes a file only
	}
	// An existing -o file keeps its mode, and a symlink its target (the
	// file it names is the one replaced); a new file is the user's only
	// (0600): an export holds a whole conversation.
	var mode os.FileMode = 0o600
	if real, err := filepath.EvalSymlinks(out); err == nil {
		out = real
		if st, err := os.Stat(out); err == nil {
			mode = st.Mode().Perm()
		}
	}
	tmp, err := os.CreateTemp(filepath.Dir(out), "."+filepath.Base(out)+".*.tmp")
	if err != nil {
		return 0, err
	}
	if err := tmp.Chmod(mode); err != nil {
		tmp.Close()
		return 0, err
	}
	defer os.Remove(tmp.Name()) // after the rename, there is nothing to remove
	if err := write(tmp); err != nil {
		tmp.Close()
		return 0, err
	}
	st, err := tmp.Stat()
	if err == nil {
		err = tmp.Close()
	} else {
		tmp.Close()
	}
	if err != nil {
		return 0, err
	}
	return st.Size(), os.Rename(tmp.Name(), out)
}

var cmdImport = &command{
	name:    "import",
	summary: "import sessions of Claude Code, Codex, OpenCode, Dive or an export into the store",
	usage:   "[--from " + formatList("|") + "] [--dry-run] [--json] FILE|DIR...",
	more:    importFormatsHelp,
	common:  withJSON | withRoot,
	nargs:   [2]int{1, -1},
	setup: func(fs *flag.FlagSet, c *call) func([]string) int {
		from := fs.String("from", "", "read every file as `FORMAT` ("+formatList(", ")+"); default: detected per file")
		dry := fs.Bool("dry-run", false, "read and report, write nothing")
		return func(args []string) int { return c.importSessions(args, *from, *dry) }
	},
}

// formatList is the names import --from takes (importer.FormatNames),
// joined by sep; with ", " the last two by " or ".
func formatList(sep string) string {
	var names []string
	for _, f := range importer.FormatNames() {
		names = append(names, string(f))
	}
	if sep == ", " && len(names) > 1 {
		return strings.Join(names[:len(names)-1], sep) + " or " + names[len(names)-1]
	}
	return strings.Join(names, sep)
}

// importFormatsHelp lists, under import's help, the kinds of file the
// importer reads, in the order it tries them (importer.Formats).
func importFormatsHelp() string {
	var b strings.Builder
	b.WriteString("The files it reads, in the order a file's format is detected:\n\n")
	tw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
	for _, f := range importer.Formats() {
		fmt.Fprintf(tw, "    %s\t%s\n", f.Format, f.Reads)
	}
	tw.Flush()
	return strings.TrimRight(b.String(), "\n")
}

// importJSON is one line of import --json: a session imported, skipped
// or a file that failed.
type importJSON struct {
	Status        string         `json:"status"` // "imported", "skipped" or "error"
	ID            string         `json:"id,omitempty"`
	ParentSession string         `json:"parentSession,omitempty"`
	Format        string         `json:"format,omitempty"`
	Source        string         `json:"source"`
	Entries       int            `json:"entries,omitempty"`
	Resumed       int            `json:"resumed,omitempty"` // entries a cut-short import had stored already
	Warnings      []string       `json:"warnings,omitempty"`
	Unknown       map[string]int `json:"unknown,omitempty"`
	Malformed     []string       `json:"malformed,omitempty"`
	Error         string         `json:"error,omitempty"`
}

func (c *call) importSessions(args []string, from string, dry bool) int {
	f := importer.Format(strings.ToLower(from))
	if f != "" && !slices.Contains(importer.FormatNames(), f) {
		return c.usageError("unknown --from %q: %s", from, formatList(", "))
	}
	var store session.Store
	if _, err := os.Stat(c.root); dry && errors.Is(err, fs.ErrNotExist) {
		store = session.NewMemoryStore() // nothing there yet: a dry run creates nothing
	} else {
		if err := os.MkdirAll(c.root, 0o700); err != nil {
			return c.fail("%v", err)
		}
		files, err := session.OpenFileStore(c.root, nil)
		if err != nil {
			return c.fail("%v", err)
		}
		defer files.Close()
		store = files
	}
	prog := c.progress("importing")
	total := &importer.Report{}
	for _, a := range args {
		rep, err := importer.Import(c.ctx, store, a, &importer.Options{
			Format: f, DryRun: dry,
			Progress: func(done, n int) { prog.set("importing "+a, done, n) },
		})
		if rep != nil {
			total.Imported = append(total.Imported, rep.Imported...)
			total.Skipped = append(total.Skipped, rep.Skipped...)
			total.Errors = append(total.Errors, rep.Errors...)
			total.NotImported = append(total.NotImported, rep.NotImported...)
		}
		if err != nil && rep == nil { // else the report lists it
			total.Errors = append(total.Errors, importer.LineError{Path: a, Err: err})
		}
	}
	prog.end()
	return c.printImport(total, dry)
}

func (c *call) printImport(rep *importer.Report, dry bool) int {
	status := exitOK
	switch {
	case len(rep.Errors) > 0:
		status = exitError
	case len(rep.NotImported) > 0:
		status = exitFindings // imported, but a file of the directory was not
	}
	lines := make([]importJSON, 0, len(rep.Imported)+len(rep.Skipped)+len(rep.Errors)+len(rep.NotImported))
	add := func(st string, ss []importer.Session) {
		for _, s := range ss {
			o := importJSON{Status: st, ID: s.ID, ParentSession: s.ParentSession, Format: string(s.Format),
				Source: s.Source, Entries: s.Entries, Resumed: s.Resumed, Warnings: s.Warnings, Unknown: s.Unknown}
			for _, m := range s.Malformed {
				o.Malformed = append(o.Malformed, m.Error())
			}
			lines = append(lines, o)
		}
	}
	add("imported", rep.Imported)
	add("skipped", rep.Skipped)
	for _, e := range rep.Errors {
		lines = append(lines, importJSON{Status: "error", Source: e.Path, Error: errText(e.Err)})
	}
	for _, e := range rep.NotImported {
		lines = append(lines, importJSON{Status: "not-imported", Source: e.Path, Error: errText(e.Err)})
	}
	if c.json {
		for _, l := range lines {
			if err := c.printJSONLine(l); err != nil {
				return exitError
			}
		}
		return status
	}
	verb := "imported"
	if dry {
		verb = "would import"
	}
	for _, l := range lines {
		switch l.Status {
		case "imported":
			resumed := ""
			if l.Resumed > 0 {
				resumed = fmt.Sprintf(", %d of them stored before: the rest appended", l.Resumed)
			}
			fmt.Fprintf(c.stdout, "%s %s (%s, %s%s) from %s\n", verb, cell(l.ID), cell(l.Format), plural(l.Entries, "entry"), resumed, cell(l.Source))
			for _, w := range l.Warnings {
				fmt.Fprintf(c.stderr, "  warning: %s\n", w)
			}
			// Under its session, on stdout: what was read with a
			// repair or not at all, and records of types not modelled.
			for _, m := range l.Malformed {
				fmt.Fprintf(c.stdout, "  reported: %s\n", cell(fmt.Sprint(m)))
			}
			kept, counted := splitUnknown(l.Unknown)
			if len(kept) > 0 {
				fmt.Fprintf(c.stdout, "  kept as custom entries, types it does not model: %s\n", cell(countList(kept)))
			}
			if len(counted) > 0 {
				fmt.Fprintf(c.stdout, "  counted, not stored (the reason in parentheses): %s\n", cell(countList(counted)))
			}
		case "error":
			fmt.Fprintf(c.stderr, "agentsession: %s: %s\n", l.Source, l.Error)
		case "not-imported":
			fmt.Fprintf(c.stderr, "agentsession: not imported: %s: %s\n", l.Source, l.Error)
		}
	}
	fmt.Fprintf(c.stdout, "%s %d, skipped %d (already in the store), errors %d, files not imported %d\n",
		verb, len(rep.Imported), len(rep.Skipped), len(rep.Errors), len(rep.NotImported))
	return status
}

// splitUnknown tells the records kept as custom entries ("codex.x")
// from those only counted, whose names give the reason
// ("codex.user_message (duplicate)"; see importer.Session.Unknown).
func splitUnknown(m map[string]int) (kept, counted map[string]int) {
	kept, counted = map[string]int{}, map[string]int{}
	for k, n := range m {
		if strings.HasSuffix(k, ")") && strings.Contains(k, " (") {
			counted[k] = n
		} else {
			kept[k] = n
		}
	}
	return kept, counted
}

// errText is an error's message without the path the line already names.
func errText(err error) string {
	var le *importer.LineError
	if errors.As(err, &le) && le.Line > 0 {
		return fmt.Sprintf("line %d: %v", le.Line, le.Err)
	}
	return err.Error()
}

// countList prints counts by name: "a 2, b 1", by name.
func countList(m map[string]int) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s %d", k, m[k])
	}
	return strings.Join(parts, ", ")
}
