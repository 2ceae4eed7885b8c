package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	session "github.com/agentsession/session"
)

// The commands that only read: context, tree, checkpoints, verify.

const readCommon = withJSON | withRoot | withBlobs | withLimit | withPager

var cmdContext = &command{
	name:    "context",
	summary: "print the context at the leaf: what the agent's model sees",
	usage:   "[--leaf ID] [--for-model] [--limit N] [--json] FILE|ID",
	common:  readCommon,
	nargs:   [2]int{1, 1},
	setup: func(fs *flag.FlagSet, c *call) func([]string) int {
		leaf := fs.String("leaf", "", "build the context at the entry `ID` (an id, a unique prefix of one, or a checkpoint name) instead of the leaf")
		forModel := fs.Bool("for-model", false, "print the messages an agent sends to its model, tool pairing repaired")
		return func(args []string) int {
			if *leaf == "" {
				if s, st, path, done := c.openInStore(args[0]); done {
					defer st.Close()
					defer s.Close()
					return c.context(s, path, "", *forModel)
				}
			}
			s, path, ok := c.openRead(args[0])
			if !ok {
				return exitError
			}
			return c.context(s, path, *leaf, *forModel)
		}
	},
}

// openInStore opens the session named by arg through the FileStore whose
// tree holds its file, when it is a live session of the current format
// with a path index: the store reads the current path alone (the rest of
// a long session's history is not read). done is false, and the caller
// reads the file whole as for any other, when that does not apply: not
// in a store's tree, archived, of an older format (which a store would
// migrate, writing the file), no index yet (the store's whole read
// leaves one behind, for the next run), or the store would not open it
// within storeReadWait (another process holding the file's lock: the
// whole read takes none). A whole read warns of what it skipped; a path
// read never meets such lines, since a log with any gets no index. A
// file under storeReadMin is read whole at once. Only
// the leaf's context is read so: --leaf may name any entry.
func (c *call) openInStore(arg string) (s *session.Session, st *session.FileStore, path string, done bool) {
	path, err := c.locate(arg)
	if err != nil {
		return nil, nil, arg, false
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, nil, path, false
	}
	root, ok := layoutRoot(abs)
	if !ok || filepath.Base(filepath.Dir(filepath.Dir(abs))) == ".archive" {
		return nil, nil, path, false
	}
	if fi, err := os.Stat(abs); err != nil || fi.Size() < storeReadMin {
		return nil, nil, path, false
	}
	id, ok := currentFormatID(abs)
	if !ok {
		return nil, nil, path, false
	}
	st, err = session.OpenFileStore(root, &session.FileStoreOptions{BlobDir: c.blobs})
	if err != nil {
		return nil, nil, path, false
	}
	ctx, cancel := context.WithTimeout(c.ctx, storeReadWait)
	defer cancel()
	if pl, err := st.LoadPath(ctx, id); err != nil || pl.Complete {
		st.Close()
		return nil, nil, path, false
	}
	if s, err = session.Open(ctx, st, id); err != nil {
		st.Close()
		return nil, nil, path, false
	}
	if p, err := st.Path(id); err != nil || p != abs {
		s.Close()
		st.Close()
		return nil, nil, path, false // another file holds the id: read the one named
	}
	return s, st, path, true
}

// storeReadMin is the size of file from which context tries the store:
// a store keeps no path index for a shorter log, and reads it whole. (A
// long one without an index yet is read twice, by the store, which
// leaves an index, and whole.)
const storeReadMin = 1 << 20

// storeReadWait bounds how long context waits for the session file's
// lock (a writer's lease lasts milliseconds) before it reads the file
// whole, without a lock, as other read commands do.
const storeReadWait = time.Second

// currentFormatID returns the session id of the file at path if its
// header, as written (not as a reader migrates it), is of the current
// format version.
func currentFormatID(path string) (string, bool) {
	f, err := openSessionFile(path)
	if err != nil {
		return "", false
	}
	defer f.Close()
	line, err := bufio.NewReaderSize(f, 64<<10).ReadSlice('\n')
	if err != nil {
		return "", false
	}
	var h struct {
		Type    string `json:"type"`
		Version *int   `json:"version"`
		ID      string `json:"id"`
	}
	if json.Unmarshal(line, &h) != nil || h.Type != "session" || h.Version == nil || *h.Version != session.CurrentVersion || session.ValidateID(h.ID) != nil {
		return "", false
	}
	return h.ID, true
}

func (c *call) context(s *session.Session, path, leaf string, forModel bool) int {
	ctx := s.Context()
	if leaf != "" {
		id, err := resolveEntry(s, leaf)
		if err == nil {
			ctx, err = s.ContextAt(id)
		}
		if err != nil {
			return c.fail("%s: %v", path, err)
		}
	}
	msgs := ctx.Messages
	if forModel {
		msgs = ctx.ForModel()
	}
	omitted := len(msgs) - c.limited(len(msgs))
	msgs = msgs[omitted:]
	if c.json {
		var leaf *string
		if ctx.LeafID != "" {
			leaf = &ctx.LeafID
		}
		// The messages one at a time: a context of many images is printed
		// holding one message's JSON, not all of it twice (marshalled,
		// then indented).
		fields := []jsonField{{"leafId", leaf}, {"thinkingLevel", ctx.ThinkingLevel}, {"model", ctx.Model}, {"messages", jsonArray[*session.Message](msgs)}}
		if omitted > 0 {
			fields = append(fields, jsonField{"omitted", omitted})
		}
		return c.printJSONObject(fields)
	}
	c.transcript(s, ctx, msgs, omitted, forModel)
	return exitOK
}

func (c *call) transcript(s *session.Session, ctx *session.Context, msgs []*session.Message, omitted int, forModel bool) {
	w := bufio.NewWriterSize(c.stdout, 64<<10)
	defer w.Flush()
	model := "none"
	if ctx.Model != nil {
		model = ctx.Model.String()
	}
	leaf := ctx.LeafID
	if leaf == "" {
		leaf = "(none)"
	}
	head := fmt.Sprintf("session %s · leaf %s · thinking %s · model %s", s.ID(), leaf, ctx.ThinkingLevel, model)
	if ctx.Mode != "none" {
		head += " · mode " + ctx.Mode
	}
	head = cell(head)
	fmt.Fprintln(w, c.paint(bold, head))
	fmt.Fprint(w, plural(len(msgs)+omitted, "message"))
	if forModel {
		fmt.Fprint(w, " (as sent to a model)")
	}
	if omitted > 0 {
		fmt.Fprintf(w, ", the last %d shown", len(msgs))
	}
	fmt.Fprintln(w)
	for i, m := range msgs {
		fmt.Fprintf(w, "\n%s\n", c.paint(roleStyle(m.Role), fmt.Sprintf("[%d] %s", omitted+i+1, cell(heading(m)))))
		for _, line := range body(m) {
			// Written as it is: a message's text can be long, and fmt
			// would copy it (a garbage of the transcript's size).
			io.WriteString(w, "    ")
			io.WriteString(w, termSafe(line))
			io.WriteString(w, "\n")
		}
	}
	if !forModel && (len(ctx.Dangling) > 0 || len(ctx.Orphans) > 0) {
		fmt.Fprintf(w, "\nnote: %s without results and %s without calls; --for-model shows them repaired\n",
			plural(len(ctx.Dangling), "tool call"), plural(len(ctx.Orphans), "result"))
	}
	if len(ctx.Pending) > 0 {
		fmt.Fprintf(w, "\nnote: %s awaiting results\n", plural(len(ctx.Pending), "tool call"))
	}
}

func roleStyle(role string) style {
	switch role {
	case session.RoleUser:
		return green
	case session.RoleAssistant:
		return cyan
	case session.RoleToolResult:
		return dim
	}
	return yellow
}

var cmdTree = &command{
	name:    "tree",
	summary: "print every entry of the session tree, one per line",
	usage:   "[--compact] [--limit N] [--json] FILE|ID",
	common:  readCommon,
	nargs:   [2]int{1, 1},
	setup: func(fs *flag.FlagSet, c *call) func([]string) int {
		compact := fs.Bool("compact", false, "indent only where the conversation branches")
		return func(args []string) int {
			s, _, ok := c.openRead(args[0])
			if !ok {
				return exitError
			}
			return c.tree(s, *compact)
		}
	},
}

type treeJSON struct {
	ID        string  `json:"id"`
	ParentID  *string `json:"parentId"`
	Type      string  `json:"type"`
	Timestamp string  `json:"timestamp"`
	Depth     int     `json:"depth"`
	Children  int     `json:"children"`
	Label     string  `json:"label"`
	Leaf      bool    `json:"leaf"`
	Summary   string  `json:"summary"`
}

func (c *call) tree(s *session.Session, compact bool) int {
	// In compact mode a chain stays in one column; the children of an entry
	// with several are indented under it and marked "- ". col[d] is where
	// the id of the entry at depth d starts, kids[d] its number of children.
	var col, kids []int
	roots := len(s.Roots())
	nodes := slices.Collect(s.Tree())
	shown := c.limited(len(nodes))
	for _, n := range nodes[:shown] {
		if c.json {
			j := treeJSON{ID: n.Entry.ID(), Type: n.Entry.Type(), Timestamp: n.Entry.Timestamp(), Depth: n.Depth,
				Children: n.Children, Label: n.Label, Leaf: n.Leaf, Summary: describeEntry(n.Entry)}
			if p := n.Entry.ParentID(); p != "" {
				j.ParentID = &p
			}
			if err := c.printJSONLine(j); err != nil {
				return c.fail("%v", err)
			}
			continue
		}
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
		b.WriteString(cell(n.Entry.ID()))
		b.WriteByte(' ')
		b.WriteString(cell(describeEntry(n.Entry)))
		if n.Label != "" {
			b.WriteString(c.paint(yellow, fmt.Sprintf("  [%s]", cell(n.Label))))
		}
		if n.Leaf {
			b.WriteString(c.paint(green, "  <- leaf"))
		}
		fmt.Fprintln(c.stdout, b.String())
	}
	c.truncated(shown, len(nodes), "entry")
	return exitOK
}

var cmdCheckpoints = &command{
	name:    "checkpoints",
	summary: "list the named entries (labels) to rewind to",
	usage:   "[--limit N] [--json] FILE|ID",
	common:  readCommon,
	nargs:   [2]int{1, 1},
	setup: func(fs *flag.FlagSet, c *call) func([]string) int {
		return func(args []string) int {
			s, path, ok := c.openRead(args[0])
			if !ok {
				return exitError
			}
			return c.checkpoints(s, path)
		}
	},
}

func (c *call) checkpoints(s *session.Session, file string) int {
	cps := s.Checkpoints()
	if len(cps) == 0 && !c.json {
		fmt.Fprintf(c.stderr, "agentsession: no checkpoints in %s\n", file)
		return exitOK
	}
	onPath := map[string]bool{}
	path, _ := s.PathTo(s.LeafID()) // the leaf is known: no error
	for _, e := range path {
		onPath[e.ID()] = true
	}
	total := len(cps)
	cps = cps[total-c.limited(total):]
	t := c.table("TIME", "ENTRY", "NAME")
	for _, cp := range cps {
		if c.json {
			if err := c.printJSONLine(struct {
				Name    string    `json:"name"`
				EntryID string    `json:"entryId"`
				Time    time.Time `json:"time"`
				OnPath  bool      `json:"onPath"`
			}{cp.Name, cp.EntryID, cp.Time, onPath[cp.EntryID]}); err != nil {
				return c.fail("%v", err)
			}
			continue
		}
		name := cp.Name
		if onPath[cp.EntryID] {
			name += " (on the current path)"
		}
		t.row(cp.Time.Local().Format(time.DateTime), cp.EntryID, name)
	}
	if !c.json {
		t.flush()
	}
	c.truncated(len(cps), total, "checkpoint")
	return exitOK
}

var cmdVerify = &command{
	name:    "verify",
	summary: "check session files for damage, graded error, warning or info",
	usage:   "[--strict] [--json] FILE|ID... | --all [--limit N]",
	common:  readCommon,
	nargs:   [2]int{0, -1},
	setup: func(fs *flag.FlagSet, c *call) func([]string) int {
		all := fs.Bool("all", false, "verify every session file of the store at --root")
		strict := fs.Bool("strict", false, "exit 1 for any finding, warnings and info included")
		return func(args []string) int {
			if *all {
				if len(args) > 0 {
					return c.usageError("--all takes no FILE")
				}
				files, err := c.storeFiles()
				if err != nil {
					return c.fail("%v", err)
				}
				if len(files) == 0 {
					fmt.Fprintf(c.stderr, "agentsession: no session files in %s\n", c.root)
					return exitOK
				}
				args = files
			} else if len(args) == 0 {
				return c.usageError("expected FILE|ID... or --all")
			}
			return c.verify(args, *strict)
		}
	},
}

type findingJSON struct {
	Severity string `json:"severity"`
	Kind     string `json:"kind"`
	Line     int    `json:"line"`
	EntryID  string `json:"entryId"`
	Detail   string `json:"detail"`
}

type verifyJSON struct {
	Path     string        `json:"path"`
	Entries  int           `json:"entries"`
	Errors   int           `json:"errors"`
	Warnings int           `json:"warnings"`
	Infos    int           `json:"infos"`
	Findings []findingJSON `json:"findings"`
}

var severityStyle = map[session.Severity]style{
	session.SeverityError:   red,
	session.SeverityWarning: yellow,
	session.SeverityInfo:    cyan,
}

// verify verifies each file: 2 if one could not be read, else 1 if one
// has an error (with strict, any finding), else 0.
func (c *call) verify(args []string, strict bool) int {
	code := exitOK
	total := len(args)
	args = args[:c.limited(total)]
	prog := c.progress("verifying")
	defer prog.end()
	var withErrors, withOthers int
	for i, arg := range args {
		prog.set("", i, len(args))
		path, findings, n, err := c.verifyFile(arg)
		if err != nil {
			fmt.Fprintf(c.stderr, "agentsession: %s\n", describe(err, path))
			if c.json {
				c.printJSONLine(struct {
					Path  string `json:"path"`
					Error string `json:"error"`
				}{path, strings.TrimPrefix(describe(err, path), path+": ")})
			}
			code = exitError
			continue
		}
		count := map[session.Severity]int{}
		out := verifyJSON{Path: path, Entries: n, Findings: []findingJSON{}}
		for _, f := range findings {
			sev := f.Severity()
			count[sev]++
			if c.json {
				out.Findings = append(out.Findings, findingJSON{sev.String(), string(f.Kind), f.Line, f.EntryID, f.Detail})
			} else {
				fmt.Fprintf(c.stdout, "%s: %s: %s\n", cell(path), c.paint(severityStyle[sev], sev.String()), cell(fmt.Sprint(f)))
			}
		}
		out.Errors, out.Warnings, out.Infos = count[session.SeverityError], count[session.SeverityWarning], count[session.SeverityInfo]
		switch {
		case out.Errors > 0:
			withErrors++
		case len(findings) > 0:
			withOthers++
		}
		if out.Errors > 0 || strict && len(findings) > 0 {
			code = max(code, exitFindings)
		}
		if c.json {
			if err := c.printJSONLine(out); err != nil {
				return c.fail("%v", err)
			}
			continue
		}
		if len(findings) == 0 {
			fmt.Fprintf(c.stdout, "%s: %s, %s\n", path, plural(n, "entry"), c.paint(green, "no findings"))
			continue
		}
		var parts []string
		for _, p := range []struct {
			n    int
			what string
		}{{out.Errors, "error"}, {out.Warnings, "warning"}, {out.Infos, "info"}} {
			switch {
			case p.n == 0:
			case p.what == "info":
				parts = append(parts, fmt.Sprintf("%d info", p.n))
			default:
				parts = append(parts, plural(p.n, p.what))
			}
		}
		fmt.Fprintf(c.stdout, "%s: %s; %s\n", path, plural(n, "entry"), strings.Join(parts, ", "))
	}
	prog.end()
	if !c.json && len(args) > 1 {
		fmt.Fprintf(c.stdout, "verified %s: %d with errors, %d with only warnings or info\n", plural(len(args), "file"), withErrors, withOthers)
	}
	c.truncated(len(args), total, "file")
	return code
}

// verifyFile verifies the session named by arg as it reads it, in memory
// that does not grow with the size of its lines (session.VerifyReader).
func (c *call) verifyFile(arg string) (path string, findings []session.Finding, n int, err error) {
	if path, err = c.locate(arg); err != nil {
		return arg, nil, 0, err
	}
	f, err := openSessionFile(path)
	if err != nil {
		return path, nil, 0, err
	}
	defer f.Close()
	findings, n, err = session.VerifyReader(context.Background(), f, blobDir(path, c.blobs), nil)
	return path, findings, n, session.WithPath(err, path)
}

// ---- What the transcript and the tree show of messages and entries ----

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
