// Command agentsession looks inside agent session files (the pi /
// oh-my-pi JSONL format, versions 1 to 3). Only migrate, compact and fork
// write; the other commands never write to anything they read.
//
// Usage:
//
//	agentsession context [--leaf ID] [--json] [--for-model] FILE|ID
//	agentsession tree [--compact] FILE|ID
//	agentsession verify FILE|ID... | --all
//	agentsession checkpoints FILE|ID
//	agentsession ls [--root DIR] [--cwd DIR | --all] [--archived] [--json]
//	agentsession compact [--dry-run] [--keep-tokens N] [--instructions TEXT] FILE|ID
//	agentsession fork [--at ID] [--title TEXT] [--labels] FILE|ID
//	agentsession migrate [--dry-run] FILE...
//	agentsession bench [--turns N] [--dir DIR]
//
// A session is named by its file or by its id in
// the FileStore at --root (default $AGENTSESSION_ROOT, else
// ~/.pi/agent/sessions). Images stored as blob references are resolved
// from the blob directory beside the root (or --blobs DIR).
//
// context prints the context rebuilt at the leaf (the last entry, or the
// entry given with --leaf): as a readable transcript, or with --json as one
// JSON object {"leafId", "thinkingLevel", "model", "messages"} whose
// messages are in the seed format's agent-message JSON. --for-model prints
// the list an agent would send to its model, with tool pairing repaired.
//
// tree prints one entry per line, indented by depth, with labels and the
// leaf marked; --compact indents only where the conversation branches.
//
// verify lists problems one per line (malformed lines, a torn tail,
// orphans, duplicate ids, cycles, unpaired tool calls, missing blobs) and
// exits 1 if it found any; --all verifies every session of the store.
//
// checkpoints lists the named entries (labels) to rewind to, oldest
// first, marking those on the current path.
//
// compact summarizes the history of the context at the leaf with the
// offline extractive summarizer (no model) and appends a compaction entry
// keeping about --keep-tokens of recent history; --dry-run prints the plan
// instead and writes nothing. A file of an older format version is
// refused (migrate it first).
//
// fork copies the path from the root to --at (default the leaf) into a
// new session whose header names the source as parentSession, in the store
// the source is in (the root of its seed layout, else --root), and prints
// where it went. The source is only read.
//
// ls lists the sessions of a FileStore root (default $AGENTSESSION_ROOT,
// else ~/.pi/agent/sessions), most recent first: those of the current
// directory, of --cwd DIR, or --all; --archived includes archived ones.
//
// migrate upgrades version 1 and 2 files to version 3 in place, atomically;
// --dry-run only says what it would do.
//
// bench builds the W10k workload (or --turns N turns) in a temporary
// directory (or DIR), measures appends, syncs, opening and listing on
// that disk, and prints one JSON object.
//
// A file that cannot be read as a session gives a one-line error and exit
// status 2; such a file is never written to.
//
// It may import any package of the module; nothing imports it.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"unicode/utf8"

	session "github.com/agentsession/session"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

const usage = `usage:
  agentsession context [--leaf ID] [--json] [--for-model] FILE|ID
  agentsession tree [--compact] FILE|ID
  agentsession verify FILE|ID... | --all
  agentsession checkpoints FILE|ID
  agentsession ls [--root DIR] [--cwd DIR | --all] [--archived] [--json]
  agentsession compact [--dry-run] [--keep-tokens N] [--instructions TEXT] FILE|ID
  agentsession fork [--at ID] [--title TEXT] [--labels] FILE|ID
  agentsession migrate [--dry-run] FILE...
  agentsession bench [--turns N] [--dir DIR]
`

// Exit statuses.
const (
	exitOK       = 0
	exitFindings = 1
	exitError    = 2
)

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return exitError
	}
	cmd, args := args[0], args[1:]
	switch cmd {
	case "ls":
		return cmdLs(args, stdout, stderr)
	case "migrate":
		return cmdMigrate(args, stdout, stderr)
	case "compact":
		return cmdCompact(args, stdout, stderr)
	case "fork":
		return cmdFork(args, stdout, stderr)
	case "bench":
		return cmdBench(args, stdout, stderr)
	case "bench-open": // the child process of bench, not for users
		return cmdBenchOpen(args, stdout, stderr)
	}
	fs := flag.NewFlagSet("agentsession "+cmd, flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		leaf     = new(string)
		asJSON   = new(bool)
		forModel = new(bool)
		compact  = new(bool)
		all      = new(bool)
		root     = fs.String("root", defaultRoot(), "the FileStore root where session ids are looked up")
		blobs    = fs.String("blobs", "", "the blob directory (default: blobs beside the root of a file in the store layout)")
	)
	switch cmd {
	case "context":
		fs.StringVar(leaf, "leaf", "", "build the context at this entry instead of the leaf")
		fs.BoolVar(asJSON, "json", false, "print one JSON object")
		fs.BoolVar(forModel, "for-model", false, "print the messages an agent sends to its model")
	case "tree":
		fs.BoolVar(compact, "compact", false, "indent only where the conversation branches")
	case "verify":
		fs.BoolVar(all, "all", false, "verify every session of the store at --root")
	case "checkpoints":
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return exitOK
	default:
		fmt.Fprintf(stderr, "agentsession: unknown command %q\n%s", cmd, usage)
		return exitError
	}
	args, err := parseInterspersed(fs, args)
	if err != nil {
		return exitError
	}
	if cmd == "verify" {
		if *all {
			if len(args) > 0 {
				fmt.Fprintf(stderr, "agentsession verify: --all takes no FILE\n%s", usage)
				return exitError
			}
			if args, err = storeFiles(*root); err != nil {
				fmt.Fprintf(stderr, "agentsession: %v\n", err)
				return exitError
			}
		} else if len(args) == 0 {
			fmt.Fprintf(stderr, "agentsession verify: expected FILE... or --all\n%s", usage)
			return exitError
		}
		return cmdVerify(args, *root, *blobs, stdout, stderr)
	}
	if len(args) != 1 {
		fmt.Fprintf(stderr, "agentsession %s: expected one FILE\n%s", cmd, usage)
		return exitError
	}
	s, path, ok := openRead(args[0], *root, *blobs, stderr)
	if !ok {
		return exitError
	}
	switch cmd {
	case "context":
		return cmdContext(s, path, *leaf, *asJSON, *forModel, stdout, stderr)
	case "checkpoints":
		return cmdCheckpoints(s, stdout)
	}
	return cmdTree(s, *compact, stdout)
}

// parseInterspersed parses flags placed before or after the positional
// arguments.
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		args = fs.Args()
		if len(args) == 0 {
			return pos, nil
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
}

// readLog reads a session file without ever opening it for writing.
func readLog(path string) (*session.Log, error) {
	f, err := openSessionFile(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(f)
	if err != nil {
		return nil, err
	}
	log, err := session.DecodeLog(data, nil)
	if err != nil {
		return nil, session.WithPath(err, path)
	}
	return log, nil
}

// load reads the session named by arg, a file or the id of a session in
// the store at root, and puts back the images its blob references stand
// for, from blobs or the blob directory of the store the file is in. It
// writes nothing.
func load(arg, root, blobs string) (path string, log *session.Log, unresolved int, err error) {
	path, err = locate(arg, root)
	if err != nil {
		return arg, nil, 0, err
	}
	if log, err = readLog(path); err != nil {
		return path, nil, 0, err
	}
	missing, err := session.ResolveBlobs(context.Background(), log, blobDir(path, blobs))
	if err != nil {
		return path, nil, 0, err
	}
	return path, log, len(missing), nil
}

// openRead opens the session named by arg for reading, in memory (see
// load), and warns on stderr about what the reader skipped. It reports
// an error on stderr and false if the session cannot be read.
func openRead(arg, root, blobs string, stderr io.Writer) (*session.Session, string, bool) {
	path, log, unresolved, err := load(arg, root, blobs)
	if err != nil {
		fmt.Fprintf(stderr, "agentsession: %s\n", describe(err, path))
		return nil, path, false
	}
	s := session.OpenLog(log)
	warnSkipped(log, path, unresolved, stderr)
	return s, path, true
}

// locate returns the file of arg: arg itself when it is a file, else the
// file of the session with that id in the store at root.
func locate(arg, root string) (string, error) {
	if _, err := os.Stat(arg); err == nil || session.ValidateID(arg) != nil {
		return arg, nil // a file, or a path whose error the read reports
	}
	for _, pattern := range []string{
		filepath.Join(root, "--*--", "*_"+arg+".jsonl"),
		filepath.Join(root, ".archive", "--*--", "*_"+arg+".jsonl"),
	} {
		if m, _ := filepath.Glob(pattern); len(m) > 0 {
			return m[0], nil
		}
	}
	return arg, fmt.Errorf("no such file, and no session %s in %s", arg, root)
}

// storeFiles lists the session files of the store at root, archived ones
// included.
func storeFiles(root string) ([]string, error) {
	if _, err := os.Stat(root); err != nil {
		return nil, err
	}
	var files []string
	for _, pattern := range []string{
		filepath.Join(root, "--*--", "*.jsonl"),
		filepath.Join(root, ".archive", "--*--", "*.jsonl"),
	} {
		m, err := filepath.Glob(pattern)
		if err != nil {
			return nil, err
		}
		files = append(files, m...)
	}
	return files, nil
}

// warnSkipped tells on stderr that the output leaves out lines the reader
// skipped, so a reader of the transcript knows it is not the whole file.
func warnSkipped(log *session.Log, path string, unresolved int, stderr io.Writer) {
	var parts []string
	if unresolved > 0 {
		parts = append(parts, plural(unresolved, "image")+" left as blob references (missing or damaged blobs)")
	}
	if n := len(log.Malformed); n > 0 {
		parts = append(parts, plural(n, "malformed line")+" skipped")
	}
	if log.Torn != nil {
		parts = append(parts, fmt.Sprintf("torn last line %d ignored", log.Torn.Line))
	}
	if len(parts) > 0 {
		fmt.Fprintf(stderr, "agentsession: warning: %s: %s; run verify for details\n", path, strings.Join(parts, ", "))
	}
}

// plural is "1 thing" or "n things".
func plural(n int, thing string) string {
	if n == 1 {
		return "1 " + thing
	}
	if strings.HasSuffix(thing, "y") {
		return fmt.Sprintf("%d %sies", n, strings.TrimSuffix(thing, "y"))
	}
	return fmt.Sprintf("%d %ss", n, thing)
}

// describe turns a read error into "FILE: reason".
func describe(err error, path string) string {
	var ce *session.CorruptError
	var ve *session.UnsupportedVersionError
	var le *session.LimitError
	var pe *os.PathError
	switch {
	case errors.As(err, &ce):
		where := ""
		if ce.Line > 0 {
			where = fmt.Sprintf("line %d: ", ce.Line)
		}
		return fmt.Sprintf("%s: not a session file: %s%v", path, where, ce.Err)
	case errors.As(err, &ve):
		return fmt.Sprintf("%s: not a session file: format version %d is newer than this tool supports (%d)", path, ve.Version, session.CurrentVersion)
	case errors.As(err, &le):
		short := *le
		short.Path = ""
		return fmt.Sprintf("%s: %s", path, strings.TrimPrefix(short.Error(), "session: "))
	case errors.As(err, &pe):
		return fmt.Sprintf("%s: %v", path, pe.Err)
	}
	return fmt.Sprintf("%s: %v", path, err)
}

func cmdContext(s *session.Session, path, leaf string, asJSON, forModel bool, stdout, stderr io.Writer) int {
	c := s.Context()
	if leaf != "" {
		var err error
		if c, err = s.ContextAt(leaf); err != nil {
			fmt.Fprintf(stderr, "agentsession: %s: entry %s not found\n", path, leaf)
			return exitError
		}
	}
	msgs := c.Messages
	if forModel {
		msgs = c.ForModel()
	}
	if asJSON {
		return writeJSON(c, msgs, stdout, stderr)
	}
	writeTranscript(s, c, msgs, forModel, stdout)
	return exitOK
}

func writeJSON(c *session.Context, msgs []*session.Message, stdout, stderr io.Writer) int {
	out := struct {
		LeafID        *string            `json:"leafId"`
		ThinkingLevel string             `json:"thinkingLevel"`
		Model         *session.ModelRef  `json:"model"`
		Messages      []*session.Message `json:"messages"`
	}{ThinkingLevel: c.ThinkingLevel, Model: c.Model, Messages: msgs}
	if c.LeafID != "" {
		out.LeafID = &c.LeafID
	}
	if out.Messages == nil {
		out.Messages = []*session.Message{}
	}
	raw, err := json.Marshal(out)
	if err == nil {
		var b bytes.Buffer
		if err = json.Indent(&b, raw, "", "  "); err == nil {
			b.WriteByte('\n')
			_, err = stdout.Write(b.Bytes())
		}
	}
	if err != nil {
		fmt.Fprintf(stderr, "agentsession: %v\n", err)
		return exitError
	}
	return exitOK
}

func writeTranscript(s *session.Session, c *session.Context, msgs []*session.Message, forModel bool, w io.Writer) {
	model := "none"
	if c.Model != nil {
		model = c.Model.String()
	}
	leaf := c.LeafID
	if leaf == "" {
		leaf = "(none)"
	}
	fmt.Fprintf(w, "session %s · leaf %s · thinking %s · model %s", s.ID(), leaf, c.ThinkingLevel, model)
	if c.Mode != "none" {
		fmt.Fprintf(w, " · mode %s", c.Mode)
	}
	fmt.Fprintf(w, "\n%s", plural(len(msgs), "message"))
	if forModel {
		fmt.Fprint(w, " (as sent to a model)")
	}
	fmt.Fprintln(w)
	for i, m := range msgs {
		fmt.Fprintf(w, "\n[%d] %s\n", i+1, heading(m))
		for _, line := range body(m) {
			fmt.Fprintf(w, "    %s\n", line)
		}
	}
	if !forModel && (len(c.Dangling) > 0 || len(c.Orphans) > 0) {
		fmt.Fprintf(w, "\nnote: %s without results and %s without calls; --for-model shows them repaired\n",
			plural(len(c.Dangling), "tool call"), plural(len(c.Orphans), "result"))
	}
	if len(c.Pending) > 0 {
		fmt.Fprintf(w, "\nnote: %s awaiting results\n", plural(len(c.Pending), "tool call"))
	}
}

func heading(m *session.Message) string {
	var b strings.Builder
	b.WriteString(m.Role)
	switch m.Role {
	case session.RoleAssistant:
		var parts []string
		if m.Provider != "" || m.Model != "" {
			parts = append(parts, session.ModelRef{Provider: m.Provider, ModelID: m.Model}.String())
		}
		if m.StopReason != "" {
			parts = append(parts, m.StopReason)
		}
		if len(parts) > 0 {
			fmt.Fprintf(&b, " (%s)", strings.Join(parts, ", "))
		}
	case session.RoleToolResult:
		fmt.Fprintf(&b, " %s [%s]", m.ToolName, m.ToolCallID)
		if m.IsError {
			b.WriteString(" error")
		}
		if m.Synthetic() {
			b.WriteString(" (synthesized)")
		}
	case session.RoleCustom:
		shown := "hidden"
		if m.Display {
			shown = "shown"
		}
		fmt.Fprintf(&b, " %s (%s)", m.CustomType, shown)
	case session.RoleCompactionSummary:
		fmt.Fprintf(&b, " (%d tokens before)", m.TokensBefore)
	case session.RoleBranchSummary:
		fmt.Fprintf(&b, " (from %s)", m.FromID)
	case session.RoleBashExecution:
		if m.ExcludeFromContext {
			b.WriteString(" (excluded from context)")
		}
	}
	return b.String()
}

func body(m *session.Message) []string {
	var lines []string
	add := func(s string) { lines = append(lines, strings.Split(strings.TrimRight(s, "\n"), "\n")...) }
	switch m.Role {
	case session.RoleCompactionSummary, session.RoleBranchSummary:
		add(m.Summary)
		return lines
	case session.RoleBashExecution:
		add("$ " + m.Command)
		if m.Output != "" {
			add(m.Output)
		}
		if m.ExitCode != nil {
			add("exit " + strconv.Itoa(*m.ExitCode))
		}
		return lines
	}
	for _, b := range m.Content {
		switch b.Type {
		case session.BlockText:
			add(b.Text)
		case session.BlockThinking:
			if b.Redacted {
				add("(thinking, redacted)")
			} else {
				add("(thinking) " + b.Thinking)
			}
		case session.BlockToolCall:
			add(fmt.Sprintf("→ %s %s [%s]", b.Name, compactJSON(b.Arguments), b.ID))
		case session.BlockImage:
			add(fmt.Sprintf("(image %s, %d base64 bytes)", b.MimeType, len(b.Data)))
		default:
			add(fmt.Sprintf("(%s block)", b.Type))
		}
	}
	if m.ErrorMessage != "" {
		add("error: " + m.ErrorMessage)
	}
	return lines
}

func compactJSON(raw json.RawMessage) string {
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return string(raw)
	}
	return b.String()
}

func cmdTree(s *session.Session, compact bool, w io.Writer) int {
	// In compact mode a chain stays in one column; the children of an entry
	// with several are indented under it and marked "- ". col[d] is where
	// the id of the entry at depth d starts, kids[d] its number of children.
	var col, kids []int
	roots := len(s.Roots())
	for n := range s.Tree() {
		at, mark := 2*n.Depth, ""
		if compact {
			col, kids = col[:n.Depth], kids[:n.Depth]
			at = 0
			if n.Depth == 0 && roots > 1 {
				at, mark = 2, "- "
			}
			if n.Depth > 0 {
				at = col[n.Depth-1]
				if kids[n.Depth-1] > 1 {
					at += 4
					mark = "- "
				}
			}
			col, kids = append(col, at), append(kids, n.Children)
		}
		var b strings.Builder
		b.WriteString(strings.Repeat(" ", at-len(mark)))
		b.WriteString(mark)
		b.WriteString(n.Entry.ID())
		b.WriteByte(' ')
		b.WriteString(describeEntry(n.Entry))
		if n.Label != "" {
			fmt.Fprintf(&b, "  [%s]", n.Label)
		}
		if n.Leaf {
			b.WriteString("  <- leaf")
		}
		fmt.Fprintln(w, b.String())
	}
	return exitOK
}

// describeEntry is the one-line summary of an entry in a tree view.
func describeEntry(e session.Entry) string {
	switch e.Type() {
	case session.TypeMessage:
		m, err := e.Message()
		if err != nil {
			return "message (unreadable)"
		}
		text := m.Text()
		if text == "" {
			for _, c := range m.ToolCalls() {
				text = "→ " + c.Name + " " + compactJSON(c.Arguments)
				break
			}
		}
		if m.Role == session.RoleToolResult {
			return fmt.Sprintf("toolResult %s: %s", m.ToolName, snippet(text))
		}
		return fmt.Sprintf("%s: %s", m.Role, snippet(text))
	case session.TypeLabel:
		var l session.Label
		_ = e.Decode(&l)
		return fmt.Sprintf("label %s=%s", l.TargetID, l.Label)
	case session.TypeModelChange:
		var c session.ModelChange
		_ = e.Decode(&c)
		if c.Model != "" {
			return "model_change " + c.Model
		}
		return fmt.Sprintf("model_change %s/%s", c.Provider, c.ModelID)
	case session.TypeThinkingLevelChange:
		var c session.ThinkingLevelChange
		_ = e.Decode(&c)
		return "thinking_level_change " + c.ThinkingLevel
	case session.TypeCompaction:
		var c session.Compaction
		_ = e.Decode(&c)
		return fmt.Sprintf("compaction (keeps from %s): %s", c.FirstKeptEntryID, snippet(c.Summary))
	case session.TypeBranchSummary:
		var b session.BranchSummary
		_ = e.Decode(&b)
		return "branch_summary: " + snippet(b.Summary)
	case session.TypeCustom, session.TypeCustomMessage:
		var c session.Custom
		_ = e.Decode(&c)
		return e.Type() + " " + c.CustomType
	case session.TypeSessionInfo:
		var n session.SessionInfoEntry
		_ = e.Decode(&n)
		return fmt.Sprintf("session_info %q", n.Name)
	case session.TypeModeChange:
		var c session.ModeChange
		_ = e.Decode(&c)
		return "mode_change " + c.Mode
	}
	return e.Type()
}

// snippet is the first line of s, at most 60 characters.
func snippet(s string) string {
	s, _, cut := strings.Cut(strings.TrimSpace(s), "\n")
	const max = 60
	if utf8.RuneCountInString(s) > max {
		r := []rune(s)
		return string(r[:max]) + "…"
	}
	if cut {
		return s + " …"
	}
	return s
}

// cmdVerify verifies each file: 2 if one could not be read, else 1 if
// one has findings, else 0.
func cmdVerify(args []string, root, blobs string, stdout, stderr io.Writer) int {
	code := exitOK
	for _, arg := range args {
		path, findings, n, err := verifyFile(arg, root, blobs)
		if err != nil {
			fmt.Fprintf(stderr, "agentsession: %s\n", describe(err, path))
			code = exitError
			continue
		}
		for _, f := range findings {
			fmt.Fprintf(stdout, "%s: %s\n", path, f)
		}
		if len(findings) == 0 {
			fmt.Fprintf(stdout, "%s: %s, no findings\n", path, plural(n, "entry"))
		} else if code == exitOK {
			code = exitFindings
		}
	}
	return code
}

// verifyFile verifies the session named by arg as it reads it, in memory
// that does not grow with the size of its lines (session.VerifyReader).
func verifyFile(arg, root, blobs string) (path string, findings []session.Finding, n int, err error) {
	if path, err = locate(arg, root); err != nil {
		return arg, nil, 0, err
	}
	f, err := openSessionFile(path)
	if err != nil {
		return path, nil, 0, err
	}
	defer f.Close()
	findings, n, err = session.VerifyReader(context.Background(), f, blobDir(path, blobs), nil)
	return path, findings, n, session.WithPath(err, path)
}

// openSessionFile opens a session file for reading as a FileStore would:
// one in a store's layout (<root>/--cwd--/file) through the root, so that
// every command refuses one that escapes it (a symlinked directory, say)
// as compact, which writes through a FileStore, does.
func openSessionFile(path string) (*os.File, error) {
	root, ok := layoutRoot(path)
	if !ok {
		return os.Open(path)
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	rel, err := filepath.Rel(root, abs)
	if err != nil {
		return nil, err
	}
	r, err := os.OpenRoot(root)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	return r.Open(rel)
}

// blobDir is the blob directory of the session file at path: blobs when
// set, else the seed layout's, <root>/../blobs for <root>/--cwd--/file.
func blobDir(path, blobs string) *session.BlobDir {
	if blobs == "" {
		blobs = filepath.Join(filepath.Dir(filepath.Dir(filepath.Dir(path))), "blobs")
	}
	return session.OpenBlobDir(blobs, nil)
}
