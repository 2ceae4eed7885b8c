package export

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// Text helpers of the Markdown transcript.

// cut splits text after FoldLines lines or FoldBytes bytes, at a line
// end, or within a first line longer than FoldBytes at a character
// boundary.
func cut(text string) (head, rest string) {
	end, lines := 0, 0
	for lines < FoldLines && end < len(text) {
		next := len(text)
		if i := strings.IndexByte(text[end:], '\n'); i >= 0 {
			next = end + i + 1
		}
		if next > FoldBytes {
			break
		}
		end = next
		lines++
	}
	if end == len(text) {
		return text, ""
	}
	if end == 0 {
		end = FoldBytes
		for end > 0 && !utf8Start(text[end]) {
			end--
		}
	}
	return strings.TrimSuffix(text[:end], "\n"), text[end:]
}

func utf8Start(b byte) bool { return b&0xC0 != 0x80 }

// fence writes text in a code fence longer than any run of backticks in
// it.
func (md *mdWriter) fence(lang, text string) {
	f := strings.Repeat("`", max(3, longestRun(text, '`')+1))
	md.printf("%s%s\n%s\n%s\n\n", f, lang, strings.TrimRight(text, "\n"), f)
}

func longestRun(s string, c byte) int {
	best, n := 0, 0
	for i := 0; i < len(s); i++ {
		if s[i] == c {
			n++
			best = max(best, n)
		} else {
			n = 0
		}
	}
	return best
}

// code is s as an inline code span, whatever backticks it holds.
func code(s string) string {
	s = oneLine(s)
	f := strings.Repeat("`", longestRun(s, '`')+1)
	if strings.HasPrefix(s, "`") || strings.HasSuffix(s, "`") {
		s = " " + s + " "
	}
	return f + s + f
}

// oneLine keeps s on one line, for headings and notes.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

func prettyJSON(raw json.RawMessage) string {
	var b bytes.Buffer
	if len(raw) == 0 || json.Indent(&b, raw, "", "  ") != nil {
		return string(raw)
	}
	return b.String()
}

func count(n int64) string {
	s := fmt.Sprint(n)
	for i := len(s) - 3; i > 0 && s[i-1] != '-'; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

func size(n int64) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d bytes", n)
}
