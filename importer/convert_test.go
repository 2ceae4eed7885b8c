package importer

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"

	session "github.com/agentsession/session"
)

// importStores runs f against a MemoryStore and a FileStore in a temporary
// directory. f imports with the store it is given, then calls reopen,
// which for a FileStore closes it and opens the directory again, so that
// what f asserts next was read back from disk.
func importStores(t *testing.T, f func(t *testing.T, store session.Store, reopen func() session.Store)) {
	t.Run("memory", func(t *testing.T) {
		ms := session.NewMemoryStore()
		f(t, ms, func() session.Store { return ms })
	})
	t.Run("file", func(t *testing.T) {
		dir := t.TempDir()
		fs, err := session.OpenFileStore(dir, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { fs.Close() })
		f(t, fs, func() session.Store {
			if err := fs.Close(); err != nil {
				t.Fatal(err)
			}
			if fs, err = session.OpenFileStore(dir, nil); err != nil {
				t.Fatal(err)
			}
			return fs
		})
	})
}

// open opens session id and closes it at the end of the test.
func openImported(t *testing.T, store session.Store, id string) *session.Session {
	t.Helper()
	s, err := session.Open(context.Background(), store, id)
	if err != nil {
		t.Fatalf("open %s: %v", id, err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// roles lists the roles of msgs, with a tool result's call id.
func roleList(msgs []*session.Message) []string {
	var out []string
	for _, m := range msgs {
		r := m.Role
		if m.Role == session.RoleToolResult {
			r += ":" + m.ToolCallID
		}
		out = append(out, r)
	}
	return out
}

// firstEntryOfType returns the first entry of type typ.
func firstEntryOfType(t *testing.T, s *session.Session, typ string) session.Entry {
	t.Helper()
	for e := range s.Entries() {
		if e.Type() == typ {
			return e
		}
	}
	t.Fatalf("no %s entry", typ)
	return session.Entry{}
}

func TestLineReader(t *testing.T) {
	cases := []struct {
		in   string
		want []string // "!" marks a line too long
	}{
		{"", nil},
		{"a\nb\n", []string{"a", "b"}},
		{"a\r\nb", []string{"a", "b"}},
		{"0123456789\n01234567890\nx", []string{"0123456789", "!", "x"}},
		{"\n\n", []string{"", ""}},
		{strings.Repeat("y", 50), []string{"!"}},
	}
	for _, c := range cases {
		lr := newBoundedReader(strings.NewReader(c.in), 10)
		var got []string
		for {
			b, err := lr.next()
			if err == io.EOF {
				break
			}
			if errors.Is(err, errLineTooLong) {
				got = append(got, "!")
				continue
			}
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, string(b))
		}
		if strings.Join(got, "|") != strings.Join(c.want, "|") {
			t.Errorf("%q: got %q, want %q", c.in, got, c.want)
		}
	}
}

func TestArgsObject(t *testing.T) {
	cases := map[string]string{
		``:            `{}`,
		`null`:        `{}`,
		`{"a":1}`:     `{"a":1}`,
		`"{\"a\":1}"`: `{"a":1}`,
		`""`:          `{}`,
		`"ls -la"`:    `{"input":"ls -la"}`,
		`[1,2]`:       `{"input":[1,2]}`,
		`7`:           `{"input":7}`,
		`"{broken"`:   `{"input":"{broken"}`,
		`{broken`:     `{"input":"{broken"}`,
	}
	for in, want := range cases {
		if got := string(argsObject([]byte(in))); got != want {
			t.Errorf("argsObject(%s) = %s, want %s", in, got, want)
		}
	}
}

func TestImageBlock(t *testing.T) {
	b, ok := dataImage("data:image/png;base64,AAAA", "")
	if !ok || b.Type != session.BlockImage || b.MimeType != "image/png" || b.Data != "AAAA" {
		t.Errorf("data URL: %+v %v", b, ok)
	}
	for _, url := range []string{"https://x/y.png", "data:text/plain;base64,AAAA", "data:image/png", "file:///a.png"} {
		if _, ok := dataImage(url, ""); ok {
			t.Errorf("%s read as an image", url)
		}
	}
}

// repeatByte is an endless reader of one byte, to feed a huge line without
// holding it.
type repeatByte byte

func (r repeatByte) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = byte(r)
	}
	return len(p), nil
}

// TestAnthropicDocument: the document blocks Claude Code and Dive keep
// become typed document blocks; one of content blocks is not mapped.
func TestAnthropicDocument(t *testing.T) {
	cases := []struct {
		in   string
		ok   bool
		want session.Block
	}{
		{`{"type":"document","source":{"type":"base64","media_type":"application/pdf","data":"JVBERi0="},"title":"spec","citations":{"enabled":true}}`, true,
			session.DocumentBase64("application/pdf", "JVBERi0=").WithTitle("spec").WithCitations()},
		{`{"type":"document","source":{"type":"text","media_type":"text/plain","data":"notes"},"context":"ctx"}`, true,
			session.TextDocument("notes").WithContext("ctx")},
		{`{"type":"document","source":{"type":"url","url":"https://x/y.pdf"}}`, true, session.DocumentURL("https://x/y.pdf")},
		{`{"type":"document","source":{"type":"file","file_id":"file_1"}}`, true, session.DocumentFile("file_1")},
		{`{"type":"document","source":{"type":"content","content":[{"type":"text","text":"a"}]}}`, false, session.Block{}},
	}
	for _, c := range cases {
		got, ok := anthropicDocument(clObject(json.RawMessage(c.in)))
		if ok != c.ok {
			t.Errorf("%s: ok %v", c.in, ok)
			continue
		}
		if !ok {
			continue
		}
		g, _ := json.Marshal(got)
		w, _ := json.Marshal(c.want)
		if string(g) != string(w) {
			t.Errorf("%s:\n got %s\nwant %s", c.in, g, w)
		}
	}
}
