package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"strings"
	"text/tabwriter"
)

// The command table and what every command shares: how its flags are
// parsed, how its help is printed, and the exit statuses. To add a
// command, write a *command (see commands) and put it in the table; the
// help, --help, the common flags, the count of arguments and the pager
// come with it.

// Exit statuses.
const (
	exitOK       = 0
	exitFindings = 1 // verify found errors (any finding with --strict)
	exitNoMatch  = 1 // search found no entry, as grep says it
	exitError    = 2 // a usage error, or a file or session that cannot be read
)

// common says which of the flags every command may take a command has.
type common uint

const (
	withJSON  common = 1 << iota // --json: print JSON instead of text
	withRoot                     // --root DIR: the store where ids are looked up
	withBlobs                    // --blobs DIR: where blob references are resolved
	withLimit                    // --limit N: print at most N items
	withPager                    // --no-pager; long output to a terminal is paged
)

// command is one command of the tool.
type command struct {
	name    string
	summary string // one line for the command list, lower case, no period
	usage   string // the synopsis after "agentsession NAME"
	help    string // what --help prints under the usage line: by default the package doc's section "# NAME"
	// more, when set, gives what --help prints after help: what only
	// the program knows when it runs (import: the importer's formats).
	more   func() string
	common common
	// nargs is the least and the most positional arguments (-1: no most).
	nargs [2]int
	// setup declares the command's own flags on fs and returns what runs
	// it with the positional arguments, the flags parsed.
	setup  func(fs *flag.FlagSet, c *call) func(args []string) int
	hidden bool // not listed (bench-open, the child process of bench)
}

// commands is the table of commands, in the order the help lists them;
// filled in init because the help command lists the table.
var commands []*command

func init() {
	commands = []*command{
		cmdContext, cmdTree, cmdVerify, cmdCheckpoints, cmdSnapshots, cmdDiff, cmdLs,
		cmdShow, cmdStats, cmdWatch,
		cmdSearch,
		cmdCompact, cmdFork, cmdRestore, cmdMigrate,
		cmdTitle, cmdLabel, cmdRewind, cmdArchive, cmdUnarchive, cmdDelete, cmdGC,
		cmdExport, cmdImport, cmdMirror,
		cmdBench,
		cmdHelp, cmdVersion, cmdBenchOpen, cmdBenchResume, cmdBenchHog,
	}
	for _, c := range commands {
		if c.help == "" {
			c.help = docSection(c.name)
		}
		if c.more != nil {
			c.help += "\n\n" + c.more()
		}
	}
}

func lookup(name string) *command {
	for _, c := range commands {
		if c.name == name {
			return c
		}
	}
	return nil
}

// call is one run of a command: where it writes, the common flags, and
// the helpers its output goes through (output.go).
type call struct {
	ctx    context.Context // ends when the run is to stop (watch: an interrupt, or a test)
	cmd    *command
	stdout io.Writer
	stderr io.Writer
	term   terminal

	json    bool
	root    string
	rootSet bool // --root was given on the command line
	blobs   string
	limit   int
	noPager bool
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run runs the tool with args, writing to stdout and stderr, and returns
// its exit status.
func run(args []string, stdout, stderr io.Writer) int {
	return runTerm(args, stdout, stderr, detectTerminal(stdout, stderr))
}

// runTerm is run with what is known of the terminal (tests set it).
func runTerm(args []string, stdout, stderr io.Writer, term terminal) int {
	return runContext(context.Background(), args, stdout, stderr, term)
}

// runContext is runTerm until ctx ends (tests stop watch with it).
func runContext(ctx context.Context, args []string, stdout, stderr io.Writer, term terminal) int {
	if len(args) == 0 {
		printMainHelp(stderr)
		return exitError
	}
	name, args := args[0], args[1:]
	switch name {
	case "-h", "-help", "--help":
		printMainHelp(stdout)
		return exitOK
	case "-version", "--version":
		fmt.Fprintf(stdout, "agentsession %s\n", version())
		return exitOK
	}
	if strings.HasPrefix(name, "-") {
		fmt.Fprintf(stderr, "agentsession: unknown flag %s before the command\nRun 'agentsession --help' for usage.\n", name)
		return exitError
	}
	cmd := lookup(name)
	if cmd == nil {
		fmt.Fprintf(stderr, "agentsession: unknown command %q\n", name)
		if near := nearest(name); near != "" {
			fmt.Fprintf(stderr, "Did you mean 'agentsession %s'?\n", near)
		}
		fmt.Fprintln(stderr, "Run 'agentsession --help' for the list of commands.")
		return exitError
	}
	return cmd.run(ctx, args, stdout, stderr, term)
}

// run parses the command's flags and runs it.
func (cmd *command) run(ctx context.Context, args []string, stdout, stderr io.Writer, term terminal) int {
	// Messages on stderr are plain text, and name paths, ids and titles
	// from data: all of it goes through termSafe.
	c := &call{ctx: ctx, cmd: cmd, stdout: stdout, stderr: &safeWriter{stderr}, term: term}
	fs := cmd.flagSet(c)
	runFn := cmd.setup(fs, c)
	pos, err := parseInterspersed(fs, args)
	switch {
	case errors.Is(err, flag.ErrHelp):
		cmd.printHelp(stdout, fs)
		return exitOK
	case err != nil:
		msg := err.Error()
		if f, ok := strings.CutPrefix(msg, "flag provided but not defined: "); ok {
			msg = "unknown flag " + flagName(strings.TrimLeft(f, "-"))
		}
		return c.usageError("%s", msg)
	}
	fs.Visit(func(f *flag.Flag) { c.rootSet = c.rootSet || f.Name == "root" })
	if c.limit < 0 {
		return c.usageError("--limit must be 0 (no limit) or more")
	}
	if len(pos) < cmd.nargs[0] || cmd.nargs[1] >= 0 && len(pos) > cmd.nargs[1] {
		return c.usageError("%s", cmd.argsWanted(len(pos)))
	}
	if cmd.common&withPager == 0 || c.noPager || !term.outTTY {
		return runFn(pos)
	}
	var buf bytes.Buffer
	c.stdout = &buf
	code := runFn(pos)
	page(&buf, stdout, stderr, term)
	return code
}

// flagName is how the help writes a flag: -x, --name.
func flagName(name string) string {
	if len(name) == 1 {
		return "-" + name
	}
	return "--" + name
}

// flagSet returns the command's flag set with the common flags it takes.
func (cmd *command) flagSet(c *call) *flag.FlagSet {
	fs := flag.NewFlagSet("agentsession "+cmd.name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	if cmd.common&withRoot != 0 {
		fs.StringVar(&c.root, "root", defaultRoot(), "the sessions folder (a FileStore root) at `DIR`: where ids are looked up and sessions listed")
	}
	if cmd.common&withBlobs != 0 {
		fs.StringVar(&c.blobs, "blobs", "", "resolve blob references from `DIR` (default: the store's, <root>/.blobs, and <root>/../blobs)")
	}
	if cmd.common&withLimit != 0 {
		fs.IntVar(&c.limit, "limit", 0, "print at most `N` items (0: all)")
	}
	if cmd.common&withPager != 0 {
		fs.BoolVar(&c.noPager, "no-pager", false, "do not page long output to a terminal through $PAGER")
	}
	if cmd.common&withJSON != 0 {
		fs.BoolVar(&c.json, "json", false, "print JSON (its shape is described above)")
	}
	return fs
}

// argsWanted says what is wrong with n positional arguments.
func (cmd *command) argsWanted(n int) string {
	lo, hi := cmd.nargs[0], cmd.nargs[1]
	what := strings.TrimSpace(cmd.usage[strings.LastIndex(cmd.usage, "]")+1:])
	switch {
	case hi == 0:
		return fmt.Sprintf("takes no arguments, got %d", n)
	case lo == hi && lo == 1:
		return "expected one " + what + argsGot(n)
	case n < lo:
		return "expected " + what
	}
	return fmt.Sprintf("expected at most %d arguments, got %d", hi, n)
}

func argsGot(n int) string {
	if n == 0 {
		return ""
	}
	return fmt.Sprintf(", got %d", n)
}

// usageError reports a wrong command line: exit status 2, and where to
// read the usage.
func (c *call) usageError(format string, args ...any) int {
	fmt.Fprintf(c.stderr, "agentsession %s: %s\nusage: agentsession %s %s\nRun 'agentsession %s --help' for more.\n",
		c.cmd.name, fmt.Sprintf(format, args...), c.cmd.name, c.cmd.usage, c.cmd.name)
	return exitError
}

// fail reports an error on one line, "agentsession: ...", and returns
// exit status 2.
func (c *call) fail(format string, args ...any) int {
	fmt.Fprintf(c.stderr, "agentsession: "+format+"\n", args...)
	return exitError
}

// parseInterspersed parses flags placed before or after the positional
// arguments; everything after "--" is positional.
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if n := len(args) - len(rest); n > 0 && args[n-1] == "--" {
			return append(pos, rest...), nil
		}
		if len(rest) == 0 {
			return pos, nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

// printHelp prints the command's help: its usage, what it does and its
// flags.
func (cmd *command) printHelp(w io.Writer, fs *flag.FlagSet) {
	fmt.Fprintf(w, "usage: agentsession %s %s\n\n%s\n", cmd.name, cmd.usage, strings.TrimSpace(cmd.help))
	var b bytes.Buffer
	tw := tabwriter.NewWriter(&b, 0, 4, 3, ' ', 0)
	fs.VisitAll(func(f *flag.Flag) {
		arg, usage := flag.UnquoteUsage(f)
		if arg != "" {
			arg = " " + arg
		}
		switch f.DefValue {
		case "", "0", "false":
		default:
			usage += fmt.Sprintf(" (default %s)", f.DefValue)
		}
		fmt.Fprintf(tw, "  %s%s\t%s\n", flagName(f.Name), arg, usage)
	})
	fmt.Fprintf(tw, "  -h, --help\tprint this help\n")
	tw.Flush()
	fmt.Fprintf(w, "\nflags:\n%s", b.String())
}

// printMainHelp prints the list of commands.
func printMainHelp(w io.Writer) {
	fmt.Fprint(w, `agentsession looks inside, checks and edits the session files of LLM coding
agents (the pi / oh-my-pi JSONL format, versions 1 to 3).

usage: agentsession COMMAND [flags] [FILE|ID...]

commands:
`)
	tw := tabwriter.NewWriter(w, 0, 4, 3, ' ', 0)
	for _, c := range commands {
		if !c.hidden {
			fmt.Fprintf(tw, "  %s\t%s\n", c.name, c.summary)
		}
	}
	tw.Flush()
	fmt.Fprint(w, `
A session is named by its file, or by its id (or a unique prefix of it)
in the store at --root DIR (default $AGENTSESSION_ROOT, else
~/.pi/agent/sessions). An entry is named by its id, a unique prefix of
it, or a checkpoint (label) name. Every command takes -h or --help, and
all but help take --json.

flags:
  -h, --help     print this help
  --version      print the version

Run 'agentsession COMMAND --help' for a command's usage and flags.
`)
}

// nearest is the command whose name is closest to name, if one is close.
func nearest(name string) string {
	best, dist := "", 3
	for _, c := range commands {
		if d := editDistance(name, c.name); !c.hidden && d < dist {
			best, dist = c.name, d
		}
	}
	return best
}

func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}

// version is the module's version as the build recorded it.
func version() string {
	if info, ok := debug.ReadBuildInfo(); ok && info.Main.Version != "" {
		return info.Main.Version
	}
	return "(devel)"
}

var cmdHelp = &command{
	name:    "help",
	summary: "print the list of commands, or a command's help",
	usage:   "[COMMAND]",
	nargs:   [2]int{0, 1},
	setup: func(fs *flag.FlagSet, c *call) func([]string) int {
		return func(args []string) int {
			if len(args) == 0 {
				printMainHelp(c.stdout)
				return exitOK
			}
			cmd := lookup(args[0])
			if cmd == nil {
				return c.usageError("unknown command %q", args[0])
			}
			cc := &call{cmd: cmd}
			fs := cmd.flagSet(cc)
			cmd.setup(fs, cc)
			cmd.printHelp(c.stdout, fs)
			return exitOK
		}
	},
}

var cmdVersion = &command{
	name:    "version",
	summary: "print the version",
	usage:   "[--json]",
	common:  withJSON,
	setup: func(fs *flag.FlagSet, c *call) func([]string) int {
		return func([]string) int {
			if c.json {
				info, _ := debug.ReadBuildInfo()
				gov := ""
				if info != nil {
					gov = info.GoVersion
				}
				return c.printJSON(struct {
					Version   string `json:"version"`
					GoVersion string `json:"goVersion"`
				}{version(), gov})
			}
			fmt.Fprintf(c.stdout, "agentsession %s\n", version())
			return exitOK
		}
	},
}
