package export_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	session "github.com/agentsession/session"
	"github.com/agentsession/session/export"
	"github.com/agentsession/session/internal/workload"
	"github.com/agentsession/session/redact"
)

// branched is a session with two branches and a label:
//
//	u1 ─ a1 ─ u2 ─ a2          (the first branch)
//	          └─ a1b           (the current leaf)
func branched(t testing.TB) (s *session.Session, ids map[string]string) {
	ctx := context.Background()
	s, err := session.Create(ctx, session.NewMemoryStore(), &session.CreateOptions{Cwd: "/home/alice/proj", Title: "demo"})
	require.NoError(t, err)
	ids = map[string]string{}
	add := func(name string, m *session.Message) {
		e, err := s.Append(ctx, m)
		require.NoError(t, err)
		ids[name] = e.ID()
	}
	add("u1", session.UserText("my key is sk-SECRET and <b>bold</b> & co"))
	add("a1", session.AssistantText("noted"))
	add("u2", session.UserText("go on"))
	add("a2", session.AssistantText("done"))
	require.NoError(t, s.Label(ctx, ids["a1"], "checkpoint-1"))
	require.NoError(t, s.Branch(ctx, ids["a1"]))
	add("a1b", session.AssistantText("other way"))
	return s, ids
}

func TestBuildWholeTree(t *testing.T) {
	ctx := context.Background()
	s, ids := branched(t)
	env, err := export.Build(ctx, s, nil)
	require.NoError(t, err)
	assert.Equal(t, export.Format, env.Format)
	assert.Equal(t, export.Version, env.Version)
	assert.Equal(t, s.Len(), len(env.Entries))
	assert.Equal(t, s.LeafID(), env.Leaf)
	assert.Equal(t, []string{ids["u1"]}, env.Tree.Roots)
	// The label entry ends the first branch; a1b the second.
	assert.Len(t, env.Tree.Leaves, 2)
	assert.Equal(t, []string{ids["a1b"]}, intersect(env.Tree.Leaves, ids))
	assert.Equal(t, "checkpoint-1", env.Tree.Labels[ids["a1"]])
	assert.Nil(t, env.Redacted)
	assert.Nil(t, env.Blobs)
}

func intersect(list []string, ids map[string]string) []string {
	known := map[string]bool{}
	for _, id := range ids {
		known[id] = true
	}
	var out []string
	for _, id := range list {
		if known[id] {
			out = append(out, id)
		}
	}
	return out
}

func TestBuildBranch(t *testing.T) {
	ctx := context.Background()
	s, ids := branched(t)
	env, err := export.Build(ctx, s, &export.Options{Branch: ids["a2"]})
	require.NoError(t, err)
	var got []string
	for _, e := range env.Entries {
		got = append(got, e.ID())
	}
	assert.Equal(t, []string{ids["u1"], ids["a1"], ids["u2"], ids["a2"]}, got)
	assert.Equal(t, ids["a2"], env.Leaf)
	assert.Equal(t, ids["a2"], env.Branch)
	assert.Equal(t, []string{ids["a2"]}, env.Tree.Leaves)
	assert.Equal(t, map[string]string{ids["a1"]: "checkpoint-1"}, env.Tree.Labels)

	_, err = export.Build(ctx, s, &export.Options{Branch: "nope"})
	assert.ErrorIs(t, err, export.ErrUnknownBranch)
	assert.ErrorIs(t, err, session.ErrNotFound)
}

// TestJSONKeepsBytes: entries are written as stored, byte for byte (no
// HTML escaping), and Read gives them back the same.
func TestJSONKeepsBytes(t *testing.T) {
	ctx := context.Background()
	s, _ := branched(t)
	var buf bytes.Buffer
	require.NoError(t, export.JSON(ctx, &buf, s, nil))
	assert.True(t, json.Valid(buf.Bytes()))
	assert.Contains(t, buf.String(), "<b>bold</b> & co")
	i := 0
	for e := range s.Entries() {
		assert.Contains(t, buf.String(), "\n"+string(e.JSON()), "entry %d on its own line", i)
		i++
	}
	env, err := export.Read(&buf)
	require.NoError(t, err)
	require.Len(t, env.Entries, s.Len())
	i = 0
	for e := range s.Entries() {
		assert.Equal(t, string(e.JSON()), string(env.Entries[i].JSON()))
		i++
	}
	h := s.Header()
	hb, _ := h.MarshalJSON()
	gb, _ := env.Header.MarshalJSON()
	assert.Equal(t, string(hb), string(gb))
}

func TestBuildRedacts(t *testing.T) {
	ctx := context.Background()
	s, ids := branched(t)
	// The host's redactor alone: no built-in rules, no home directories.
	r := redact.New(&redact.Options{Rules: []redact.Rule{}, Home: []string{}, Custom: func(v string) (string, int) {
		n := strings.Count(v, "sk-SECRET") + strings.Count(v, "alice")
		v = strings.ReplaceAll(v, "sk-SECRET", "[REDACTED]")
		v = strings.ReplaceAll(v, "alice", "user")
		// A hostile redactor that would also rewrite ids: the tree stays.
		v = strings.ReplaceAll(v, ids["u1"], "xxxxxxxx")
		return v, n
	}})
	env, err := export.Build(ctx, s, &export.Options{Redactor: r})
	require.NoError(t, err)
	require.NotNil(t, env.Redacted)
	assert.Equal(t, 2, env.Redacted.Counts["custom"])
	assert.Equal(t, "/home/user/proj", env.Header.Cwd)
	assert.Equal(t, s.ID(), env.Header.ID)
	var buf bytes.Buffer
	_, err = env.WriteTo(&buf)
	require.NoError(t, err)
	assert.NotContains(t, buf.String(), "sk-SECRET")
	assert.Equal(t, ids["u1"], env.Entries[0].ID())
	assert.Equal(t, ids["u1"], env.Entries[1].ParentID())

	back, err := export.Read(&buf)
	require.NoError(t, err)
	assert.Equal(t, env.Redacted, back.Redacted)
}

func TestBuildBlobs(t *testing.T) {
	ctx := context.Background()
	store := session.NewMemoryStore()
	data := []byte("an image's bytes")
	ref, err := store.PutBlob(ctx, data)
	require.NoError(t, err)
	missing := session.BlobRef([]byte("never stored"))
	s, err := session.Create(ctx, store, nil)
	require.NoError(t, err)
	_, err = s.Append(ctx, session.User(session.ImageBase64("image/png", ref), session.ImageBase64("image/png", missing)))
	require.NoError(t, err)

	env, err := export.Build(ctx, s, &export.Options{Blobs: true})
	require.NoError(t, err)
	assert.Equal(t, map[string][]byte{ref: data}, env.Blobs)
	assert.Equal(t, []string{missing}, env.UnresolvedBlobs)

	_, err = export.Build(ctx, s, &export.Options{Blobs: true, MaxBlobBytes: 4})
	assert.ErrorIs(t, err, session.ErrTooLarge)

	var buf bytes.Buffer
	_, err = env.WriteTo(&buf)
	require.NoError(t, err)
	back, err := export.Read(bytes.NewReader(buf.Bytes()))
	require.NoError(t, err)
	assert.Equal(t, env.Blobs, back.Blobs)

	bad := strings.Replace(buf.String(), `"`+ref+`":`, `"`+session.BlobRef([]byte("other"))+`":`, 1)
	_, err = export.Read(strings.NewReader(bad))
	assert.ErrorIs(t, err, session.ErrCorrupt)
}

func TestReadErrors(t *testing.T) {
	s, _ := branched(t)
	var buf bytes.Buffer
	require.NoError(t, export.JSON(context.Background(), &buf, s, nil))
	good := buf.String()
	for _, tc := range []struct {
		name, input string
		want        error
		where       string
	}{
		{"empty", "", export.ErrNotEnvelope, ""},
		{"array", "[1,2]", export.ErrNotEnvelope, ""},
		{"session log", `{"type":"session","version":3,"id":"x"}`, export.ErrNotEnvelope, ""},
		{"other format", `{"format":"opencode","version":1}`, export.ErrNotEnvelope, ""},
		{"truncated", good[:len(good)/2], nil, "envelope"},
		{"truncated head", good[:5], export.ErrNotEnvelope, ""},
		{"trailing data", good + "{}", export.ErrNotEnvelope, ""},
		{"no version", `{"format":"agentsession.export"}`, export.ErrNotEnvelope, ""},
		{"newer", strings.Replace(good, `"version":1`, `"version":2`, 1), export.ErrNewerVersion, ""},
		{"version text", strings.Replace(good, `"version":1`, `"version":"1"`, 1), nil, "version"},
		{"version zero", strings.Replace(good, `"version":1`, `"version":0`, 1), nil, "version"},
		{"no header", `{"format":"agentsession.export","version":1,"entries":[]}`, nil, "header"},
		{"bad id", `{"format":"agentsession.export","version":1,"header":{"type":"session","id":"a\u0000b"}}`, nil, "header"},
		{"bad entry", strings.Replace(good, `"type":"message"`, `"type":1`, 1), nil, "entries[0]"},
		{"header as entry", strings.Replace(good, `"entries":[`, `"entries":[{"type":"session","id":"q"},`, 1), nil, "entries[0]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := export.Read(strings.NewReader(tc.input))
			require.Error(t, err)
			if tc.want != nil {
				assert.ErrorIs(t, err, tc.want)
			}
			if tc.where != "" {
				var re *export.ReadError
				require.ErrorAs(t, err, &re, err.Error())
				assert.Equal(t, tc.where, re.Where)
			}
		})
	}
	_, err := export.ReadLimited(strings.NewReader(good), 100)
	assert.ErrorIs(t, err, session.ErrTooLarge)
}

// FuzzRead reads arbitrary bytes as an envelope: no panic, and what
// reads writes back and reads again the same.
func FuzzRead(f *testing.F) {
	s, _ := branched(f)
	var buf bytes.Buffer
	require.NoError(f, export.JSON(context.Background(), &buf, s, nil))
	f.Add(buf.Bytes())
	f.Add([]byte(`{"format":"agentsession.export","version":1,"header":{"type":"session","id":"a"},"entries":[{"type":"x","id":"1","parentId":null}]}`))
	f.Add([]byte(`{"format":"agentsession.export","version":1,"header":{"type":"session","id":"a"},"blobs":{"blob:sha256:zz":"!!"}}`))
	f.Add([]byte(`{"format":"agentsession.export","version":99}`))
	f.Add([]byte(`{"format":"agentsession.export","version":1,"header":{"type":"session","id":"a"},"entries":[{"type":"m","id":"1",
"x":[1,
2]}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		env, err := export.ReadLimited(bytes.NewReader(data), 1<<20)
		if err != nil {
			if env != nil {
				t.Fatal("an envelope with an error")
			}
			return
		}
		var out bytes.Buffer
		if _, err := env.WriteTo(&out); err != nil {
			return // a header Extra that cannot be written: reported, not a panic
		}
		again, err := export.Read(&out)
		require.NoError(t, err, out.String())
		require.Equal(t, len(env.Entries), len(again.Entries))
		for i := range env.Entries {
			require.Equal(t, string(env.Entries[i].JSON()), string(again.Entries[i].JSON()))
		}
	})
}

// BenchmarkExportJSON measures JSON of the W10k session (30,000
// entries, about 62 MB) to io.Discard.
func BenchmarkExportJSON(b *testing.B) {
	for _, n := range []int{100, workload.W10k} {
		name := fmt.Sprintf("W%d", n)
		if n == workload.W10k {
			name = "W10k"
		}
		b.Run(name, func(b *testing.B) {
			s, err := workload.Session(context.Background(), session.NewMemoryStore(), n)
			require.NoError(b, err)
			cw := &counter{}
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				if err := export.JSON(context.Background(), cw, s, nil); err != nil {
					b.Fatal(err)
				}
			}
			b.SetBytes(cw.n / int64(b.N))
		})
	}
}

type counter struct{ n int64 }

func (c *counter) Write(p []byte) (int, error) { c.n += int64(len(p)); return len(p), nil }

var _ = errors.New

// BenchmarkReadJSON measures Read of the W10k envelope.
func BenchmarkReadJSON(b *testing.B) {
	s, err := workload.Session(context.Background(), session.NewMemoryStore(), workload.W10k)
	require.NoError(b, err)
	var buf bytes.Buffer
	require.NoError(b, export.JSON(context.Background(), &buf, s, nil))
	b.SetBytes(int64(buf.Len()))
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if _, err := export.Read(bytes.NewReader(buf.Bytes())); err != nil {
			b.Fatal(err)
		}
	}
}

// Redacting an export leaves an image's data alone: base64 can hold what
// looks like a key (an AWS key id here), and rewriting it would break
// the image. The text beside it is redacted.
func TestRedactKeepsImageData(t *testing.T) {
	ctx := context.Background()
	img, err := base64.StdEncoding.DecodeString("AKIAIOSFODNN7EXAMPLQ")
	require.NoError(t, err)
	s := session.New()
	_, err = s.Append(ctx, session.User(session.Text("my key is AKIAIOSFODNN7EXAMPLQ"), session.Image("image/png", img)))
	require.NoError(t, err)
	var rep redact.Report
	env, err := export.Build(ctx, s, &export.Options{Redactor: redact.New(&redact.Options{Home: []string{}}), Report: &rep})
	require.NoError(t, err)
	require.Len(t, env.Entries, 1)
	m, err := env.Entries[0].Message()
	require.NoError(t, err)
	require.Len(t, m.Content, 2)
	assert.NotContains(t, m.Content[0].Text, "AKIAIOSFODNN7EXAMPLQ")
	assert.Equal(t, base64.StdEncoding.EncodeToString(img), m.Content[1].Data, "the image is the same")
	assert.Equal(t, 1, rep.Total(), "Options.Report has the count")
}

// Every way an export shows a label or the title goes through the
// redactor: the tree's labels, the Markdown and the page's title.
func TestRedactLabelsAndTitle(t *testing.T) {
	ctx := context.Background()
	const secret = "ghp_1234567890abcdefghijABCDEFGHIJ123456"
	s := session.New()
	e, err := s.Append(ctx, session.UserText("deploy"))
	require.NoError(t, err)
	require.NoError(t, s.Label(ctx, e.ID(), "label "+secret))
	require.NoError(t, s.SetTitle(ctx, "deploy with "+secret))
	opts := func() *export.Options {
		return &export.Options{Redactor: redact.New(&redact.Options{Home: []string{}})}
	}
	env, err := export.Build(ctx, s, opts())
	require.NoError(t, err)
	assert.NotContains(t, env.Tree.Labels[e.ID()], secret)
	assert.Contains(t, s.Labels()[e.ID()], secret, "the session's own labels are not changed")
	for name, write := range map[string]func(*bytes.Buffer) error{
		"json":     func(b *bytes.Buffer) error { return export.JSON(ctx, b, s, opts()) },
		"markdown": func(b *bytes.Buffer) error { return export.Markdown(ctx, b, s, opts()) },
		"html":     func(b *bytes.Buffer) error { return export.HTML(ctx, b, s, opts()) },
	} {
		var b bytes.Buffer
		require.NoError(t, write(&b), name)
		assert.NotContains(t, b.String(), secret, name)
		assert.NotContains(t, b.String(), "ghp_1234567890", name)
	}
}
