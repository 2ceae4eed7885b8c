package jsonx

import (
	"bytes"
	"strings"
	"testing"
	"unicode/utf8"
)

// appendStringReference is AppendStringValid a rune at a time: the word
// loop must write the same bytes and give the same verdict.
func appendStringReference(dst []byte, s string) ([]byte, bool) {
	dst = append(dst, '"')
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			dst = append(dst, "\uFFFD"...)
		case r == '"' || r == '\\':
			dst = append(dst, '\\', byte(r))
		case r == '\n':
			dst = append(dst, `\n`...)
		case r == '\r':
			dst = append(dst, `\r`...)
		case r == '\t':
			dst = append(dst, `\t`...)
		case r == '\b':
			dst = append(dst, `\b`...)
		case r == '\f':
			dst = append(dst, `\f`...)
		case r < 0x20:
			dst = append(dst, '\\', 'u', '0', '0', hexDigits[r>>4], hexDigits[r&0xF])
		default:
			dst = append(dst, s[i:i+size]...)
		}
		i += size
	}
	return append(dst, '"'), utf8.ValidString(s)
}

func checkAppendString(t *testing.T, s string) {
	t.Helper()
	want, wantValid := appendStringReference([]byte("pre"), s)
	// With room and without: the word loop grows dst itself.
	for _, dst := range [][]byte{[]byte("pre"), append(make([]byte, 0, 7*len(s)+8), "pre"...)} {
		got, valid := AppendStringValid(dst, s)
		if !bytes.Equal(got, want) || valid != wantValid {
			t.Fatalf("AppendStringValid(%q) = %q, %v; want %q, %v", s, got, valid, want, wantValid)
		}
	}
}

func TestAppendStringWords(t *testing.T) {
	cases := []string{"", "a", `"`, `\`, "\x00\x1f\x7f", "\xff", "é", "\u2028", "\uFFFD", "\xed\xa0\x80"}
	// Every length around the word size, with the special byte, a byte
	// from 0x80 on, or an invalid one at each place: the verdict on
	// UTF-8 must not depend on where in a word (or the tail) it is.
	for n := 0; n < 26; n++ {
		for at := 0; at < n; at++ {
			for _, c := range []string{`"`, "\n", "\x01", "é", "\xff", "\xc3"} {
				b := []byte(strings.Repeat("a", n))
				s := string(b[:at]) + c + string(b[at:])
				cases = append(cases, s)
			}
		}
	}
	// Long runs that need escaping, for the loop to grow dst while it
	// writes (six bytes out for each byte in).
	cases = append(cases, strings.Repeat("\x01", 1000), strings.Repeat("a\x02\"\\", 333)+"é", strings.Repeat("é\n", 500)+"\xff")
	for _, s := range cases {
		checkAppendString(t, s)
	}
}

func FuzzAppendString(f *testing.F) {
	for _, s := range []string{"", "plain", "a\"b\\c\n\x01", "\xff\xfe", "é中😀", strings.Repeat("\tx := \"y\"\n", 9)} {
		f.Add(s)
	}
	f.Fuzz(checkAppendString)
}
