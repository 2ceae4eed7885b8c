package browsertest

import (
	"fmt"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentsession/session/export"
)

// robustPage writes a page of lines whose leaf is leaf.
func robustPage(t *testing.T, lines []string, leaf string) string {
	t.Helper()
	env := &export.Envelope{Format: export.Format, Version: export.Version, Leaf: leaf}
	env.Header.ID = "robust"
	return envelopePage(t, env, "", lines)
}

// openReady opens path and requires that the viewer got to the end of
// its start: the page's script runs before the load event Navigate
// waits for, so no wait stands in for it.
func openReady(t *testing.T, path string) *browser {
	t.Helper()
	b := newBrowser(t)
	b.do(t, viewport(1200, 800, false), chromedp.Navigate(fileURL(path)))
	require.Equal(t, "true", eval[string](t, b, `document.body.dataset.ready || ""`), "the viewer started (errors: %q, status: %q)",
		b.reported(), eval[string](t, b, `document.getElementById("status").textContent`))
	b.do(t, settle())
	return b
}

func msg(id, parent, body string) string {
	p := "null"
	if parent != "" {
		p = `"` + parent + `"`
	}
	return fmt.Sprintf(`{"type":"message","id":%q,"parentId":%s,"timestamp":"2026-01-01T00:00:00Z","message":%s}`, id, p, body)
}

// Members that are objects no conversion to text or number accepts
// ({"toString":1}: String(), Number() and + throw on them), wherever
// they are, cost at most the entry that holds them: the page starts,
// the other entries show, and nothing is thrown.
func TestViewerUnconvertibleMembers(t *testing.T) {
	bad := `{"toString":1,"valueOf":2}`
	lines := []string{
		msg("a1", "", `{"role":"user","content":"FIRST-ENTRY"}`),
		msg("a2", "a1", `{"role":"assistant","content":[{"type":"toolCall","id":`+bad+`,"name":"edit","arguments":{"path":"a.go","oldText":"a","newText":"b"}},{"type":"toolCall","id":"c1","name":"bash","arguments":{"command":"ls"}},{"type":"toolCall","id":`+bad+`,"name":`+bad+`,"arguments":{"x":1}}],"usage":{"input":`+bad+`,"output":1,"cacheRead":`+bad+`,"totalTokens":`+bad+`,"cost":{"total":`+bad+`}},"model":`+bad+`,"stopReason":"error","errorMessage":`+bad+`}`),
		msg("a3", "a2", `{"role":"toolResult","toolCallId":"c1","toolName":`+bad+`,"content":"out"}`),
		msg("a4", "a3", `{"role":`+bad+`,"content":"x","customType":`+bad+`}`),
		msg("a5", "a4", `{"role":"bashExecution","command":`+bad+`,"output":`+bad+`,"exitCode":`+bad+`}`),
		`{"type":"model_change","id":"a6","parentId":"a5","timestamp":"2026-01-01T00:00:00Z","provider":` + bad + `,"modelId":` + bad + `}`,
		`{"type":"compaction","id":"a7","parentId":"a6","timestamp":` + bad + `,"summary":"s","tokensBefore":` + bad + `}`,
		`{"type":"session_info","id":"a8","parentId":"a7","timestamp":"2026-01-01T00:00:00Z","name":` + bad + `}`,
		`{"type":"custom","id":"a9","parentId":"a8","timestamp":"2026-01-01T00:00:00Z","customType":` + bad + `}`,
		`{"type":"thinking_level_change","id":"a10","parentId":"a9","timestamp":"2026-01-01T00:00:00Z","thinkingLevel":` + bad + `}`,
		msg("a11", "a10", `{"role":"user","content":"LAST-ENTRY"}`),
	}
	b := openReady(t, robustPage(t, lines, "a11"))
	text := b.listText(t)
	assert.Contains(t, text, "FIRST-ENTRY")
	assert.Contains(t, text, "LAST-ENTRY")
	assert.Contains(t, eval[string](t, b, `document.getElementById("meta").textContent`), "Tokens")
	b.noErrors(t)
}

// JSON nested thousands deep (JSON.stringify overflows the stack on
// it) shows, cut to a depth, and the entries around it still show.
func TestViewerDeepJSON(t *testing.T) {
	const depth = 9000
	deep := strings.Repeat(`{"a":`, depth) + "1" + strings.Repeat("}", depth)
	deepArr := strings.Repeat(`[`, depth) + "1" + strings.Repeat("]", depth)
	lines := []string{
		msg("a1", "", `{"role":"user","content":"FIRST-ENTRY"}`),
		`{"type":"custom","id":"a2","parentId":"a1","timestamp":"2026-01-01T00:00:01Z","customType":"x","data":` + deep + `}`,
		msg("a3", "a2", `{"role":"assistant","content":[{"type":"toolCall","id":"c1","name":"bash","arguments":{"command":"ls","extra":`+deepArr+`}},{"type":"toolCall","id":"c2","name":"other","arguments":{"extra":`+deepArr+`}},{"type":"mystery","x":`+deep+`}]}`),
		`{"type":"something_new","id":"a4","parentId":"a3","timestamp":"2026-01-01T00:00:01Z","x":` + deep + `}`,
		msg("a5", "a4", `{"role":"user","content":"LAST-ENTRY"}`),
	}
	b := openReady(t, robustPage(t, lines, "a5"))
	b.do(t, chromedp.Evaluate[chromedp.Void](`document.querySelectorAll("#list details").forEach(d => d.open = true)`), settle())
	text := b.listText(t)
	assert.Contains(t, text, "FIRST-ENTRY")
	assert.Contains(t, text, "LAST-ENTRY")
	assert.Contains(t, text, "something_new")
	assert.Contains(t, text, "$ ls")
	assert.Contains(t, text, "\u2026", "the cut shows")
	// An entry that cannot be shown otherwise shows as its JSON, cut too.
	card := eval[string](t, b, `agentsessionViewer.renderer.fallback(agentsessionViewer.tree.index("a4"), new Error("BOOM")).textContent`)
	assert.Contains(t, card, "BOOM")
	assert.Contains(t, card, `"type": "something_new"`)
	assert.Contains(t, card, "\u2026")
	b.noErrors(t)
}

// Roles and types that name members every object inherits
// ("constructor", "__proto__", "toString") are names like any other.
func TestViewerInheritedNames(t *testing.T) {
	lines := []string{
		msg("a1", "", `{"role":"constructor","content":"ROLE-CONSTRUCTOR"}`),
		`{"type":"constructor","id":"a2","parentId":"a1","timestamp":"2026-01-01T00:00:01Z"}`,
		msg("a3", "a2", `{"role":"__proto__","content":"ROLE-PROTO"}`),
		`{"type":"__proto__","id":"a4","parentId":"a3","timestamp":"2026-01-01T00:00:01Z"}`,
		`{"type":"toString","id":"a5","parentId":"a4","timestamp":"2026-01-01T00:00:01Z"}`,
		msg("a6", "a5", `{"role":"hasOwnProperty","content":"ROLE-HOP"}`),
	}
	b := openReady(t, robustPage(t, lines, "a6"))
	text := b.listText(t) + eval[string](t, b, `document.getElementById("events").innerText`)
	for _, s := range []string{"native code", "[object Object]", "function"} {
		assert.NotContains(t, text, s)
	}
	for _, s := range []string{"ROLE-CONSTRUCTOR", "ROLE-PROTO", "ROLE-HOP", "constructor", "__proto__", "toString"} {
		assert.Contains(t, text, s)
	}
	assert.Contains(t, eval[string](t, b, `document.getElementById("events").innerText`), "none", "no event of these types")
	b.noErrors(t)
}

// Two branches whose calls have the same id: each call shows the
// result below it, never the other branch's.
func TestViewerResultOnItsBranch(t *testing.T) {
	lines := []string{
		msg("u", "", `{"role":"user","content":"hi"}`),
		msg("A", "u", `{"role":"assistant","content":[{"type":"toolCall","id":"call_1","name":"bash","arguments":{"command":"echo A"}}]}`),
		msg("Ar", "A", `{"role":"toolResult","toolCallId":"call_1","toolName":"bash","content":"OUTPUT-OF-BRANCH-A"}`),
		msg("B", "u", `{"role":"assistant","content":[{"type":"toolCall","id":"call_1","name":"bash","arguments":{"command":"echo B"}}]}`),
		msg("Br", "B", `{"role":"toolResult","toolCallId":"call_1","toolName":"bash","content":"OUTPUT-OF-BRANCH-B"}`),
		msg("C", "u", `{"role":"assistant","content":[{"type":"toolCall","id":"call_1","name":"bash","arguments":{"command":"echo C"}}]}`),
	}
	b := openReady(t, robustPage(t, lines, "Br"))
	text := b.listText(t)
	assert.Contains(t, text, "OUTPUT-OF-BRANCH-B")
	assert.NotContains(t, text, "OUTPUT-OF-BRANCH-A")
	assert.Equal(t, 1, strings.Count(text, "OUTPUT-OF-BRANCH-B"), "shown with its call only")

	b = openReady(t, robustPage(t, lines, "Ar"))
	text = b.listText(t)
	assert.Contains(t, text, "OUTPUT-OF-BRANCH-A")
	assert.NotContains(t, text, "OUTPUT-OF-BRANCH-B")

	b = openReady(t, robustPage(t, lines, "C"))
	text = b.listText(t)
	assert.NotContains(t, text, "OUTPUT-OF-BRANCH")
	assert.Contains(t, text, "no output recorded")
	b.noErrors(t)
}

// A result far below its call (many calls answered one by one) shows
// once: with its call, and as a note where it is.
func TestViewerResultFarBelow(t *testing.T) {
	var calls []string
	for i := 0; i < 100; i++ {
		calls = append(calls, fmt.Sprintf(`{"type":"toolCall","id":"c%d","name":"bash","arguments":{"command":"echo %d"}}`, i, i))
	}
	lines := []string{msg("a1", "", `{"role":"user","content":"hi"}`), msg("a2", "a1", `{"role":"assistant","content":[`+strings.Join(calls, ",")+`]}`)}
	prev := "a2"
	for i := 0; i < 100; i++ {
		id := fmt.Sprintf("r%d", i)
		lines = append(lines, msg(id, prev, fmt.Sprintf(`{"role":"toolResult","toolCallId":"c%d","toolName":"bash","content":"OUT-%d-X"}`, i, i)))
		prev = id
	}
	b := openReady(t, robustPage(t, lines, prev))
	orphans := eval[string](t, b, `(() => { const tr = agentsessionViewer.tree, out = []; for (let i = 0; i < tr.n; i++) { const m = tr.message(i); if (m && m.role === "toolResult" && !tr.callOf(i)) out.push(m.toolCallId); } return out.join(","); })()`)
	assert.Empty(t, orphans, "results whose call is not found")
	b.do(t, chromedp.Click(chromedp.CSS(`#go-end`)), settle())
	assert.Equal(t, 0, strings.Count(b.listText(t), "OUT-99-X"), "the last result is shown with its call, not where it is")
	b.noErrors(t)
}

func numbered(n int, tag string) string {
	var sb strings.Builder
	for i := 0; i < n; i++ {
		if i > 0 {
			sb.WriteString(`\n`)
		}
		fmt.Fprintf(&sb, "%s%d", tag, i)
	}
	return sb.String()
}

// Long diffs (computed or recorded) and long commands are folded like
// other long text: no entry puts more than a few hundred nodes in the
// page until it is opened, and opening one shows all of it.
func TestViewerLongDiffsFolded(t *testing.T) {
	old, neu := numbered(20000, "o"), numbered(20000, "n")
	small1, small2 := numbered(2000, "p"), numbered(2000, "q")
	var eds []string
	for i := 0; i < 200; i++ {
		eds = append(eds, `{"oldText":"`+small1+`","newText":"`+small2+`"}`)
	}
	lines := []string{
		msg("a1", "", `{"role":"user","content":"hi"}`),
		msg("a2", "a1", `{"role":"assistant","content":[{"type":"toolCall","id":"e1","name":"edit","arguments":{"path":"a.go","oldText":"`+old+`","newText":"`+neu+`"}}]}`),
		msg("a3", "a2", `{"role":"assistant","content":[{"type":"toolCall","id":"e2","name":"edit","arguments":{"path":"a.go","edits":[`+strings.Join(eds, ",")+`]}}]}`),
		msg("a4", "a3", `{"role":"assistant","content":[{"type":"toolCall","id":"e3","name":"edit","arguments":{"path":"b.go","oldText":"x","newText":"y"}},{"type":"toolCall","id":"b1","name":"bash","arguments":{"command":"cat <<EOF\n`+numbered(20000, "line")+`\nEOF"}}]}`),
		msg("a5", "a4", `{"role":"toolResult","toolCallId":"e3","toolName":"edit","content":"ok","details":{"diff":"`+numbered(20000, "+ ")+`"}}`),
		msg("a6", "a5", `{"role":"user","content":"LAST-ENTRY"}`),
	}
	b := openReady(t, robustPage(t, lines, "a6"))
	per := eval[[]float64](t, b, `Array.from(document.querySelectorAll("#list .item"), e => e.querySelectorAll("*").length)`)
	require.Len(t, per, 6)
	for k, n := range per {
		assert.Less(t, n, 400.0, "nodes of item %d", k)
	}
	assert.Contains(t, b.listText(t), "LAST-ENTRY")
	// Opening the first diff shows all of it.
	b.do(t, chromedp.Evaluate[chromedp.Void](`document.querySelector("#list .tool-edit .fold-toggle").click()`), settle())
	assert.Equal(t, 20000, b.number(t, `document.querySelector("#list .tool-edit .diff").querySelectorAll(".diff-add").length`))
	assert.Equal(t, 20000, b.number(t, `document.querySelector("#list .tool-edit .diff").querySelectorAll(".diff-del").length`))
	// The edits past the first ones are one button until opened.
	assert.Equal(t, 200, b.number(t, `(() => { const c = document.querySelectorAll("#list .tool-edit")[1]; const btn = Array.from(c.querySelectorAll("button")).find(x => /more edits/.test(x.textContent)); btn.click(); return c.querySelectorAll(".diff").length; })()`))
	// The command opens whole too.
	b.do(t, chromedp.Evaluate[chromedp.Void](`document.querySelector("#list .tool-bash .fold-toggle").click()`), settle())
	assert.Contains(t, eval[string](t, b, `document.querySelector("#list .tool-bash pre.command").textContent`), "line19999\nEOF")
	b.noErrors(t)
}

// The diff of long lines that share long beginnings costs work in
// proportion to the text, not to the lines times their length: it is
// still right and minimal.
func TestViewerDiffLongLines(t *testing.T) {
	b := openReady(t, robustPage(t, []string{msg("a1", "", `{"role":"user","content":"hi"}`)}, "a1"))
	res := eval[string](t, b, `(() => {
		const P = "x".repeat(20000);
		const L = (n, tag) => Array.from({length: n}, (_, i) => P + tag + (i % 7)).join("\n");
		const t0 = performance.now();
		const ops = agentsessionViewer.lineDiff(L(1000, "a"), L(1000, "b"));
		const ms = Math.round(performance.now() - t0);
		const x = ["a","b","c","a","b","b","a"].map(s => P + s).join("\n"), y = ["c","b","a","b","a","c"].map(s => P + s).join("\n");
		const o2 = agentsessionViewer.lineDiff(x, y);
		const kept = o2.filter(o => o[0] === " ").length;
		const old = o2.filter(o => o[0] !== "+").map(o => o[1]).join("\n"), neu = o2.filter(o => o[0] !== "-").map(o => o[1]).join("\n");
		return ops.length + " " + kept + " " + (old === x) + " " + (neu === y) + " ms=" + ms;
	})()`)
	t.Log(res)
	assert.True(t, strings.HasPrefix(res, "2000 4 true true"), res)
	b.noErrors(t)
}
