package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/mattn/go-runewidth"
)

// What every command's output goes through: JSON, aligned tables,
// colors only for a terminal, the pager and the progress line.

// terminal is what the tool knows of where it writes.
type terminal struct {
	outTTY bool // stdout is a terminal: colors, the pager
	errTTY bool // stderr is a terminal: the progress line
	color  bool // outTTY, and neither NO_COLOR nor TERM=dumb says no
	rows   int  // its height: output this long or longer is paged
	cols   int  // its width, when known ($COLUMNS, or the terminal's): ls fits titles to it
}

// detectTerminal looks at stdout and stderr and the environment.
func detectTerminal(stdout, stderr io.Writer) terminal {
	t := terminal{outTTY: isTerminal(stdout), errTTY: isTerminal(stderr), rows: 24}
	t.color = t.outTTY && colorAllowed()
	if n, err := strconv.Atoi(os.Getenv("LINES")); err == nil && n > 0 {
		t.rows = n
	} else if f, ok := stdout.(*os.File); ok && t.outTTY {
		if n, _, ok := terminalSize(f); ok {
			t.rows = n
		}
	}
	if n, err := strconv.Atoi(os.Getenv("COLUMNS")); err == nil && n > 0 && t.outTTY {
		t.cols = n
	} else if f, ok := stdout.(*os.File); ok && t.outTTY {
		if _, n, ok := terminalSize(f); ok && n > 0 {
			t.cols = n
		}
	}
	return t
}

// isTerminal reports whether w is a terminal: a character device that
// answers as one (isTTY: /dev/null is a character device, no terminal).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0 && isTTY(f)
}

// colorAllowed follows no-color.org (a non-empty NO_COLOR), TERM=dumb,
// and the Windows console, which shows escape codes as text unless a
// terminal that understands them (Windows Terminal, a TERM) runs it.
func colorAllowed() bool {
	if os.Getenv("NO_COLOR") != "" || os.Getenv("TERM") == "dumb" {
		return false
	}
	if runtime.GOOS == "windows" {
		return os.Getenv("WT_SESSION") != "" || os.Getenv("TERM") != ""
	}
	return true
}

// A style for paint.
type style string

const (
	bold   style = "1"
	dim    style = "2"
	red    style = "31"
	green  style = "32"
	yellow style = "33"
	cyan   style = "36"
)

// paint wraps s in the style's escape codes when colors are on.
func (c *call) paint(st style, s string) string {
	if !c.term.color || st == "" || s == "" {
		return s
	}
	return "\x1b[" + string(st) + "m" + s + "\x1b[0m"
}

// jsonMarshal is json.Marshal with the characters termSafe escapes that
// encoding/json leaves as they are (DEL, the C1 controls, the bidi
// overrides; it escapes the C0 controls) written as \u escapes: the same
// JSON once decoded, and nothing a terminal acts on. They can stand only
// inside a JSON string, so each is replaced where it is.
func jsonMarshal(v any) ([]byte, error) {
	raw, err := json.Marshal(v)
	if err != nil || !bytes.ContainsFunc(raw, func(r rune) bool { return r >= 0x7f && unsafeForTerminal(r) }) {
		return raw, err
	}
	out := make([]byte, 0, len(raw)+16)
	for len(raw) > 0 {
		r, n := utf8.DecodeRune(raw)
		if r >= 0x7f && unsafeForTerminal(r) {
			out = fmt.Appendf(out, `\u%04x`, r)
		} else {
			out = append(out, raw[:n]...)
		}
		raw = raw[n:]
	}
	return out, nil
}

// printJSON prints v as one indented JSON document.
func (c *call) printJSON(v any) int {
	raw, err := jsonMarshal(v)
	if err == nil {
		var b bytes.Buffer
		if err = json.Indent(&b, raw, "", "  "); err == nil {
			b.WriteByte('\n')
			_, err = c.stdout.Write(b.Bytes())
		}
	}
	if err != nil {
		return c.fail("%v", err)
	}
	return exitOK
}

// jsonField is a member of an object printJSONObject prints.
type jsonField struct {
	name  string
	value any // a jsonArray is printed an element at a time
}

// jsonArray is an array printJSONObject prints an element at a time.
type jsonArray[T any] []T

// elements calls fn with each element.
func (a jsonArray[T]) elements(fn func(any) error) error {
	for _, v := range a {
		if err := fn(v); err != nil {
			return err
		}
	}
	return nil
}

// printJSONObject prints the object of fields as printJSON prints it
// (the same bytes), a member at a time and each element of a jsonArray
// on its own, so that what it holds is the JSON of one of them, never
// the whole document twice (marshalled, then indented).
func (c *call) printJSONObject(fields []jsonField) int {
	w := bufio.NewWriterSize(c.stdout, 64<<10)
	var buf bytes.Buffer
	put := func(v any, prefix string) error {
		raw, err := jsonMarshal(v)
		if err != nil {
			return err
		}
		buf.Reset()
		if err := json.Indent(&buf, raw, prefix, "  "); err != nil {
			return err
		}
		_, err = w.Write(buf.Bytes())
		return err
	}
	err := func() error {
		w.WriteString("{")
		for i, f := range fields {
			if i > 0 {
				w.WriteString(",")
			}
			name, _ := jsonMarshal(f.name)
			fmt.Fprintf(w, "\n  %s: ", name)
			a, ok := f.value.(interface{ elements(func(any) error) error })
			if !ok {
				if err := put(f.value, "  "); err != nil {
					return err
				}
				continue
			}
			w.WriteString("[")
			n := 0
			err := a.elements(func(v any) error {
				if n++; n > 1 {
					w.WriteString(",")
				}
				w.WriteString("\n    ")
				return put(v, "    ")
			})
			if err != nil {
				return err
			}
			if n > 0 {
				w.WriteString("\n  ")
			}
			w.WriteString("]")
		}
		w.WriteString("\n}\n")
		return w.Flush()
	}()
	if err != nil {
		return c.fail("%v", err)
	}
	return exitOK
}

// printJSONLine prints v as one line of JSON: the commands that list
// print one such line per item (JSON Lines), as they go.
func (c *call) printJSONLine(v any) error {
	raw, err := jsonMarshal(v)
	if err != nil {
		return err
	}
	_, err = c.stdout.Write(append(raw, '\n'))
	return err
}

// table collects rows and prints them aligned in columns, by the width
// a terminal gives each character (a CJK character takes two columns, a
// combining accent none: go-runewidth, by grapheme); colors are put on
// whole lines after the alignment, so that they do not shift it.
type table struct {
	c      *call
	rows   [][]string
	styles []style
	indent string      // put before each line
	widths map[int]int // the most display columns of a column, by index: longer cells are cut
	// fitTo, when set, cuts the last column so that a line is at most
	// fitTo columns wide, the column keeping fitMin at least.
	fitTo, fitMin int
}

// table starts a table with its header row.
func (c *call) table(headers ...string) *table {
	t := &table{c: c}
	t.styled(bold, headers...)
	return t
}

func (t *table) row(cells ...string) { t.styled("", cells...) }

// styled adds a row in a style; its cells are text from data, made safe
// for a terminal (cell).
func (t *table) styled(st style, cells ...string) {
	for i, c := range cells {
		cells[i] = cell(c)
	}
	t.rows = append(t.rows, cells)
	t.styles = append(t.styles, st)
}

// safeRow adds a row whose cells the caller made safe for a terminal
// (with termSafe) and may hold this tool's own escape codes.
func (t *table) safeRow(cells ...string) {
	t.rows = append(t.rows, cells)
	t.styles = append(t.styles, "")
}

// cell is s made safe for a terminal (termSafe) on one line: a tab, a
// newline or a carriage return becomes a space.
func cell(s string) string {
	return termSafe(strings.Map(func(r rune) rune {
		if r == '\t' || r == '\n' || r == '\r' {
			return ' '
		}
		return r
	}, s))
}

// termSafe returns s with every character a terminal would act on
// rather than show replaced by a visible escape: the C0 controls but
// the newline and the tab (ESC, which starts the CSI and OSC sequences
// that clear the screen, set the window title or leave a colour on, is
// shown as \x1b), DEL, the C1 controls (\u009b) and the bidi overrides
// and isolates that turn the rest of a line around (\u202e). Every piece
// of text from data that the commands print goes through it; the
// colours this tool adds (paint) are put on after. s itself when it
// has none of them.
func termSafe(s string) string {
	i := strings.IndexFunc(s, unsafeForTerminal)
	if i < 0 {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	b.WriteString(s[:i])
	for _, r := range s[i:] {
		switch {
		case !unsafeForTerminal(r):
			b.WriteRune(r)
		case r < 0x80:
			fmt.Fprintf(&b, `\x%02x`, r)
		default:
			fmt.Fprintf(&b, `\u%04x`, r)
		}
	}
	return b.String()
}

// unsafeForTerminal reports whether a terminal acts on r rather than
// show it (termSafe).
func unsafeForTerminal(r rune) bool {
	switch {
	case r == '\n' || r == '\t':
		return false
	case r < 0x20 || r == 0x7f:
		return true
	case r < 0x80:
		return false
	}
	return r <= 0x9f || 0x202a <= r && r <= 0x202e || 0x2066 <= r && r <= 0x2069
}

// fit cuts the last column's cells so that each line fits in width
// display columns, leaving that column min columns at least.
func (t *table) fit(width, min int) { t.fitTo, t.fitMin = width, min }

// limit cuts the cells of column col (the header's too) to at most w
// display columns, with an ellipsis.
func (t *table) limit(col, w int) {
	if t.widths == nil {
		t.widths = map[int]int{}
	}
	t.widths[col] = w
}

func (t *table) flush() {
	// Each column but a row's last is padded to the widest of its cells,
	// then two spaces, as text/tabwriter pads (which counts bytes' runes,
	// not the columns a terminal shows).
	var colw []int
	for _, r := range t.rows {
		for i := range r {
			if w, ok := t.widths[i]; ok {
				r[i] = truncateWidth(r[i], w)
			}
			if i == len(r)-1 {
				continue
			}
			for len(colw) <= i {
				colw = append(colw, 0)
			}
			colw[i] = max(colw[i], displayWidth(r[i]))
		}
	}
	if t.fitTo > 0 {
		used := displayWidth(t.indent)
		for _, w := range colw {
			used += w + 2
		}
		last := max(t.fitMin, t.fitTo-used)
		for _, r := range t.rows {
			if n := len(r) - 1; n >= 0 && n == len(colw) {
				r[n] = truncateWidth(r[n], last)
			}
		}
	}
	var b strings.Builder
	for i, r := range t.rows {
		b.Reset()
		for j, cell := range r {
			b.WriteString(cell)
			if j < len(r)-1 {
				b.WriteString(strings.Repeat(" ", colw[j]-displayWidth(cell)+2))
			}
		}
		l := strings.TrimRight(b.String(), " ") // an empty last column leaves padding
		if i < len(t.styles) {
			l = t.c.paint(t.styles[i], l)
		}
		io.WriteString(t.c.stdout, t.indent+l+"\n")
	}
}

// displayWidth is the columns a terminal gives s, its escape sequences
// (a search hit's marks in color) taking none.
func displayWidth(s string) int {
	if strings.IndexByte(s, 0x1b) < 0 {
		return runewidth.StringWidth(s)
	}
	return runewidth.StringWidth(ansiEscape.ReplaceAllString(s, ""))
}

// ansiEscape matches a CSI escape sequence (colors).
var ansiEscape = regexp.MustCompile(`\x1b\[[0-9;?]*[ -/]*[@-~]`)

// truncateWidth cuts s to at most w display columns, ending it with an
// ellipsis when it is cut; it cuts between graphemes (never inside a
// character, an emoji of several code points or a letter and its
// accent), so it may be a column short.
func truncateWidth(s string, w int) string {
	if w <= 0 {
		return ""
	}
	if runewidth.StringWidth(s) <= w {
		return s
	}
	return runewidth.Truncate(s, w, "…")
}

// truncated tells on stderr that --limit left items out.
func (c *call) truncated(shown, total int, what string) {
	if total > shown {
		fmt.Fprintf(c.stderr, "agentsession: %d of %s shown; --limit 0 shows all\n", shown, plural(total, what))
	}
}

// limited returns how many of n items --limit lets through.
func (c *call) limited(n int) int {
	if c.limit > 0 && n > c.limit {
		return c.limit
	}
	return n
}

// ---- The pager ----

// page writes out to stdout, through $PAGER (default "less -FRX") when
// it is as long as the terminal is high, or longer. A pager that cannot be started leaves
// the output printed as it is.
func page(out *bytes.Buffer, stdout, stderr io.Writer, term terminal) {
	if bytes.Count(out.Bytes(), []byte{'\n'}) < term.rows {
		stdout.Write(out.Bytes())
		return
	}
	pager, set := os.LookupEnv("PAGER")
	if !set {
		pager = "less -FRX"
	}
	prog := strings.Fields(pager)
	if len(prog) == 0 || prog[0] == "cat" {
		stdout.Write(out.Bytes())
		return
	}
	if _, err := exec.LookPath(prog[0]); err != nil {
		stdout.Write(out.Bytes()) // no such pager (no less on Windows, say)
		return
	}
	var cmd *exec.Cmd
	if runtime.GOOS == "windows" {
		cmd = exec.Command(prog[0], prog[1:]...)
	} else {
		cmd = exec.Command("sh", "-c", pager)
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = bytes.NewReader(out.Bytes()), stdout, stderr
	cmd.Env = os.Environ()
	if _, ok := os.LookupEnv("LESS"); !ok {
		cmd.Env = append(cmd.Env, "LESS=FRX") // as git does, for a PAGER=less
	}
	if err := cmd.Start(); err != nil {
		stdout.Write(out.Bytes())
		return
	}
	_ = cmd.Wait() // the pager said what went wrong, if anything did
}

// ---- The progress line ----

// progressDelay is how long work runs before its progress line shows.
var progressDelay = time.Second

// progress is a line on stderr, redrawn in place, that says how far
// long work has come; it shows only on a terminal, and only once the
// work has taken progressDelay. Its methods do nothing on a nil one.
type progress struct {
	w     *lineWriter
	label string
	start time.Time
	mu    sync.Mutex
	done  int
	total int
	stop  chan struct{}
	wg    sync.WaitGroup
	once  sync.Once
}

// safeWriter writes plain text (stderr's messages) made safe for a
// terminal by termSafe.
type safeWriter struct{ w io.Writer }

func (s *safeWriter) Write(p []byte) (int, error) {
	if !bytes.ContainsFunc(p, unsafeForTerminal) {
		return s.w.Write(p)
	}
	if _, err := io.WriteString(s.w, termSafe(string(p))); err != nil {
		return 0, err
	}
	return len(p), nil
}

// lineWriter is stderr shared by the progress line and the messages: a
// message first clears the progress line, which is drawn again after.
// With safe, a message is made safe for a terminal (safeWriter).
type lineWriter struct {
	mu    sync.Mutex
	w     io.Writer
	shown bool
	safe  bool
}

func (l *lineWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.clear()
	if l.safe && bytes.ContainsFunc(p, unsafeForTerminal) {
		if _, err := io.WriteString(l.w, termSafe(string(p))); err != nil {
			return 0, err
		}
		return len(p), nil
	}
	return l.w.Write(p)
}

func (l *lineWriter) clear() {
	if l.shown {
		io.WriteString(l.w, "\r\x1b[K")
		l.shown = false
	}
}

// progress starts a progress line; nil when stderr is no terminal.
func (c *call) progress(label string) *progress {
	if !c.term.errTTY {
		return nil
	}
	lw, ok := c.stderr.(*lineWriter)
	if !ok {
		lw = &lineWriter{w: c.stderr}
		if sw, ok := c.stderr.(*safeWriter); ok {
			lw = &lineWriter{w: sw.w, safe: true} // the progress line's own escapes go to the terminal
		}
		c.stderr = lw
	}
	p := &progress{w: lw, label: label, start: time.Now(), stop: make(chan struct{})}
	p.wg.Add(1)
	go p.loop()
	return p
}

func (p *progress) loop() {
	defer p.wg.Done()
	select {
	case <-time.After(progressDelay):
	case <-p.stop:
		return
	}
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	for {
		p.draw()
		select {
		case <-t.C:
		case <-p.stop:
			return
		}
	}
}

func (p *progress) draw() {
	p.mu.Lock()
	line := p.label
	switch {
	case p.total > 0:
		line += fmt.Sprintf(": %d/%d", p.done, p.total)
	case p.done > 0:
		line += fmt.Sprintf(": %d", p.done)
	}
	p.mu.Unlock()
	line += fmt.Sprintf(" (%ds)", int(time.Since(p.start).Seconds()))
	p.w.mu.Lock()
	io.WriteString(p.w.w, "\r\x1b[K"+cell(line))
	p.w.shown = true
	p.w.mu.Unlock()
}

// set says how far the work is: done of total (0: not known).
func (p *progress) set(label string, done, total int) {
	if p == nil {
		return
	}
	p.mu.Lock()
	if label != "" {
		p.label = label
	}
	p.done, p.total = done, total
	p.mu.Unlock()
}

// end removes the progress line; it may be called again.
func (p *progress) end() {
	if p == nil {
		return
	}
	p.once.Do(func() {
		close(p.stop)
		p.wg.Wait()
		p.w.mu.Lock()
		p.w.clear()
		p.w.mu.Unlock()
	})
}
