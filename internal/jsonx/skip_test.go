package jsonx

import (
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"
)

// skipReference is SkipString one byte at a time: the word scanner must
// agree with it on every input.
func skipReference(b []byte, i int) (int, bool, error) {
	if i >= len(b) || b[i] != '"' {
		return i, false, syntaxErr(i, "expected string")
	}
	escaped := false
	for i++; i < len(b); i++ {
		switch c := b[i]; {
		case c == '"':
			return i + 1, escaped, nil
		case c == '\\':
			escaped = true
			n, err := skipEscape(b, i)
			if err != nil {
				return i, escaped, err
			}
			i += n - 1
		case c < 0x20:
			return i, escaped, syntaxErr(i, "control character in string")
		}
	}
	return i, escaped, syntaxErr(i, "unexpected end of string")
}

func checkSkip(t *testing.T, b []byte) {
	t.Helper()
	end, esc, err := SkipString(b, 0)
	wend, wesc, werr := skipReference(b, 0)
	if (err == nil) != (werr == nil) || end != wend || (err == nil && esc != wesc) {
		t.Fatalf("SkipString(%q) = %d, %v, %v; want %d, %v, %v", b, end, esc, err, wend, wesc, werr)
	}
	if err != nil && err.Error() != werr.Error() {
		t.Fatalf("SkipString(%q): error %v, want %v", b, err, werr)
	}
}

func TestSkipStringWords(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	alphabet := []byte("ab \"\\\\\\nu0f\t\x01\xc3\xa9/")
	for n := range 20000 {
		size := r.IntN(300)
		b := make([]byte, 1, size+1)
		b[0] = '"'
		for range size {
			b = append(b, alphabet[r.IntN(len(alphabet))])
		}
		checkSkip(t, b)
		// Valid strings of every length, to cross block edges.
		s := strings.Repeat("x", n%200) + string(b[1:])
		tok, _ := json.Marshal(s)
		checkSkip(t, tok)
		checkSkip(t, append(tok, "tail"...))
	}
	// Runs of backslashes across word edges.
	for pre := 50; pre < 80; pre++ {
		for run := 0; run < 6; run++ {
			b := []byte(`"` + strings.Repeat("a", pre) + strings.Repeat(`\`, run) + `"` + strings.Repeat("b", 70) + `"`)
			checkSkip(t, b)
			b = []byte(`"` + strings.Repeat("a", pre) + strings.Repeat(`\`, run) + `u00e9` + strings.Repeat("b", 70) + `"`)
			checkSkip(t, b)
		}
	}
}

func FuzzSkipString(f *testing.F) {
	f.Add([]byte(`"plain"`))
	f.Add([]byte(`"` + strings.Repeat(`a\"b\\n\u00e9`, 20) + `"`))
	f.Add([]byte(`"` + strings.Repeat("a", 63) + `\`))
	f.Fuzz(func(t *testing.T, b []byte) {
		checkSkip(t, append([]byte{'"'}, b...))
	})
}

func BenchmarkSkipString(b *testing.B) {
	code := strings.Repeat("\tfmt.Fprintf(w, \"%d\\t%q\\n\", i, line) // 123\n", 100)
	text := strings.Repeat("the session tree keeps every branch of the conversation ", 20)
	for _, c := range []struct{ name, s string }{{"code", code}, {"text", text}} {
		tok, _ := json.Marshal(c.s)
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(tok)))
			for b.Loop() {
				SkipString(tok, 0)
			}
		})
		b.Run(c.name+"-reference", func(b *testing.B) {
			b.SetBytes(int64(len(tok)))
			for b.Loop() {
				skipReference(tok, 0)
			}
		})
		b.Run(c.name+"-read", func(b *testing.B) {
			b.SetBytes(int64(len(tok)))
			for b.Loop() {
				readString(tok, 0, true, nil)
			}
		})
	}
}

func BenchmarkAppendString(b *testing.B) {
	code := strings.Repeat("\tfmt.Fprintf(w, \"%d\\t%q\\n\", i, line) // 123\n", 100)
	text := strings.Repeat("the session tree keeps every branch of the conversation ", 20)
	for _, c := range []struct{ name, s string }{{"code", code}, {"text", text}} {
		buf := make([]byte, 0, 2*len(c.s))
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(c.s)))
			for b.Loop() {
				buf = AppendString(buf[:0], c.s)
			}
		})
	}
}
