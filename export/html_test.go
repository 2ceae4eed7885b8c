package export_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	session "github.com/agentsession/session"
	"github.com/agentsession/session/export"
)

// hostile is text a session may hold that would break a page built by
// pasting it in.
const hostile = `</script><script>alert("x")</script> <!-- <script> </SCRIPT > & &amp; ]]> https://evil.example/x.js`

// pixel is a 1×1 PNG.
var pixel = []byte{
	0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x48, 0x44, 0x52,
	0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0x08, 0x06, 0x00, 0x00, 0x00, 0x1f, 0x15, 0xc4,
	0x89, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x44, 0x41, 0x54, 0x78, 0x9c, 0x63, 0xf8, 0xcf, 0xc0, 0xf0,
	0x1f, 0x00, 0x05, 0x00, 0x01, 0xff, 0x89, 0x99, 0x3d, 0x1d, 0x00, 0x00, 0x00, 0x00, 0x49, 0x45,
	0x4e, 0x44, 0xae, 0x42, 0x60, 0x82,
}

func hostileSession(t testing.TB, text string) *session.Session {
	t.Helper()
	ctx := context.Background()
	s := session.New()
	_, err := s.Append(ctx, session.User(session.Text(text), session.Image("image/png", pixel)))
	require.NoError(t, err)
	_, err = s.Append(ctx, session.Assistant(session.Text(text),
		session.ToolCall("call_1", "bash", json.RawMessage(`{"command":"echo '</script>'"}`))).
		WithModel("anthropic-messages", "anthropic", "claude-sonnet-4-5"))
	require.NoError(t, err)
	_, err = s.Append(ctx, session.ToolResult("call_1", "bash", text))
	require.NoError(t, err)
	require.NoError(t, s.SetTitle(ctx, `<b>title</b> & "quotes"`))
	return s
}

func page(t testing.TB, s *session.Session) string {
	t.Helper()
	var b bytes.Buffer
	require.NoError(t, export.HTML(context.Background(), &b, s, nil))
	return b.String()
}

const (
	dataOpen    = `<script type="application/json" id="session-data">`
	entriesOpen = `<script type="application/json" class="session-entries">`
)

// script is one script element as an HTML parser reads it: from its
// start tag to the first "</script" after it, whatever the case.
type script struct{ open, text string }

// scripts cuts doc into its script elements and the rest.
func scripts(t testing.TB, doc string) (all []script, rest string) {
	t.Helper()
	var out strings.Builder
	for {
		i := strings.Index(asciiLower(doc), "<script")
		if i < 0 {
			out.WriteString(doc)
			return all, out.String()
		}
		out.WriteString(doc[:i])
		doc = doc[i:]
		j := strings.IndexByte(doc, '>')
		require.GreaterOrEqual(t, j, 0, "a script tag ends")
		open := doc[:j+1]
		doc = doc[j+1:]
		k := strings.Index(asciiLower(doc), "</script")
		require.GreaterOrEqual(t, k, 0, "a script element is closed")
		all = append(all, script{open, doc[:k]})
		doc = doc[k+len("</script"):]
	}
}

// asciiLower folds A-Z only, as an HTML tokenizer matches tag names,
// and keeps every byte where it was: strings.ToLower would move offsets
// for text like the Kelvin sign, which it folds to a one-byte "k".
func asciiLower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

// dataOf reads the envelope out of a page, as the viewer does: the
// envelope, then the entries of each entries element, and checks that
// the page has no other script than these and the viewer's, last.
func dataOf(t testing.TB, doc string) (env *export.Envelope, data, rest string) {
	t.Helper()
	all, rest := scripts(t, doc)
	require.GreaterOrEqual(t, len(all), 2)
	require.Equal(t, dataOpen, all[0].open, "the envelope comes first")
	require.Equal(t, "<script>", all[len(all)-1].open, "the viewer last")
	env, err := export.Read(strings.NewReader(all[0].text))
	require.NoError(t, err)
	require.Empty(t, env.Entries, "the entries follow the envelope")
	var b strings.Builder
	b.WriteString(all[0].text)
	for _, s := range all[1 : len(all)-1] {
		require.Equal(t, entriesOpen, s.open, "no other script")
		var part []session.Entry
		require.NoError(t, json.Unmarshal([]byte(s.text), &part))
		require.NotEmpty(t, part)
		env.Entries = append(env.Entries, part...)
		b.WriteString(s.text)
	}
	return env, b.String(), rest
}

func TestHTMLIsOneSelfContainedDocument(t *testing.T) {
	doc := page(t, hostileSession(t, hostile))

	assert.True(t, strings.HasPrefix(doc, "<!DOCTYPE html>"), "one document, from its doctype")
	assert.Equal(t, 1, strings.Count(doc, "<!DOCTYPE"))
	assert.Equal(t, 1, strings.Count(doc, "<html"))
	assert.True(t, strings.HasSuffix(strings.TrimSpace(doc), "</html>"), "and to its end")
	assert.Equal(t, 0, strings.Count(doc, "<!--"), "no comment is opened")
	env, _, rest := dataOf(t, doc) // no script but the data's and the viewer's
	assert.Len(t, env.Entries, 4)
	assert.NotContains(t, strings.ToLower(rest), "</script", "the session's text closes no script")
	// Outside the data (which is text, shown as text), nothing refers to
	// the network: no resource from a URL, no import, no font.
	for _, re := range []*regexp.Regexp{
		regexp.MustCompile(`(?i)https?:`),
		regexp.MustCompile(`(?i)(src|href|action|srcset)\s*=\s*["']?\s*(https?:)?//`),
		regexp.MustCompile(`(?i)@import`),
		regexp.MustCompile(`(?i)url\(\s*["']?\s*(https?:)?//`),
		regexp.MustCompile(`(?i)@font-face`),
		regexp.MustCompile(`(?i)<link\b`),
		regexp.MustCompile(`(?i)\b(fetch|XMLHttpRequest|WebSocket|EventSource|importScripts)\b`),
	} {
		assert.Empty(t, re.FindAllString(rest, 3), "the page refers to the network: %s", re)
	}
	assert.Contains(t, doc, `default-src 'none'`, "a content security policy forbids every fetch")
	assert.Contains(t, doc, `<meta name="viewport"`, "readable on a phone")
}

func TestHTMLEmbedsTheEnvelope(t *testing.T) {
	s := hostileSession(t, hostile)
	env, data, _ := dataOf(t, page(t, s))
	for _, c := range []string{"<", ">", "&"} {
		assert.NotContains(t, data, c, "every %q of the data is escaped", c)
	}
	assert.Equal(t, s.Header().ID, env.Header.ID)
	assert.Equal(t, s.LeafID(), env.Leaf)
	require.Len(t, env.Entries, s.Len())
	for i, want := range s.Log().Entries {
		assert.JSONEq(t, string(want.JSON()), string(env.Entries[i].JSON()), "entry %d as stored", i)
	}
	m, err := env.Entries[0].Message()
	require.NoError(t, err)
	assert.Equal(t, hostile, m.Text(), "the text comes back exactly")
	require.Len(t, m.Content, 2)
	assert.Equal(t, base64.StdEncoding.EncodeToString(pixel), m.Content[1].Data, "the image is in the page")
}

func TestHTMLTitleIsEscaped(t *testing.T) {
	doc := page(t, hostileSession(t, "hello"))
	assert.Contains(t, doc, `<title>&lt;b&gt;title&lt;/b&gt; &amp; &#34;quotes&#34;</title>`)
	assert.NotContains(t, doc, "<b>title")
}

func TestWriteHTMLTitleFromEnvelope(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name, header, info, want string
	}{
		{"session_info wins", "Header title", "Named", "<title>Named</title>"},
		{"header title", "Header title", "", "<title>Header title</title>"},
		{"id", "", "", "<title>Session "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := session.New()
			_, err := s.Append(ctx, session.UserText("hi"))
			require.NoError(t, err)
			if tc.info != "" {
				require.NoError(t, s.SetTitle(ctx, tc.info))
			}
			env, err := export.Build(ctx, s, nil)
			require.NoError(t, err)
			env.Header.Title = tc.header
			var b bytes.Buffer
			require.NoError(t, export.WriteHTML(ctx, &b, env, ""))
			assert.Contains(t, b.String(), tc.want)
		})
	}
}

func TestWriteHTMLErrors(t *testing.T) {
	ctx := context.Background()
	assert.Error(t, export.WriteHTML(ctx, &bytes.Buffer{}, nil, "x"), "no envelope")

	env, err := export.Build(ctx, hostileSession(t, "x"), nil)
	require.NoError(t, err)
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	assert.ErrorIs(t, export.WriteHTML(cancelled, &bytes.Buffer{}, env, "x"), context.Canceled)

	w := &failingWriter{}
	assert.ErrorIs(t, export.WriteHTML(ctx, w, env, "x"), errWrite, "a failed write is reported")
}

var errWrite = fmt.Errorf("disk full")

type failingWriter struct{}

func (*failingWriter) Write([]byte) (int, error) { return 0, errWrite }

// FuzzHTMLData: whatever text a message holds, the page keeps it inside
// the data element and gives it back exactly.
func FuzzHTMLData(f *testing.F) {
	for _, s := range []string{hostile, "", "plain", "</scr", "ipt>", "\u2028\u2029", "<!--<script>-->", "\xff\xfe", `\u003c/script>`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		if len(text) > 1<<16 {
			return
		}
		s := session.New()
		if _, err := s.Append(context.Background(), session.UserText(text)); err != nil {
			return
		}
		env, _, _ := dataOf(t, page(t, s))
		m, err := env.Entries[0].Message()
		if err != nil {
			t.Fatal(err)
		}
		want, _ := session.UserText(text).MarshalJSON()
		got, _ := m.MarshalJSON()
		var w, g map[string]any
		_ = json.Unmarshal(want, &w)
		_ = json.Unmarshal(got, &g)
		if w["content"] != nil && fmt.Sprint(w["content"]) != fmt.Sprint(g["content"]) {
			t.Fatalf("text changed: %q -> %q", want, got)
		}
	})
}

// A large session is written in many elements of about a megabyte (a
// browser reads them much faster than one huge one), in log order.
func TestHTMLSplitsLargeSessions(t *testing.T) {
	ctx := context.Background()
	s := session.New()
	big := strings.Repeat("0123456789abcdef", 4096) // 64 KiB
	for i := range 64 {
		_, err := s.Append(ctx, session.UserText(fmt.Sprintf("turn %d %s", i, big)))
		require.NoError(t, err)
	}
	doc := page(t, s)
	all, _ := scripts(t, doc)
	assert.GreaterOrEqual(t, len(all), 2+3, "4 MiB of entries in several elements")
	for _, sc := range all {
		assert.Less(t, len(sc.text), 2<<20, "none much over a megabyte")
	}
	env, _, _ := dataOf(t, doc)
	require.Len(t, env.Entries, s.Len())
	for i, want := range s.Log().Entries {
		assert.Equal(t, want.ID(), env.Entries[i].ID(), "entry %d in log order", i)
	}
}

// HTML writes one file that shows the whole session tree in a browser,
// with no network: open it, or send it to someone.
func ExampleHTML() {
	ctx := context.Background()
	s := session.New()
	s.Append(ctx, session.UserText("Write add(a, b) in Go."))
	s.Append(ctx, session.AssistantText("func add(a, b int) int { return a + b }"))
	s.SetTitle(ctx, "add in Go")

	dir, _ := os.MkdirTemp("", "export")
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "session.html")
	f, _ := os.Create(path)
	if err := export.HTML(ctx, f, s, nil); err != nil {
		fmt.Println(err)
	}
	f.Close()

	page, _ := os.ReadFile(path)
	fmt.Println(strings.Contains(string(page), "<title>add in Go</title>"))
	fmt.Println(strings.Contains(string(page), "func add(a, b int)"))
	// Output:
	// true
	// true
}

// Every script and style sheet of the viewer directory is in the page:
// a script added there but not to the embedded list would leave the
// viewer calling what is not defined.
func TestHTMLCarriesEveryViewerFile(t *testing.T) {
	doc := page(t, hostileSession(t, "hi"))
	files, err := os.ReadDir("viewer")
	require.NoError(t, err)
	n := 0
	for _, f := range files {
		if ext := filepath.Ext(f.Name()); ext != ".js" && ext != ".css" {
			continue
		}
		b, err := os.ReadFile(filepath.Join("viewer", f.Name()))
		require.NoError(t, err)
		first, _, _ := strings.Cut(string(b), "\n")
		assert.True(t, strings.Contains(doc, first), "%s is written into the page", f.Name())
		n++
	}
	assert.GreaterOrEqual(t, n, 6)
}
