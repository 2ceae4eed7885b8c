package session

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"unicode/utf16"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentsession/session/internal/jsonx"
)

func sameSlice(a, b []byte) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}

func TestStripTransient(t *testing.T) {
	for _, tc := range []struct {
		name, in, want string // want "": unchanged, the same slice
	}{
		{"none", `{"type":"message","message":{"role":"user","content":"hi"}}`, ""},
		{"a value that names one", `{"text":"partialJson","jsonlEvents ":1}`, ""},
		{"escapes but no key", `{"t\u0065xt":"\u0070artial"}`, ""},
		{"tool call of a stream cut short",
			`{"type":"message","message":{"role":"assistant","content":[{"type":"toolCall","id":"c1","name":"bash","arguments":{},"partialJson":"{\"comm"}],"stopReason":"aborted"}}`,
			`{"type":"message","message":{"role":"assistant","content":[{"type":"toolCall","id":"c1","name":"bash","arguments":{}}],"stopReason":"aborted"}}`},
		{"nested in arrays",
			`{"x":[{"jsonlEvents":[1,{"partialJson":2}]},[{"y":{"partialJson":"z","k":[]}}]]}`,
			`{"x":[{},[{"y":{"k":[]}}]]}`},
		{"escaped keys", `{"partial\u004Ason":"x","b":1,"\u006asonlEvents":[]}`, `{"b":1}`},
		{"every letter escaped", `{"\u0070\u0061\u0072\u0074\u0069\u0061\u006c\u004a\u0073\u006f\u006e":0}`, `{}`},
		{"first, middle and last, with whitespace",
			`{ "partialJson" : 1 , "a" : 2 , "jsonlEvents" : {"q":[1]} , "b" : 4 ,"partialJson":5 }`,
			`{ "a" : 2 , "b" : 4 }`},
		{"runs", `{"partialJson":1,"jsonlEvents":2,"a":3,"partialJson":4,"jsonlEvents":5}`, `{"a":3}`},
		{"all of them", `{"partialJson":1,"jsonlEvents":2}`, `{}`},
		{"all of them, spaced", "{ \"partialJson\" : 1 }", "{  }"},
		{"a key that only starts like one", `{"partialJsonX":1,"jsonlEvent":2}`, ""},
		{"lineCount counted again",
			`{"content":"a\nb\nc","lineCount":99,"jsonlEvents":[]}`,
			`{"content":"a\nb\nc","lineCount":3}`},
		{"lineCount under a change beneath",
			`{"lineCount":7,"content":"x\ny","meta":{"partialJson":""}}`,
			`{"lineCount":2,"content":"x\ny","meta":{}}`},
		{"lineCount right already", `{"content":"x","lineCount":1,"partialJson":""}`, `{"content":"x","lineCount":1}`},
		{"lineCount escaped newline", `{"content":"a\u000ab","lineCount":1,"partialJson":""}`, `{"content":"a\u000ab","lineCount":2}`},
		{"lineCount over a change deeper down", `{"content":"a","lineCount":99,"x":[{"partialJson":1}]}`, `{"content":"a","lineCount":1,"x":[{}]}`},
		{"lineCount of the top, changed beneath", `{"content":"a","lineCount":99,"x":{"y":1},"z":{"partialJson":1}}`, `{"content":"a","lineCount":1,"x":{"y":1},"z":{}}`},
		{"lineCount beside, not above", `{"x":{"content":"a","lineCount":99},"z":{"partialJson":1}}`, `{"x":{"content":"a","lineCount":99},"z":{}}`},
		{"lineCount not a number", `{"content":"a","lineCount":"5","partialJson":1}`, `{"content":"a","lineCount":"5"}`},
		{"content not a string", `{"content":["a"],"lineCount":5,"partialJson":1}`, `{"content":["a"],"lineCount":5}`},
		{"the last of twice the same key counts",
			`{"content":"a\nb","content":7,"lineCount":9,"partialJson":1}`,
			`{"content":"a\nb","content":7,"lineCount":9}`},
		{"custom entry",
			`{"type":"custom","id":"c1","parentId":null,"timestamp":"2026-01-01T00:00:00.000Z","customType":"ext","data":{"jsonlEvents":[{"type":"x"}],"k":"v"}}`,
			`{"type":"custom","id":"c1","parentId":null,"timestamp":"2026-01-01T00:00:00.000Z","customType":"ext","data":{"k":"v"}}`},
		{"tool arguments too (key-agnostic)", `{"arguments":{"partialJson":"x","path":"a"}}`, `{"arguments":{"path":"a"}}`},
		{"inside a signed block too",
			`{"type":"toolCall","id":"c","name":"n","arguments":{},"thoughtSignature":"sig","partialJson":"{"}`,
			`{"type":"toolCall","id":"c","name":"n","arguments":{},"thoughtSignature":"sig"}`},
		{"not JSON", `{"partialJson":1`, ""},
		{"trailing data", `{"partialJson":1} {}`, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := []byte(tc.in)
			out, changed := stripTransient(in)
			if tc.want == "" {
				assert.False(t, changed)
				assert.True(t, sameSlice(in, out), "the input itself: %s", out)
				return
			}
			assert.True(t, changed)
			assert.Equal(t, tc.want, string(out))
			assert.True(t, json.Valid(out))
			again, changed := stripTransient(out)
			assert.False(t, changed, "idempotent")
			assert.True(t, sameSlice(out, again))
		})
	}
}

func TestIsTruncated(t *testing.T) {
	for s, want := range map[string]bool{
		"x" + TruncationNotice: true,
		TruncationNotice:       true,
		"x\n\n[agentsession: 1400 characters truncated]":    true,
		"x\n\n[agentsession: characters truncated]":         false,
		"x\n\n[agentsession: 14a0 characters truncated]":    false,
		"x\n\n[Session persistence truncated large content": false,
		"x": false,
	} {
		assert.Equal(t, want, IsTruncated(s), "%q", s)
	}
}

func TestPrepMessage(t *testing.T) {
	plain := Assistant(Text("hi"), ToolCall("c1", "bash", json.RawMessage(`{"command":"ls"}`)))
	assert.Same(t, plain, prepMessage(plain), "nothing to strip: the message itself")

	m := Assistant(Text("hi"), ToolCall("c1", "bash", json.RawMessage(`{"command":"ls","partialJson":"x"}`)))
	m.Content[1].Extra.Set("partialJson", json.RawMessage(`"{\"command\":\"l"`))
	m.Extra.Set("jsonlEvents", json.RawMessage(`[{"type":"start"}]`))
	m.Extra.Set("kept", json.RawMessage(`{"jsonlEvents":1,"k":2}`))
	got := prepMessage(m)
	enc, err := got.MarshalJSON()
	require.NoError(t, err)
	assert.NotContains(t, string(enc), "partialJson")
	assert.NotContains(t, string(enc), "jsonlEvents")
	assert.Contains(t, string(enc), `"kept":{"k":2}`)
	assert.JSONEq(t, `{"command":"ls"}`, string(got.Content[1].Arguments))

	r := ToolResult("c1", "read", "a\nb")
	r.Details = json.RawMessage(`{"content":"a\nb","lineCount":7,"jsonlEvents":[]}`)
	got = prepMessage(r)
	assert.JSONEq(t, `{"content":"a\nb","lineCount":2}`, string(got.Details))
}

// The pi corpus appended again: what the strip changes in it is the
// partialJson members of tool calls in messages a stream error or abort
// cut short (pi-mono 0.58 wrote them), and nothing else.
func TestStripTransientCorpus(t *testing.T) {
	dir := corpusDir(t)
	files, err := filepath.Glob(filepath.Join(dir, "*.jsonl"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	changed := 0
	for _, f := range files {
		data, err := os.ReadFile(f)
		require.NoError(t, err)
		sc := bufio.NewScanner(bytes.NewReader(data))
		sc.Buffer(nil, 64<<20)
		for sc.Scan() {
			line := sc.Bytes()
			e, err := ParseEntry(line)
			if err != nil {
				continue // the header, an old format's line
			}
			raw := e.bytes()
			ne := prepEntry(e)
			var m *Message
			if e.Type() == TypeMessage {
				m, err = e.Message()
				require.NoError(t, err)
			}
			if sameSlice(ne.bytes(), raw) {
				if m != nil {
					assert.Same(t, m, prepMessage(m), "%s %s", filepath.Base(f), e.ID())
				}
				continue
			}
			changed++
			assert.Equal(t, stripKeys(t, raw), decodeAny(t, ne.bytes()), "%s %s: only transient members go", filepath.Base(f), e.ID())
			require.NotNil(t, m)
			enc, err := prepMessage(m).MarshalJSON()
			require.NoError(t, err)
			var want struct{ Message json.RawMessage }
			require.NoError(t, json.Unmarshal(ne.bytes(), &want))
			assert.JSONEq(t, string(want.Message), string(enc), "the message appended again is the entry's")
		}
		require.NoError(t, sc.Err())
	}
	t.Logf("%d entries of the corpus hold transient members", changed)
}

func jsLen(s string) int { return len(utf16.Encode([]rune(s))) }

// piTruncate is oh-my-pi's truncateString and notice, on UTF-16 code
// units as JavaScript has them.
func piTruncate(s string, max int) string {
	u := utf16.Encode([]rune(s))
	if len(u) <= max {
		return s
	}
	u = u[:max-len(TruncationNotice)]
	if n := len(u); n > 0 && u[n-1] >= 0xd800 && u[n-1] <= 0xdbff {
		u = u[:n-1]
	}
	return string(utf16.Decode(u)) + TruncationNotice
}

// corpusDir is internal/compattest's Dir (which this package's own tests
// cannot import): the pi corpus beside the checkout, or a skip.
func corpusDir(t *testing.T) string {
	_, file, _, _ := runtime.Caller(0)
	dir := filepath.Join(filepath.Dir(filepath.Dir(file)), "shared", "compat", "pi")
	if _, err := os.Stat(dir); err != nil {
		t.Skipf("compat corpus not found at %s (it lives in ../shared beside the checkout): %v", dir, err)
	}
	return dir
}

func decodeAny(t testing.TB, raw []byte) any {
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var v any
	require.NoError(t, d.Decode(&v))
	return v
}

// stripKeys decodes raw without its transient members.
func stripKeys(t *testing.T, raw []byte) any {
	var walk func(v any) any
	walk = func(v any) any {
		switch x := v.(type) {
		case map[string]any:
			for k, e := range x {
				if k == "partialJson" || k == "jsonlEvents" {
					delete(x, k)
					continue
				}
				x[k] = walk(e)
			}
		case []any:
			for i := range x {
				x[i] = walk(x[i])
			}
		}
		return v
	}
	return walk(decodeAny(t, raw))
}

// refPrep is oh-my-pi's truncateForPersistence written over decoded
// values, with this package's rule for images (their data is kept whole
// where it does not go to a blob): the oracle of FuzzPersistPrep.
// changed says whether v changed.
func refPrep(v any, key string, strip bool, max int) (any, bool) {
	switch x := v.(type) {
	case string:
		if max >= 0 && key != "thinkingSignature" && key != "thoughtSignature" && key != "textSignature" && jsLen(x) > max {
			return piTruncate(x, max), true
		}
		return x, false
	case []any:
		changed := false
		for i := range x {
			var ch bool
			x[i], ch = refPrep(x[i], key, strip, max)
			changed = changed || ch
		}
		return x, changed
	case map[string]any:
		if refSigned(x) {
			max = -1 // kept whole, but for the transient members
		}
		changed := false
		for k, e := range x {
			if strip && (k == "partialJson" || k == "jsonlEvents") {
				delete(x, k)
				changed = true
				continue
			}
			if k == "data" && x["type"] == "image" {
				if _, ok := e.(string); ok {
					continue
				}
			}
			var ch bool
			x[k], ch = refPrep(e, k, strip, max)
			changed = changed || ch
		}
		if changed {
			c, ok := x["content"].(string)
			if _, num := x["lineCount"].(json.Number); ok && num {
				x["lineCount"] = json.Number(strconv.Itoa(strings.Count(c, "\n") + 1))
			}
		}
		return x, changed
	}
	return v, false
}

func refSigned(x map[string]any) bool {
	has := func(k string) bool { s, ok := x[k].(string); return ok && s != "" }
	switch x["type"] {
	case "thinking":
		return has("thinkingSignature")
	case "text":
		return has("textSignature")
	case "toolCall":
		return has("thoughtSignature")
	case "redactedThinking":
		return has("data")
	case "reasoning":
		return has("encrypted_content")
	}
	return false
}

// FuzzPersistPrep: what an entry becomes before it is persisted (the
// transient members stripped, strings cut to a limit) is valid JSON, does
// not change when prepared again, holds no string it cut longer than the
// limit, is the input itself when nothing applies, and is what oh-my-pi's
// algorithm makes of it.
func FuzzPersistPrep(f *testing.F) {
	for _, s := range []string{
		`{"type":"message","message":{"role":"assistant","content":[{"type":"toolCall","id":"c","name":"n","arguments":{},"partialJson":"{"}]}}`,
		`{"content":"a\nb\nc\nd\ne\nf\ng\nh\ni\nj\nk\nl\nm\nn\no\np\nq\nr\ns\nt\nu\nv\nw\nx\ny\nz\n0\n1\n2\n3\n4\n5\n6\n7","lineCount":9}`,
		`{"a":[{"jsonlEvents":[]},"` + strings.Repeat("😀é\\n", 30) + `"],"partial\u004Ason":1}`,
		`{"type":"thinking","thinking":"` + strings.Repeat("t", 80) + `","thinkingSignature":"s","x":{"partialJson":1}}`,
		`{"type":"image","data":"` + strings.Repeat("A", 80) + `"}`,
		`{ "partialJson" : 1 , "a" : "\ud83d\ude00\ud800" , "jsonlEvents" : 2 }`,
		`[1,"x",{"thoughtSignature":["` + strings.Repeat("s", 70) + `"]}]`,
	} {
		f.Add([]byte(s), uint8(60), true)
	}
	f.Fuzz(func(t *testing.T, raw []byte, lim uint8, strip bool) {
		cut := -1 // no limit
		if lim > 0 {
			cut = max(int(lim), len(TruncationNotice))
		}
		p := prepper{raw: raw, strip: strip, limit: cut}
		out, changed, err := p.run()
		require.NoError(t, err)
		if !changed {
			require.True(t, sameSlice(raw, out), "unchanged: the input itself")
		}
		if !json.Valid(raw) {
			if changed {
				// What encoding/json and the cursor accept differ only in
				// the edges (depth); the output must still be JSON.
				require.True(t, json.Valid(out), "%q", out)
			}
			return
		}
		require.True(t, json.Valid(out), "%q", out)
		p2 := prepper{raw: out, strip: strip, limit: cut}
		again, changed2, err := p2.run()
		require.NoError(t, err)
		require.False(t, changed2, "idempotent: %q became %q", out, again)

		got := decodeAny(t, out)
		if hasDuplicateKeys(raw) {
			// A member a later one of the same key hides may be cut, and
			// count as a change: the oracle, which never sees it, cannot
			// tell.
			return
		}
		want, wantChanged := refPrep(decodeAny(t, raw), "", strip, cut)
		if !reflect.DeepEqual(want, got) {
			t.Fatalf("differs from pi's algorithm:\n in: %s\nout: %s\nwant %#v", raw, out, want)
		}
		if !wantChanged {
			require.True(t, sameSlice(raw, out), "nothing applies: the input itself, not %q", out)
		}
		if cut >= 0 {
			before := map[string]bool{}
			eachString(decodeAny(t, raw), func(s string) { before[s] = true })
			eachString(got, func(s string) {
				if !before[s] {
					require.LessOrEqual(t, jsLen(s), cut, "a string it made is within the limit")
				}
			})
		}
	})
}

func eachString(v any, fn func(string)) {
	switch x := v.(type) {
	case string:
		fn(x)
	case []any:
		for _, e := range x {
			eachString(e, fn)
		}
	case map[string]any:
		for _, e := range x {
			eachString(e, fn)
		}
	}
}

// hasDuplicateKeys reports whether an object of the JSON raw has a key
// twice.
func hasDuplicateKeys(raw []byte) bool {
	var c jsonx.Cursor
	c.Reset(raw)
	var walk func() bool
	walk = func() bool {
		switch c.Kind() {
		case jsonx.KindObject:
			ms, _ := c.Object()
			seen := map[string]bool{}
			for {
				_, _, more := ms.Next()
				if !more {
					return false
				}
				if k := ms.Key(); seen[k] {
					return true
				} else {
					seen[k] = true
				}
				if walk() {
					return true
				}
			}
		case jsonx.KindArray:
			as, _ := c.Array()
			for as.Next() {
				if walk() {
					return true
				}
			}
		default:
			c.Skip()
		}
		return false
	}
	return walk()
}
