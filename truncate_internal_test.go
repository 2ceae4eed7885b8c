package session

import (
	"bytes"
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// cutTo runs a FileStore's limits (no blobs) over raw.
func cutTo(t *testing.T, max int, raw string) string {
	t.Helper()
	z := &sizeLimits{maxChars: max, minBlob: -1}
	out, _, err := z.limit(context.Background(), []byte(raw))
	require.NoError(t, err)
	require.True(t, json.Valid(out), "%s", out)
	again, n, err := z.limit(context.Background(), out)
	require.Zero(t, n.strings, "nothing is cut twice")
	require.NoError(t, err)
	require.True(t, sameSlice(out, again), "a second pass changes nothing: %s", again)
	return string(out)
}

// strOf decodes the string member key of the object raw.
func strOf(t *testing.T, raw, key string) string {
	t.Helper()
	var m map[string]any
	require.NoError(t, json.Unmarshal([]byte(raw), &m))
	s, _ := m[key].(string)
	return s
}

func TestTruncateLikePi(t *testing.T) {
	const max = 100
	keep := max - len(TruncationNotice)         // 53
	emoji := 2*(keep/2) + len(TruncationNotice) // an emoji does not fit in the last unit
	ascii := strings.Repeat("a", 300)
	for _, tc := range []struct {
		name, s  string
		kept     string // the part kept before the notice; "" for none
		wantSize int    // in UTF-16 code units, notice included
	}{
		{"ascii", ascii, ascii[:keep], max},
		{"exactly the limit", ascii[:max], "", 0},
		{"one over", ascii[:max+1], ascii[:keep], max},
		{"two-byte characters", strings.Repeat("é", 200), strings.Repeat("é", keep), max},
		{"escapes count once", strings.Repeat("\"\n", 100), strings.Repeat("\"\n", 100)[:keep], max},
		{"an emoji across the cut is left out", ascii[:keep-1] + strings.Repeat("😀", 60), ascii[:keep-1], max - 1},
		{"emoji before the cut", strings.Repeat("😀", 60), strings.Repeat("😀", keep/2), emoji},
		{"emoji count twice", strings.Repeat("😀", max/2), "", 0},
		{"emoji count twice, one over", strings.Repeat("😀", max/2) + "a", strings.Repeat("😀", keep/2), emoji},
		{"an emoji just fits", "a" + strings.Repeat("😀", max), "a" + strings.Repeat("😀", keep/2), max},
		{"three-byte characters", strings.Repeat("€", 101), strings.Repeat("€", keep), max},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := string(jsonMarshal(t, map[string]any{"text": tc.s}))
			out := cutTo(t, max, in)
			got := strOf(t, out, "text")
			if tc.kept == "" {
				assert.Equal(t, in, out, "not cut")
				return
			}
			assert.Equal(t, tc.kept+TruncationNotice, got)
			assert.Equal(t, tc.wantSize, jsLen(got))
			assert.True(t, IsTruncated(got))
			assert.Equal(t, piTruncate(tc.s, max), got, "pi's own arithmetic")
		})
	}
}

func jsonMarshal(t testing.TB, v any) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	require.NoError(t, enc.Encode(v))
	return bytes.TrimSpace(buf.Bytes())
}

func TestTruncateExemptions(t *testing.T) {
	const max = 60
	long := strings.Repeat("x", 200)
	cut := long[:max-len(TruncationNotice)] + TruncationNotice
	q := strconv.Quote(long)
	for _, tc := range []struct {
		name, in string
		kept     bool
	}{
		{"signed thinking", `{"type":"thinking","thinking":` + q + `,"thinkingSignature":"s"}`, true},
		{"signature first", `{"thinkingSignature":"s","thinking":` + q + `,"type":"thinking"}`, true},
		{"unsigned thinking", `{"type":"thinking","thinking":` + q + `,"thinkingSignature":""}`, false},
		{"signed text", `{"type":"text","text":` + q + `,"textSignature":"s"}`, true},
		{"text with a thinking signature", `{"type":"text","text":` + q + `,"thinkingSignature":"s"}`, false},
		{"signed tool call", `{"type":"toolCall","id":"c","name":"n","arguments":{"x":` + q + `,"y":[` + q + `]},"thoughtSignature":"s"}`, true},
		{"unsigned tool call", `{"type":"toolCall","id":"c","name":"n","arguments":{"x":` + q + `},"thoughtSignature":""}`, false},
		{"redacted thinking", `{"type":"redactedThinking","data":` + q + `}`, true},
		{"reasoning item", `{"type":"reasoning","summary":[{"text":` + q + `}],"encrypted_content":"e"}`, true},
		{"reasoning item without", `{"type":"reasoning","summary":[{"text":` + q + `}],"encrypted_content":""}`, false},
		{"image data", `{"type":"image","mimeType":"image/png","data":` + q + `}`, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := cutTo(t, max, tc.in)
			if tc.kept {
				assert.Equal(t, tc.in, out)
			} else {
				assert.Equal(t, strings.ReplaceAll(tc.in, q, strconv.Quote(cut)), out)
			}
		})
	}
	// A signature's key keeps its string wherever it is, and the others
	// in a signed block are kept whatever its depth.
	in := `{"a":{"thinkingSignature":` + q + `,"thoughtSignature":[` + q + `],"textSignature":` + q + `,"other":` + q + `}}`
	assert.Equal(t, strings.Replace(in, `"other":`+q, `"other":`+strconv.Quote(cut), 1), cutTo(t, max, in))
	in = `{"content":[{"type":"thinking","thinking":"t","thinkingSignature":"s","nested":{"deep":` + q + `,"content":` + q + `,"lineCount":1}}],"other":` + q + `}`
	assert.Equal(t, strings.Replace(in, `"other":`+q, `"other":`+strconv.Quote(cut), 1), cutTo(t, max, in))
}

func TestTruncateLineCount(t *testing.T) {
	const max = 100
	content := strings.Repeat("line\n", 50) // 250 characters, 51 lines
	in := string(jsonMarshal(t, map[string]any{"details": map[string]any{"path": "f", "content": content, "lineCount": 51}}))
	out := cutTo(t, max, in)
	var got struct {
		Details struct {
			Content   string
			LineCount int
		}
	}
	require.NoError(t, json.Unmarshal([]byte(out), &got))
	assert.Equal(t, piTruncate(content, max), got.Details.Content)
	assert.Equal(t, strings.Count(got.Details.Content, "\n")+1, got.Details.LineCount)
	assert.Equal(t, 13, got.Details.LineCount, "53 characters of lines of 5 (ten newlines), and the notice's two")

	// The object whose member was cut, and those above it.
	in = `{"content":"a\nb","lineCount":5,"x":{"content":` + strconv.Quote(content) + `,"lineCount":51}}`
	out = cutTo(t, max, in)
	assert.Contains(t, out, `{"content":"a\nb","lineCount":2,"x":{"content":`)
	assert.Contains(t, out, `,"lineCount":13}}`)
	// Not where nothing changed.
	in = `{"content":"a\nb","lineCount":5,"x":"short"}`
	assert.Equal(t, in, cutTo(t, max, in))
}

func TestTruncateSmallLimits(t *testing.T) {
	// A limit under the notice's length counts as the notice's length:
	// a cut never makes a string longer.
	s := strings.Repeat("y", len(TruncationNotice))
	in := `{"s":"` + s + `"}`
	assert.Equal(t, in, cutTo(t, 1, in))
	in = `{"s":"` + s + `y"}`
	assert.Equal(t, `{"s":`+strconv.Quote(TruncationNotice)+`}`, cutTo(t, 0, in))
	assert.Equal(t, in, cutTo(t, -1, in), "no limit")
}
