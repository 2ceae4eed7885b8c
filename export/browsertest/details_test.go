package browsertest

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentsession/session/export"
)

// detailLines builds, as stored lines in pi's format, a session with
// what a reader of a real one meets: usage without prices, tool calls of
// pi's tools (bash, edit with and without the diff pi records, write),
// seven compactions whose summaries start with the same preamble (as
// Claude Code's and pi's structured ones do), written within one minute,
// extension messages and custom entries, and a second root of a single
// entry. It returns the lines and the usage totals of all of them.
func detailLines(t *testing.T) (lines []string, in, out, cacheRead, cacheWrite int) {
	t.Helper()
	parent, n := "", 0
	add := func(kind string, fields map[string]any) string {
		n++
		id := fmt.Sprintf("d%02d", n)
		e := map[string]any{"type": kind, "id": id, "timestamp": fmt.Sprintf("2026-03-01T09:%02d:%02dZ", n/60, n%60)}
		if parent != "" {
			e["parentId"] = parent
		} else {
			e["parentId"] = nil
		}
		for k, v := range fields {
			e[k] = v
		}
		b, err := json.Marshal(e)
		require.NoError(t, err)
		lines = append(lines, string(b))
		parent = id
		return id
	}
	msg := func(m map[string]any) string { return add("message", map[string]any{"message": m}) }
	assistant := func(i, o, cr, cw int, content ...any) string {
		in, out, cacheRead, cacheWrite = in+i, out+o, cacheRead+cr, cacheWrite+cw
		return msg(map[string]any{"role": "assistant", "content": content, "api": "anthropic-messages", "provider": "anthropic", "model": "claude-sonnet-4-5",
			"stopReason": "toolUse", "usage": map[string]any{"input": i, "output": o, "cacheRead": cr, "cacheWrite": cw, "totalTokens": i + o + cr + cw,
				"cost": map[string]any{"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}}})
	}
	call := func(id, name string, args map[string]any) map[string]any {
		return map[string]any{"type": "toolCall", "id": id, "name": name, "arguments": args}
	}
	result := func(id, name, text string, details any) {
		m := map[string]any{"role": "toolResult", "toolCallId": id, "toolName": name, "content": []any{map[string]any{"type": "text", "text": text}}, "isError": false}
		if details != nil {
			m["details"] = details
		}
		msg(m)
	}
	msg(map[string]any{"role": "user", "content": "Rename loadConfig to LoadConfig."})
	assistant(1200, 80, 0, 300, map[string]any{"type": "text", "text": "Where is it used?"}, call("c1", "bash", map[string]any{"command": "grep -rn loadConfig .", "timeout": 30}))
	result("c1", "bash", "cmd/main.go:12:\tcfg := loadConfig()\nconfig.go:3:func loadConfig() *Config {", nil)
	assistant(1500, 120, 1200, 0, call("c2", "edit", map[string]any{"path": "config.go",
		"oldText": "package main\n\n// loads it\nfunc loadConfig() *Config {\n\treturn &Config{}\n}",
		"newText": "package main\n\n// loads it\nfunc LoadConfig() *Config {\n\treturn &Config{Strict: true}\n}"}))
	result("c2", "edit", "Successfully replaced text in config.go.", nil)
	assistant(1700, 90, 1500, 0, call("c3", "edit", map[string]any{"path": "cmd/main.go", "oldText": "cfg := loadConfig()", "newText": "cfg := LoadConfig()"}))
	result("c3", "edit", "Successfully replaced text in cmd/main.go.", map[string]any{"diff": "  11 func main() {\n- 12 \tcfg := loadConfig()\n+ 12 \tcfg := LoadConfig()\n  13 \trun(cfg)"})
	assistant(1700, 60, 1700, 0, call("c4", "write", map[string]any{"path": "NOTES.md", "content": "# Notes\nloadConfig is now LoadConfig.\n"}))
	result("c4", "write", "Successfully wrote 38 bytes to NOTES.md", nil)
	for k := 1; k <= 7; k++ {
		// Claude Code's preamble, or pi's structured checkpoint with a
		// heading of its own.
		summary := "This session is being continued from a previous conversation that ran out of context. The conversation is summarized below:\nAnalysis:\n"
		if k%2 == 0 {
			summary = fmt.Sprintf("# Context Checkpoint: the rename\n\n## Goal\nRename loadConfig.\n\n## Done in part %d\n", k)
		}
		add("compaction", map[string]any{
			"summary":      summary + fmt.Sprintf("Step %d of the rename: compacted part %d.", k, k),
			"tokensBefore": 40000 + k, "firstKeptEntryId": "d01"})
		msg(map[string]any{"role": "user", "content": fmt.Sprintf("Go on with step %d.", k+1)})
	}
	add("custom_message", map[string]any{"customType": "context-injector", "content": "INJECTED the project's rules, many lines of them", "display": true})
	msg(map[string]any{"role": "custom", "customType": "reminder", "content": "REMINDER run the tests", "display": true, "timestamp": 1})
	add("custom", map[string]any{"customType": "my-ext.state", "data": map[string]any{"STATEKEY": 1}})
	assistant(900, 40, 800, 0, map[string]any{"type": "text", "text": "Done: loadConfig is LoadConfig everywhere."})
	parent = ""
	msg(map[string]any{"role": "user", "content": "An unrelated question, alone on its branch."})
	return lines, in, out, cacheRead, cacheWrite
}

func detailPage(t *testing.T) (path string, in, out, cacheRead, cacheWrite int) {
	t.Helper()
	lines, in, out, cacheRead, cacheWrite := detailLines(t)
	env := &export.Envelope{Format: export.Format, Version: export.Version, Leaf: "d27"}
	env.Header.ID = "details"
	env.Header.Timestamp = time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	return envelopePage(t, env, "Details", lines), in, out, cacheRead, cacheWrite
}

// The header says how many tokens the session used, summed over the
// usage of every model call on every branch, and names what it sums.
func TestViewerTokenTotals(t *testing.T) {
	path, in, out, cacheRead, cacheWrite := detailPage(t)
	b := newBrowser(t)
	b.do(t, viewport(1200, 800, false), chromedp.Navigate(fileURL(path)), chromedp.WaitVisible(chromedp.CSS(`#list .entry`)), settle())
	meta := eval[string](t, b, `document.getElementById("meta").innerText`)
	for _, want := range []string{
		fmt.Sprintf("input %s", commas(in)), fmt.Sprintf("output %s", commas(out)),
		fmt.Sprintf("cache read %s", commas(cacheRead)), fmt.Sprintf("cache write %s", commas(cacheWrite)),
		"5 model calls", "all branches",
	} {
		assert.Contains(t, meta, want)
	}
	b.noErrors(t)
}

// With no prices known (every cost 0, as pi records then), no cost is
// shown: not "$0.0000" in the header, nor under a turn.
func TestViewerNoCostWhenUnknown(t *testing.T) {
	path, _, _, _, _ := detailPage(t)
	b := newBrowser(t)
	b.do(t, viewport(1200, 800, false), chromedp.Navigate(fileURL(path)), chromedp.WaitVisible(chromedp.CSS(`#list .entry`)), settle())
	b.do(t, chromedp.Click(chromedp.CSS(`#go-top`)), settle())
	all := eval[string](t, b, `document.body.innerText`)
	assert.NotContains(t, all, "$0.0")
	assert.NotContains(t, all, "$0")
	assert.Equal(t, 0, b.number(t, `document.querySelectorAll(".cost").length`))
	b.noErrors(t)
}

// Seven compactions are seven distinct events: each with its own time
// (to the second, as they came within a minute) and an excerpt of what
// its summary says, past the preamble they share.
func TestViewerCompactionsDistinct(t *testing.T) {
	path, _, _, _, _ := detailPage(t)
	b := newBrowser(t)
	b.do(t, viewport(1200, 800, false), chromedp.Navigate(fileURL(path)), chromedp.WaitVisible(chromedp.CSS(`#list .entry`)), settle())
	events := eval[[]string](t, b, `Array.from(document.querySelectorAll("#events .nav-item"), e => e.innerText).filter(s => s.includes("Compaction"))`)
	require.Len(t, events, 7)
	subs := eval[[]string](t, b, `Array.from(document.querySelectorAll("#events .nav-item"), e => e.innerText.includes("Compaction") ? e.querySelector(".nav-sub").textContent : null).filter(s => s !== null)`)
	require.Len(t, subs, 7)
	seen := map[string]bool{}
	for k, e := range events {
		assert.Contains(t, e, fmt.Sprintf("Step %d of the rename", k+1), "the excerpt says what this summary holds")
		assert.True(t, strings.HasPrefix(subs[k], fmt.Sprintf("Step %d of the rename", k+1)), "the excerpt starts with it, not a shared preamble or a heading: %q", subs[k])
		seen[e] = true
	}
	assert.Len(t, seen, 7, "no two events look the same")

	cards := eval[[]string](t, b, `Array.from(document.querySelectorAll("#list .entry.summary"), e => e.innerText)`)
	require.Len(t, cards, 7)
	times := map[string]bool{}
	re := regexp.MustCompile(`\d{4}-\d\d-\d\d \d\d:\d\d:\d\d`)
	for k, c := range cards {
		assert.Contains(t, c, fmt.Sprintf("Step %d of the rename", k+1))
		times[re.FindString(c)] = true
	}
	assert.Len(t, times, 7, "each card shows its own time")
	b.noErrors(t)
}

// Extension messages and custom entries are folded: their content shows
// only once opened.
func TestViewerCustomFolded(t *testing.T) {
	path, _, _, _, _ := detailPage(t)
	b := newBrowser(t)
	b.do(t, viewport(1200, 800, false), chromedp.Navigate(fileURL(path)), chromedp.WaitVisible(chromedp.CSS(`#list .entry`)), settle())
	b.do(t, chromedp.Click(chromedp.CSS(`#go-end`)), settle())
	assert.Equal(t, 3, b.number(t, `document.querySelectorAll("#list details.custom").length`))
	assert.Equal(t, 0, b.number(t, `document.querySelectorAll("#list details.custom[open]").length`), "collapsed by default")
	text := b.listText(t)
	for _, hidden := range []string{"INJECTED", "REMINDER", "STATEKEY"} {
		assert.NotContains(t, text, hidden)
	}
	for _, shown := range []string{"context-injector", "reminder", "my-ext.state"} {
		assert.Contains(t, text, shown, "the fold names what it holds")
	}
	b.do(t, chromedp.Evaluate[chromedp.Void](`document.querySelectorAll("#list details.custom > summary").forEach(s => s.click())`), settle())
	text = b.listText(t)
	for _, shown := range []string{"INJECTED", "REMINDER", "STATEKEY"} {
		assert.Contains(t, text, shown, "and expand")
	}
	b.noErrors(t)
}

// Counts agree with their nouns: "1 entry", never "1 entries".
func TestViewerPlurals(t *testing.T) {
	path, _, _, _, _ := detailPage(t)
	b := newBrowser(t)
	b.do(t, viewport(1200, 800, false), chromedp.Navigate(fileURL(path)), chromedp.WaitVisible(chromedp.CSS(`#list .entry`)), settle())
	all := eval[string](t, b, `document.body.innerText`)
	assert.Contains(t, all, "\u00b7 1 entry")
	assert.NotRegexp(t, `(^|[^0-9,.])1 (entries|messages|branches|lines|characters|tokens|secrets|model calls)\b`, all)
	b.noErrors(t)
}

// pi's tools read as pi's own export shows them: an edit as a diff of
// its text (pi's recorded diff when the result has one), a write as the
// file's content, a shell call as its command with its output.
func TestViewerToolCalls(t *testing.T) {
	path, _, _, _, _ := detailPage(t)
	b := newBrowser(t)
	b.do(t, viewport(1200, 800, false), chromedp.Navigate(fileURL(path)), chromedp.WaitVisible(chromedp.CSS(`#list .entry`)), settle())
	calls := eval[[]string](t, b, `Array.from(document.querySelectorAll("#list .tool-call"), e => e.innerText)`)
	require.Len(t, calls, 4)

	bash := calls[0]
	assert.Contains(t, bash, "$ grep -rn loadConfig .")
	assert.Contains(t, bash, "config.go:3:func loadConfig() *Config {", "with its output")
	assert.NotContains(t, bash, `"command"`, "not as JSON")

	lines := func(k int, cls string) []string {
		return eval[[]string](t, b, fmt.Sprintf(`Array.from(document.querySelectorAll("#list .tool-call")[%d].querySelectorAll(".diff .%s"), e => e.textContent)`, k, cls))
	}
	assert.Equal(t, []string{"-func loadConfig() *Config {", "-\treturn &Config{}"}, lines(1, "diff-del"))
	assert.Equal(t, []string{"+func LoadConfig() *Config {", "+\treturn &Config{Strict: true}"}, lines(1, "diff-add"))
	assert.Equal(t, []string{" package main", " ", " // loads it", " }"}, lines(1, "diff-ctx"))
	assert.Contains(t, calls[1], "config.go")
	assert.NotContains(t, calls[1], `"oldText"`)

	assert.Equal(t, []string{"- 12 \tcfg := loadConfig()"}, lines(2, "diff-del"), "pi's own diff, as recorded")
	assert.Equal(t, []string{"+ 12 \tcfg := LoadConfig()"}, lines(2, "diff-add"))

	assert.Contains(t, calls[3], "NOTES.md")
	assert.Contains(t, calls[3], "loadConfig is now LoadConfig.")
	assert.NotContains(t, calls[3], `"content"`)

	b.shot(t, "details-tools.png")
	b.do(t, chromedp.Click(chromedp.CSS(`#go-end`)), settle())
	b.shot(t, "details-end.png")

	// The results these calls show are not shown a second time.
	text := b.listText(t)
	assert.Equal(t, 1, strings.Count(text, "config.go:3:func loadConfig() *Config {"))
	b.noErrors(t)
}

// commas writes n as the viewer does, with thousands separated.
func commas(n int) string {
	s := fmt.Sprint(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// The line diff is right and minimal: on thousands of random pairs of
// texts of a few letters a line, its kept and removed lines give back
// the old text, its kept and added lines the new one, and it keeps as
// many lines as the longest common subsequence (computed here by the
// textbook quadratic table), in the page itself.
func TestViewerLineDiff(t *testing.T) {
	path, _, _, _, _ := detailPage(t)
	b := newBrowser(t)
	b.do(t, chromedp.Navigate(fileURL(path)), chromedp.WaitVisible(chromedp.CSS(`#list .entry`)))
	bad := eval[string](t, b, `(() => {
		let seed = 7;
		const rnd = n => { seed = (seed * 1103515245 + 12345) % 2147483648; return seed % n; };
		const text = () => Array.from({length: rnd(14)}, () => "abcd"[rnd(4)]).join("\n");
		const lcs = (a, b) => {
			const t = Array.from({length: a.length + 1}, () => new Int32Array(b.length + 1));
			for (let i = a.length - 1; i >= 0; i--) for (let j = b.length - 1; j >= 0; j--)
				t[i][j] = a[i] === b[j] ? t[i + 1][j + 1] + 1 : Math.max(t[i + 1][j], t[i][j + 1]);
			return t[0][0];
		};
		for (let k = 0; k < 3000; k++) {
			const x = text(), y = text();
			const ops = agentsessionViewer.lineDiff(x, y);
			const old = ops.filter(o => o[0] !== "+").map(o => o[1]).join("\n");
			const neu = ops.filter(o => o[0] !== "-").map(o => o[1]).join("\n");
			const kept = ops.filter(o => o[0] === " ").length;
			const lines = s => s === "" ? [] : s.split("\n");
			if (old !== x || neu !== y || kept !== lcs(lines(x), lines(y))) return JSON.stringify({x, y, ops});
		}
		// Past its budget (two long texts with nothing in common) it
		// still answers, every line removed then added.
		const big = n => Array.from({length: n}, (_, i) => "line " + i + " " + n).join("\n");
		const ops = agentsessionViewer.lineDiff(big(3000), big(3001));
		if (ops.length !== 6001 || ops[0][0] !== "-" || ops[6000][0] !== "+") return "over budget: " + ops.length;
		return "";
	})()`)
	assert.Empty(t, bad, "a diff that does not give back its texts, or is not minimal")
	b.noErrors(t)
}

// Tool calls of pi's names with arguments of the wrong shapes fall back
// to their arguments as JSON, or show what they can; nothing in them
// runs, and the page throws nothing.
func TestViewerToolCallsHostile(t *testing.T) {
	b := newBrowser(t)
	lines := []string{
		`{"type":"message","id":"h1","parentId":null,"timestamp":"2026-01-01T00:00:00Z","message":{"role":"assistant","content":[` +
			`{"type":"toolCall","id":"x1","name":"bash","arguments":{"command":{"not":"a string"}}},` +
			`{"type":"toolCall","id":"x2","name":"edit","arguments":{"path":"a.go","edits":[null,5,{"oldText":3,"newText":"</script><img src=x onerror=window.pwned=1>"}]}},` +
			`{"type":"toolCall","id":"x3","name":"write","arguments":["path","content"]},` +
			`{"type":"toolCall","id":"x4","name":"edit","arguments":{"path":"b.go","oldText":"a","newText":"b"}},` +
			`{"type":"toolCall","id":"x5","name":"bash","arguments":{"command":"<b>echo</b>"}}]}}`,
		`{"type":"message","id":"h2","parentId":"h1","timestamp":"2026-01-01T00:00:01Z","message":{"role":"toolResult","toolCallId":"x4","toolName":"edit","content":"not blocks","details":{"diff":{"not":"text"}},"isError":true}}`,
		`{"type":"message","id":"h3","parentId":"h2","timestamp":"2026-01-01T00:00:02Z","message":{"role":"toolResult","toolCallId":"x5","toolName":"bash","content":[{"type":"text","text":"<script>window.pwned=2</script>"}],"details":null}}`,
	}
	env := &export.Envelope{Format: export.Format, Version: export.Version, Leaf: "h3"}
	env.Header.ID = "hostile-tools"
	path := envelopePage(t, env, "", lines)
	b.do(t, viewport(1200, 800, false), chromedp.Navigate(fileURL(path)), chromedp.WaitVisible(chromedp.CSS(`#list .entry`)), settle())
	assert.Equal(t, "undefined", eval[string](t, b, `typeof window.pwned`), "no text of the session ran")
	text := b.listText(t)
	assert.Contains(t, text, `"not": "a string"`, "a command that is not text: its arguments as JSON")
	assert.Contains(t, text, "+</script><img src=x onerror=window.pwned=1>", "an edit's text shows as text")
	assert.Contains(t, text, "$ <b>echo</b>")
	assert.Contains(t, text, "<script>window.pwned=2</script>")
	assert.Equal(t, 0, b.number(t, `document.querySelectorAll("#list img, #list b, #list script").length`))
	b.noErrors(t)
}
