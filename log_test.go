package session_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	session "github.com/agentsession/session"
	"github.com/agentsession/session/internal/compattest"
)

const header3 = `{"type":"session","version":3,"id":"s1","timestamp":"2026-01-15T10:00:00.000Z","cwd":"/w"}`

func TestDecodeLogRejectsNonSessions(t *testing.T) {
	cases := []struct {
		name  string
		data  string
		is    error
		line  int
		inMsg string
	}{
		{"empty", "", session.ErrCorrupt, 0, "empty file"},
		{"blank first line", "\n" + header3 + "\n", session.ErrCorrupt, 1, "no session header"},
		{"entry first", msgLine("a", "", "user", "x") + "\n" + header3 + "\n", session.ErrCorrupt, 1, `type is not "session"`},
		{"not JSON", "hello\n", session.ErrCorrupt, 1, "not valid JSON"},
		{"no id", `{"type":"session","version":3}` + "\n", session.ErrCorrupt, 1, "no id"},
		{"bad version", `{"type":"session","version":"3","id":"x"}` + "\n", session.ErrCorrupt, 1, "invalid version"},
		{"torn header", `{"type":"session","ver`, session.ErrCorrupt, 1, "not valid JSON"},
		{"newer version", `{"type":"session","version":4,"id":"x"}` + "\n", session.ErrUnsupportedVersion, 0, "version 4"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for _, read := range []func() (*session.Log, error){
				func() (*session.Log, error) { return session.DecodeLog([]byte(c.data), nil) },
				func() (*session.Log, error) { return session.ReadLog(strings.NewReader(c.data), nil) },
			} {
				log, err := read()
				assert.Nil(t, log)
				require.ErrorIs(t, err, c.is)
				assert.Contains(t, err.Error(), c.inMsg)
				var ce *session.CorruptError
				if errors.As(err, &ce) {
					assert.Equal(t, c.line, ce.Line)
				}
				err = session.WithPath(err, "/x/s.jsonl")
				assert.Contains(t, err.Error(), "/x/s.jsonl")
			}
		})
	}
}

func TestLenientAndStrict(t *testing.T) {
	data := strings.Join([]string{
		header3,
		msgLine("a", "", "user", "one"),
		`{"type":"message","id":"b",`, // malformed
		``,                            // blank lines are not findings
		`   `,
		`[1,2,3]`,                           // JSON, not an entry
		`{"type":"message","parentId":"a"}`, // no id
		`{"type":"session","version":3,"id":"again"}`,
		msgLine("c", "a", "assistant", "two"),
	}, "\n") + "\n"

	log, err := session.DecodeLog([]byte(data), nil)
	require.NoError(t, err)
	assert.Equal(t, []string{"a", "c"}, ids(log.Entries))
	var lines []int
	for _, m := range log.Malformed {
		lines = append(lines, m.Line)
	}
	assert.Equal(t, []int{3, 6, 7, 8}, lines)
	assert.Nil(t, log.Torn)

	_, err = session.DecodeLog([]byte(data), &session.ReadOptions{Strict: true})
	var ce *session.CorruptError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, 3, ce.Line)
	assert.ErrorIs(t, err, session.ErrCorrupt)

	_, err = session.ReadLog(strings.NewReader(data), &session.ReadOptions{Strict: true})
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, 3, ce.Line)

	// A last line without its newline that is whole JSON but no entry was
	// not cut short by a crash: it is malformed, not a torn tail.
	notEntry := header3 + "\n" + msgLine("a", "", "user", "one") + "\n" + `{"type":"message"}`
	for _, read := range []func(*session.ReadOptions) (*session.Log, error){
		func(o *session.ReadOptions) (*session.Log, error) { return session.DecodeLog([]byte(notEntry), o) },
		func(o *session.ReadOptions) (*session.Log, error) {
			return session.ReadLog(strings.NewReader(notEntry), o)
		},
	} {
		log, err := read(nil)
		require.NoError(t, err)
		assert.Nil(t, log.Torn)
		require.Len(t, log.Malformed, 1)
		assert.Equal(t, 3, log.Malformed[0].Line)
		_, err = read(&session.ReadOptions{Strict: true})
		require.ErrorAs(t, err, &ce)
		assert.Equal(t, 3, ce.Line)
	}
}

// TestTornTail cuts a valid log at every byte of its last two lines: the
// read gives exactly the entries whose lines are complete. A last line
// that is whole but lost its newline is an entry, not a torn tail.
func TestTornTail(t *testing.T) {
	lines := []string{header3, msgLine("a", "", "user", "one"), msgLine("b", "a", "assistant", "two é"), msgLine("c", "b", "user", "three")}
	full := strings.Join(lines, "\n") + "\n"
	start := len(lines[0]) + len(lines[1]) + 2
	for cut := start; cut <= len(full); cut++ {
		data := full[:cut]
		for _, strict := range []bool{false, true} {
			log, err := session.DecodeLog([]byte(data), &session.ReadOptions{Strict: strict})
			require.NoError(t, err, "cut at %d", cut)
			complete := strings.Count(data, "\n") - 1
			tail := data[strings.LastIndexByte(data, '\n')+1:]
			whole := tail != "" && (tail == lines[2] || tail == lines[3])
			if whole {
				complete++
			}
			assert.Len(t, log.Entries, complete, "cut at %d", cut)
			assert.Equal(t, tail != "" && !whole, log.Torn != nil, "cut at %d", cut)
			assert.Empty(t, log.Malformed)
		}
	}
}

func TestDecoderStreamsLongLines(t *testing.T) {
	long := strings.Repeat("x", 300_000) // past the reader's buffer
	data := header3 + "\n" + msgLine("a", "", "user", long) + "\n" + msgLine("b", "a", "assistant", "short") + "\n" + `{"torn`
	d := session.NewDecoder(strings.NewReader(data), nil)
	h, err := d.Header()
	require.NoError(t, err)
	assert.Equal(t, "s1", h.ID)
	var got []session.Entry
	for {
		e, err := d.Next()
		if err != nil {
			require.ErrorIs(t, err, errEOF())
			break
		}
		got = append(got, e)
	}
	require.Len(t, got, 2)
	m, err := got[0].Message()
	require.NoError(t, err)
	assert.Equal(t, long, m.Text())
	require.NotNil(t, d.Torn())
	assert.Equal(t, 4, d.Torn().Line)

	mem, err := session.DecodeLog([]byte(data), nil)
	require.NoError(t, err)
	assert.Equal(t, ids(mem.Entries), ids(got))
}

// TestWriteKeepsEveryByte reads every version-3 file of the compat corpus
// and writes it back: the output is the input, byte for byte.
func TestWriteKeepsEveryByte(t *testing.T) {
	compattest.Need(t)
	files, err := filepath.Glob(compattest.Path("*.jsonl"))
	require.NoError(t, err)
	n := 0
	for _, f := range files {
		data, err := os.ReadFile(f)
		require.NoError(t, err)
		log, err := session.DecodeLog(data, nil)
		require.NoError(t, err, f)
		if log.MigratedFrom != 0 {
			continue
		}
		var out bytes.Buffer
		require.NoError(t, session.WriteLog(&out, log))
		assert.Equal(t, string(data), out.String(), f)
		stream, err := session.ReadLog(bytes.NewReader(data), nil)
		require.NoError(t, err)
		out.Reset()
		require.NoError(t, session.WriteLog(&out, stream))
		assert.Equal(t, string(data), out.String(), f)
		n++
	}
	assert.GreaterOrEqual(t, n, 7)
}

func TestHeaderFidelity(t *testing.T) {
	raw := `{"type":"session", "id":"x","version":3,"timestamp":"2026-01-15T10:00:00Z","cwd":"/w","extra":{"a":1}}`
	var h session.Header
	require.NoError(t, json.Unmarshal([]byte(raw), &h))
	out, err := h.MarshalJSON()
	require.NoError(t, err)
	assert.Equal(t, raw, string(out), "an unchanged header is written as it was read")
	h.Title = "New"
	out, err = h.MarshalJSON()
	require.NoError(t, err)
	assert.Equal(t, `{"type":"session","version":3,"id":"x","timestamp":"2026-01-15T10:00:00.000Z","cwd":"/w","title":"New","extra":{"a":1}}`, string(out))
	h.Title = ""
	h.Extra[0].Value = json.RawMessage(`{"a":2}`)
	out, _ = h.MarshalJSON()
	assert.Contains(t, string(out), `"extra":{"a":2}`)
}

func TestParseEntry(t *testing.T) {
	line := []byte("  " + msgLine("abc", "p", "user", "hi") + " \n")
	e, err := session.ParseEntry(line)
	require.NoError(t, err)
	assert.Equal(t, "message", e.Type())
	assert.Equal(t, "abc", e.ID())
	assert.Equal(t, "p", e.ParentID())
	assert.Equal(t, time.Date(2026, 1, 15, 10, 0, 1, 0, time.UTC), e.Time())
	before := string(e.JSON())
	for i := range line {
		line[i] = 'x'
	}
	assert.Equal(t, before, string(e.JSON()), "ParseEntry copies its input")
	j := e.JSON()
	j[0] = '['
	assert.Equal(t, before, string(e.JSON()), "JSON returns a copy")

	for _, bad := range []string{``, `[]`, `{"type":"x"}`, `{"id":"x"}`, `{"type":"x","id":""}`, `{"type":"x","id":"a","parentId":5}`, `{"type":"session","id":"a"}`, `{"type":"x","id":"a"} {}`} {
		_, err := session.ParseEntry([]byte(bad))
		assert.Error(t, err, bad)
	}
	e, err = session.ParseEntry([]byte(`{"type":"x","id":"a"}`))
	require.NoError(t, err)
	assert.Equal(t, "", e.ParentID(), "a missing parentId is a root")
	assert.True(t, e.Time().IsZero())

	// An object over several lines becomes one line of a log.
	e, err = session.ParseEntry([]byte("{\n  \"type\": \"x\",\r\n  \"id\": \"a\",\n  \"text\": \"two\\nlines\"\n}\n"))
	require.NoError(t, err)
	assert.Equal(t, `{"type":"x","id":"a","text":"two\nlines"}`, string(e.JSON()))
}

func TestNewEntry(t *testing.T) {
	ts := time.Date(2026, 1, 15, 10, 0, 0, 123e6, time.UTC)
	e, err := session.NewEntry("my_type", "id1", "", ts, map[string]any{"html": "<b>&</b>", "n": 1})
	require.NoError(t, err)
	assert.Equal(t, `{"type":"my_type","id":"id1","parentId":null,"timestamp":"2026-01-15T10:00:00.123Z","html":"<b>&</b>","n":1}`, string(e.JSON()))
	for _, p := range []any{[]int{1}, "str", map[string]any{"parentId": "x"}, json.RawMessage(`{"type":"y"}`)} {
		_, err := session.NewEntry("t", "id", "", ts, p)
		assert.Error(t, err, "%v", p)
	}
	_, err = session.NewEntry("session", "id", "", ts, nil)
	assert.Error(t, err)
	_, err = session.NewEntry("t", "", "", ts, nil)
	assert.Error(t, err)
}

func TestMigrateFunction(t *testing.T) {
	h, lines, err := session.Migrate(1, []byte(`{"type":"session","id":"v1","cwd":"/w"}`), [][]byte{
		[]byte(`{"type":"message","message":{"role":"user","content":"a"}}`),
		[]byte(`{"type":"compaction","summary":"s","firstKeptEntryIndex":9,"tokensBefore":1}`),
		[]byte(`{"type":"message","message":{"role":"hookMessage","customType":"h","content":"x","display":true}}`),
	})
	require.NoError(t, err)
	assert.Equal(t, `{"type":"session","id":"v1","cwd":"/w","version":3}`, string(h))
	var first, comp, hook map[string]any
	require.NoError(t, json.Unmarshal(lines[0], &first))
	require.NoError(t, json.Unmarshal(lines[1], &comp))
	require.NoError(t, json.Unmarshal(lines[2], &hook))
	assert.Nil(t, first["parentId"])
	assert.Equal(t, first["id"], comp["parentId"])
	assert.NotContains(t, comp, "firstKeptEntryIndex")
	assert.NotContains(t, comp, "firstKeptEntryId", "an index past the end names no entry")
	assert.Equal(t, "custom", hook["message"].(map[string]any)["role"])
	_, _, err = session.Migrate(4, nil, nil)
	assert.ErrorIs(t, err, session.ErrUnsupportedVersion)

	// A marker ending a line of an older version is not one this package
	// wrote: Migrate drops it as the readers do, so that the lines read
	// as entries, not as a cut append.
	_, lines, err = session.Migrate(2, []byte(`{"type":"session","version":2,"id":"v2"}`), [][]byte{
		[]byte(`{"type":"custom","id":"a","parentId":null,"customType":"x","agentsession.append":"0/2/b"}`),
	})
	require.NoError(t, err)
	assert.Equal(t, `{"type":"custom","id":"a","parentId":null,"customType":"x"}`, string(lines[0]))

	// Two of them: both go, or the line would still end in one.
	_, lines, err = session.Migrate(2, []byte(`{"type":"session","version":2,"id":"v2"}`), [][]byte{
		[]byte(`{"type":"custom","id":"a","parentId":null,"customType":"x","agentsession.append":"0/2/b","agentsession.append":"0/2/b"}`),
	})
	require.NoError(t, err)
	assert.Equal(t, `{"type":"custom","id":"a","parentId":null,"customType":"x"}`, string(lines[0]))

	// Lines of the current version are this package's own: Migrate
	// returns them as they are, markers and all.
	marked := `{"type":"custom","id":"a","parentId":null,"customType":"x","agentsession.append":"0/2/b"}`
	_, lines, err = session.Migrate(session.CurrentVersion, []byte(`{"type":"session","version":3,"id":"v3"}`), [][]byte{[]byte(marked)})
	require.NoError(t, err)
	assert.Equal(t, marked, string(lines[0]))
}

// TestMigrateV1NonEntries: object lines that are not entries keep their
// place in the index count but neither get an id nor cut the chain, and the
// same file migrates to the same ids every time it is read.
func TestMigrateV1NonEntries(t *testing.T) {
	file := `{"type":"session","id":"s1","timestamp":"2025-01-01T00:00:00Z","cwd":"/w"}
{"type":"message","message":{"role":"user","content":"a"}}
{"note":"no type"}
{"type":"session","id":"again"}
{"type":"message","message":{"role":"assistant","content":[{"type":"text","text":"b"}]}}
{"type":"compaction","summary":"s","firstKeptEntryIndex":4,"tokensBefore":1}
`
	read := func() *session.Log {
		l, err := session.DecodeLog([]byte(file), nil)
		require.NoError(t, err)
		return l
	}
	l := read()
	assert.Equal(t, 1, l.MigratedFrom)
	require.Len(t, l.Entries, 3)
	user, asst, comp := l.Entries[0], l.Entries[1], l.Entries[2]
	assert.Equal(t, "", user.ParentID())
	assert.Equal(t, user.ID(), asst.ParentID(), "the lines between do not cut the chain")
	assert.Equal(t, asst.ID(), comp.ParentID())
	var c session.Compaction
	require.NoError(t, comp.Decode(&c))
	assert.Equal(t, asst.ID(), c.FirstKeptEntryID, "index 4 counts the non-entry lines")
	again := read()
	for i := range l.Entries {
		assert.Equal(t, l.Entries[i].ID(), again.Entries[i].ID(), "ids are stable across reads")
	}
}

func errEOF() error { return ioEOF }

// FuzzDecodeLog feeds arbitrary bytes to the reader: it never panics;
// what it reads it writes back, and that reads the same again.
func FuzzDecodeLog(f *testing.F) {
	f.Add([]byte(header3 + "\n" + msgLine("a", "", "user", "x") + "\n"))
	f.Add([]byte(`{"type":"session","id":"v1"}` + "\n" + `{"type":"compaction","firstKeptEntryIndex":0}` + "\n"))
	f.Add([]byte(`{"type":"session","version":2,"id":"v2"}` + "\n" + `{"type":"message","id":"a","message":{"role":"hookMessage"}}` + "\n{"))
	f.Add([]byte(""))
	f.Add([]byte(header3 + "\n" + `{"type":"custom","id":"a","parentId":null,"agentsession.append":"0/2/b"}` + "\n" + `{"type":"custom","id":"b","parentId":"a"}` + "\n" +
		`{"type":"custom","id":"c","parentId":"b","agentsession.append":"0/2/e"}` + "\n" + `{"type":"custom","id":"x","parentId":"b"}` + "\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, strict := range []bool{false, true} {
			log, err := session.DecodeLog(data, &session.ReadOptions{Strict: strict})
			stream, serr := session.ReadLog(bytes.NewReader(data), &session.ReadOptions{Strict: strict})
			if (err == nil) != (serr == nil) {
				t.Fatalf("DecodeLog: %v, ReadLog: %v", err, serr)
			}
			if err != nil {
				if !errors.Is(err, session.ErrCorrupt) && !errors.Is(err, session.ErrUnsupportedVersion) {
					t.Fatalf("unexpected error kind: %v", err)
				}
				continue
			}
			if fmt.Sprint(ids(log.Entries)) != fmt.Sprint(ids(stream.Entries)) && log.MigratedFrom == 0 {
				t.Fatalf("DecodeLog and ReadLog disagree")
			}
			if fmt.Sprint(log.Partial) != fmt.Sprint(stream.Partial) {
				t.Fatalf("DecodeLog and ReadLog disagree on cut appends: %v, %v", log.Partial, stream.Partial)
			}
			var out bytes.Buffer
			if err := session.WriteLog(&out, log); err != nil {
				t.Fatal(err)
			}
			again, err := session.DecodeLog(out.Bytes(), &session.ReadOptions{Strict: strict})
			if err != nil {
				t.Fatalf("cannot read back what was written: %v\n%s", err, out.Bytes())
			}
			if len(again.Entries) != len(log.Entries) {
				t.Fatalf("%d entries read back, %d written", len(again.Entries), len(log.Entries))
			}
			for i := range log.Entries {
				if !bytes.Equal(again.Entries[i].JSON(), log.Entries[i].JSON()) {
					t.Fatalf("entry %d changed", i)
				}
			}
			_ = session.OpenLog(log).Context()
			_ = session.Verify(log)
		}
	})
}

// FuzzParseEntry checks the line decoder alone.
func FuzzParseEntry(f *testing.F) {
	f.Add([]byte(msgLine("a", "b", "user", "x")))
	f.Add([]byte(`{"type":"t","id":"i","parentId":null,"x":[1,{"y":"\u00e9"}]}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		e, err := session.ParseEntry(line)
		if err != nil {
			return
		}
		if !json.Valid(e.JSON()) {
			t.Fatalf("accepted invalid JSON %q", line)
		}
		if bytes.ContainsAny(e.JSON(), "\n\r") {
			t.Fatalf("an entry that is not one line: %q", e.JSON())
		}
		again, err := session.ParseEntry(e.JSON())
		if err != nil || again.ID() != e.ID() || again.Type() != e.Type() || again.ParentID() != e.ParentID() {
			t.Fatalf("reparse: %v", err)
		}
		if e.Type() == session.TypeMessage {
			_, _ = e.Message()
		}
	})
}

var ioEOF = io.EOF

// TestDecodeLogInParallel: a log large enough to be read in chunks on
// several goroutines gives what the streaming reader gives, malformed
// lines, their line numbers, a torn tail and strict errors included.
func TestDecodeLogInParallel(t *testing.T) {
	var b strings.Builder
	b.WriteString(header3 + "\n")
	pad := strings.Repeat("p", 2000)
	parent := ""
	bad := map[int]bool{}
	for i := 0; b.Len() < 12<<20; i++ {
		line := 2 + i
		switch {
		case i%997 == 13:
			b.WriteString(`{"type":"message","id":` + "\n") // cut short in the middle of the file
			bad[line] = true
		case i%1499 == 7:
			b.WriteString("\n") // blank lines count too
		default:
			id := fmt.Sprintf("e%06d", i)
			b.WriteString(msgLine(id, parent, "user", pad+id) + "\n")
			parent = id
		}
	}
	b.WriteString(`{"type":"message","id":"torn","par`)
	data := []byte(b.String())

	want, err := session.ReadLog(bytes.NewReader(data), nil)
	require.NoError(t, err)
	got, err := session.DecodeLog(data, nil)
	require.NoError(t, err)
	require.Equal(t, len(want.Entries), len(got.Entries))
	for i := range want.Entries {
		require.Equal(t, want.Entries[i].JSON(), got.Entries[i].JSON(), "entry %d", i)
	}
	require.Equal(t, len(bad), len(got.Malformed))
	for k := range got.Malformed {
		assert.Equal(t, want.Malformed[k].Line, got.Malformed[k].Line)
		assert.True(t, bad[got.Malformed[k].Line], "line %d is not a bad one", got.Malformed[k].Line)
	}
	require.NotNil(t, got.Torn)
	assert.Equal(t, want.Torn.Line, got.Torn.Line)
	assert.Equal(t, strings.Count(string(data), "\n")+1, got.Torn.Line)

	_, werr := session.ReadLog(bytes.NewReader(data), &session.ReadOptions{Strict: true})
	_, gerr := session.DecodeLog(data, &session.ReadOptions{Strict: true})
	var wce, gce *session.CorruptError
	require.ErrorAs(t, werr, &wce)
	require.ErrorAs(t, gerr, &gce)
	assert.Equal(t, wce.Line, gce.Line, "strict mode names the first bad line")
}

// TestLenientEscapes: a lenient read keeps a line whose only fault is a
// bad escape in its payload (its message is left out of the context and
// Verify names it); a control character still makes a line malformed; a
// strict read refuses both.
func TestLenientEscapes(t *testing.T) {
	badEscape := `{"type":"message","id":"b","parentId":"a","timestamp":"2026-01-15T10:00:01.000Z","message":{"role":"user","content":"bad \q escape"}}`
	control := `{"type":"message","id":"c","parentId":"a","timestamp":"2026-01-15T10:00:01.000Z","message":{"role":"user","content":"tab` + "\t" + `inside"}}`
	data := strings.Join([]string{header3, msgLine("a", "", "user", "one"), badEscape, control}, "\n") + "\n"

	log, err := session.DecodeLog([]byte(data), nil)
	require.NoError(t, err)
	assert.Equal(t, []string{"a", "b"}, ids(log.Entries))
	require.Len(t, log.Malformed, 1)
	assert.Equal(t, 4, log.Malformed[0].Line)
	s := session.OpenLog(log)
	assert.Equal(t, "b", s.LeafID())
	assert.Equal(t, []string{"user:one"}, texts(s.Context().Messages))
	var kinds []session.FindingKind
	for _, f := range session.Verify(log) {
		kinds = append(kinds, f.Kind)
	}
	assert.Contains(t, kinds, session.FindingBadMessage)

	for _, line := range []int{3, 4} {
		lines := strings.Split(data, "\n")
		only := strings.Join(append(lines[:2:2], lines[line-1]), "\n") + "\n"
		_, err = session.DecodeLog([]byte(only), &session.ReadOptions{Strict: true})
		var ce *session.CorruptError
		require.ErrorAs(t, err, &ce, "line %d", line)
		assert.Equal(t, 3, ce.Line)
	}
}
