package browsertest

import (
	"context"
	"io"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	session "github.com/agentsession/session"
	"github.com/agentsession/session/export"
)

// envelopePage writes the page of env holding the entries of lines, as
// stored, into a file of t's and returns its path.
func envelopePage(t *testing.T, env *export.Envelope, title string, lines []string) string {
	t.Helper()
	for _, l := range lines {
		e, err := session.ParseEntry([]byte(l))
		require.NoError(t, err, l)
		env.Entries = append(env.Entries, e)
	}
	return pageFile(t, func(w io.Writer) error { return export.WriteHTML(context.Background(), w, env, title) })
}

// A page of entries no well-behaved writer makes: the viewer shows what
// it can, runs none of the session's text, and throws nothing.
func TestHostileEnvelope(t *testing.T) {
	b := newBrowser(t)
	lines := []string{
		// A parent cycle, and an entry whose parent does not exist.
		`{"type":"message","id":"c1","parentId":"c2","timestamp":"2026-01-01T00:00:00Z","message":{"role":"user","content":"in a cycle"}}`,
		`{"type":"message","id":"c2","parentId":"c1","timestamp":"2026-01-01T00:00:01Z","message":{"role":"user","content":"in a cycle too"}}`,
		`{"type":"message","id":"o1","parentId":"nowhere","timestamp":"nonsense","message":{"role":"user","content":[{"type":"text","text":"</script><script>window.pwned=1</script><img src=x onerror=window.pwned=2>"}]}}`,
		// Members of the wrong types, blocks of unknown types, images that
		// must not load.
		`{"type":"message","id":"o2","parentId":"o1","timestamp":"2026-01-01T00:00:03Z","message":{"role":"assistant","content":[{"type":"mystery","x":1},null,7,{"type":"image","mimeType":"text/html","data":"PHNjcmlwdD4="},{"type":"image","mimeType":"image/png","data":"blob:sha256:0000000000000000000000000000000000000000000000000000000000000000"},{"type":"toolCall","name":{"not":"a string"},"arguments":"not an object"}],"usage":{"input":"many","cost":{"total":"free"}}}}`,
		`{"type":"message","id":"o3","parentId":"o2","timestamp":"2026-01-01T00:00:04Z","message":{"role":"robot","content":{"odd":true}}}`,
		`{"type":"compaction","id":"o4","parentId":"o3","timestamp":"2026-01-01T00:00:05Z","summary":{"not":"text"},"tokensBefore":"lots"}`,
		`{"type":"label","id":"o5","parentId":"o4","timestamp":"2026-01-01T00:00:06Z","targetId":"o2","label":"<b>bold</b>"}`,
		`{"type":"something_new","id":"o6","parentId":"o5","timestamp":"2026-01-01T00:00:07Z","payload":[1,2,3]}`,
		`{"type":"message","id":"o7","parentId":"o6","timestamp":"2026-01-01T00:00:08Z"}`,
	}
	png := chart(t)
	ref := session.BlobRef(png)
	lines = append(lines, `{"type":"message","id":"o8","parentId":"o7","timestamp":"2026-01-01T00:00:09Z","message":{"role":"user","content":[{"type":"image","mimeType":"image/png","data":"`+ref+`"}]}}`)
	env := &export.Envelope{Format: export.Format, Version: export.Version, Leaf: "o8", Blobs: map[string][]byte{ref: png}}
	env.Header.ID = "hostile"
	env.Tree.Leaves = []string{"o8", "c1", "missing"}
	env.Tree.Labels = map[string]string{"o2": "<b>bold</b>", "missing": "x"}
	path := envelopePage(t, env, "<i>hostile</i>", lines)

	b.do(t, viewport(1200, 800, false), chromedp.Navigate(fileURL(path)), chromedp.WaitVisible(chromedp.CSS(`#list .entry`)), settle())
	assert.Equal(t, "undefined", eval[string](t, b, `typeof window.pwned`), "no text of the session ran")
	text := b.listText(t)
	assert.Contains(t, text, "</script><script>window.pwned=1</script>", "it shows as text")
	assert.Contains(t, text, "<b>bold</b>")
	assert.Contains(t, text, "something_new")
	assert.NotContains(t, text, "NaN", "numbers of the wrong type show as 0")
	assert.Equal(t, 1, b.number(t, `document.querySelectorAll("#list img").length`), "no image from a wrong type or a missing blob")
	assert.Equal(t, 240, b.number(t, `document.querySelector("#list img").naturalWidth`), "the image of Envelope.Blobs shows")
	assert.Equal(t, "<i>hostile</i>", eval[string](t, b, `document.getElementById("title").textContent`))

	// A link to an entry of another branch opens there.
	b.do(t, chromedp.Navigate(fileURL(path)+"#c2"), chromedp.WaitVisible(chromedp.CSS(`#list .entry`)), settle())
	assert.Contains(t, b.listText(t), "in a cycle too")
	b.do(t, chromedp.Navigate(fileURL(path)), chromedp.WaitVisible(chromedp.CSS(`#list .entry`)), settle())

	// The other branch, through the cycle, shows too.
	b.do(t, chromedp.Click(chromedp.CSS(`#branches .nav-item:not(.active)`)), settle())
	text = b.listText(t)
	assert.Contains(t, text, "in a cycle too")
	assert.Contains(t, text, "in a cycle")
	assert.NotContains(t, text, "something_new")
	b.noErrors(t)
}

// A session with no entries says so.
func TestEmptySession(t *testing.T) {
	b := newBrowser(t)
	path := writePage(t, session.New())
	b.do(t, chromedp.Navigate(fileURL(path)), chromedp.WaitVisible(chromedp.CSS(`#status`)))
	assert.Equal(t, "This session has no entries.", eval[string](t, b, `document.getElementById("status").textContent`))
	b.noErrors(t)
}

// A branch that starts with a label entry (labels are appended under the
// leaf, and the conversation goes on under them) switches from its fork.
func TestForkThroughLabel(t *testing.T) {
	b := newBrowser(t)
	lines := []string{
		`{"type":"message","id":"f0","parentId":null,"timestamp":"2026-01-01T00:00:00Z","message":{"role":"user","content":"the fork"}}`,
		`{"type":"label","id":"f1","parentId":"f0","timestamp":"2026-01-01T00:00:01Z","targetId":"f0","label":"here"}`,
		`{"type":"message","id":"f2","parentId":"f1","timestamp":"2026-01-01T00:00:02Z","message":{"role":"user","content":"under the label"}}`,
		`{"type":"message","id":"f3","parentId":"f0","timestamp":"2026-01-01T00:00:03Z","message":{"role":"user","content":"straight on"}}`,
	}
	env := &export.Envelope{Format: export.Format, Version: export.Version, Leaf: "f3"}
	env.Header.ID = "fork"
	path := envelopePage(t, env, "", lines)

	b.do(t, viewport(1200, 800, false), chromedp.Navigate(fileURL(path)), chromedp.WaitVisible(chromedp.CSS(`#list .entry`)), settle())
	assert.Contains(t, b.listText(t), "straight on")
	assert.Equal(t, 2, b.number(t, `document.querySelectorAll(".fork .fork-btn").length`))
	b.do(t, chromedp.Click(chromedp.CSS(`.fork .fork-btn:not(.active)`)), settle())
	text := eval[string](t, b, `Array.from(document.querySelectorAll("#list .entry"), e => e.innerText).join("\n")`)
	assert.Contains(t, text, "under the label")
	assert.NotContains(t, text, "straight on")
	assert.Equal(t, "true", eval[string](t, b, `document.querySelector("#branches .nav-item.active").getAttribute("aria-current")`))
	b.noErrors(t)
}
