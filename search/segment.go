package search

import (
	"database/sql/driver"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"modernc.org/sqlite"
)

// Chinese, Japanese and Korean text is written without spaces between
// words (Korean puts its particles against the word), so the unicode61
// tokenizer takes a whole run of it for one token, and a word inside the
// run (会话 in 保存会话状态) is found only as a prefix of the run.
// The text is segmented before the tokenizer sees it: each CJK character
// becomes a token of its own, as the Unicode word-break rules (UAX #29)
// and Lucene's StandardTokenizer make of ideographs, and a CJK word in a
// query becomes the phrase of its characters, which matches exactly
// where those characters stand side by side, inside a run or not. Text
// that is not CJK is tokenized as before.
//
// The segmentation is a zero-width space (U+200B, a separator to
// unicode61) put between a CJK character and any neighbour that is not
// already a separator (a letter, a digit, an emoji, ...); the text stays
// readable, and snippets drop the mark again.

// segmentMark separates the characters of a CJK run.
const segmentMark = '\u200b'

// indexedFunc is the SQL function that makes the text FTS5 indexes from
// a deflated column of docs: inflated, then segmented. The view
// text_content and the deletes of the external content table call it,
// so they give FTS5 the very text it indexed.
const indexedFunc = "agentsession_search_indexed"

func init() {
	sqlite.MustRegisterDeterministicScalarFunction(indexedFunc, 1, func(_ *sqlite.FunctionContext, args []driver.Value) (driver.Value, error) {
		switch v := args[0].(type) {
		case nil:
			return nil, nil
		case []byte:
			s, err := inflate(v)
			if err != nil {
				return nil, err
			}
			return segment(s), nil
		}
		return nil, fmt.Errorf("%s: %T is not a blob", indexedFunc, args[0])
	})
}

// isCJK reports whether r is a character of a script written without
// spaces between words: Han ideographs, Hiragana, Katakana (with its
// prolonged sound mark, full and half width), Hangul and Bopomofo.
func isCJK(r rune) bool {
	if r < 0x1100 {
		return false // fast path: Latin, Greek, Cyrillic, ...
	}
	return unicode.In(r, unicode.Han, unicode.Hiragana, unicode.Katakana, unicode.Hangul, unicode.Bopomofo) ||
		r == 'ー' || r == 'ｰ' || r == '々' || r == '〆'
}

// isSeparator reports whether r parts tokens for the unicode61 tokenizer
// whatever its Unicode tables say: white space, the segment mark itself
// and ASCII other than letters and digits.
func isSeparator(r rune) bool {
	if r < utf8.RuneSelf {
		return !('0' <= r && r <= '9' || 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z')
	}
	return r == segmentMark || unicode.IsSpace(r)
}

// segment returns s with segmentMark between a CJK character and any
// character beside it that is not a separator (isSeparator): a letter,
// a digit, and also a symbol such as an emoji, which the tokenizer may
// keep in a token (its Unicode tables are older than Go's, and take a
// character they do not know, an emoji of Unicode 8 or later, for a
// token character). A combining mark stays with the character before
// it. s itself when it has no CJK character. A mark where the tokenizer
// would have parted the text anyway is harmless.
func segment(s string) string {
	if !hasCJK(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + len(s)/2)
	prev, prevCJK := false, false // the character before is one a token may hold, a CJK one
	for _, r := range s {
		if prev && unicode.Is(unicode.M, r) {
			b.WriteRune(r) // a combining mark stays with its character
			continue
		}
		tok := !isSeparator(r)
		cjk := tok && isCJK(r)
		if tok && prev && (cjk || prevCJK) {
			b.WriteRune(segmentMark)
		}
		b.WriteRune(r)
		prev, prevCJK = tok, cjk
	}
	return b.String()
}

// hasCJK reports whether s holds a CJK character.
func hasCJK(s string) bool {
	for i := 0; i < len(s); {
		// Eight ASCII bytes at a time: most text of a session is.
		for i+8 <= len(s) && (uint64(s[i])|uint64(s[i+1])<<8|uint64(s[i+2])<<16|uint64(s[i+3])<<24|
			uint64(s[i+4])<<32|uint64(s[i+5])<<40|uint64(s[i+6])<<48|uint64(s[i+7])<<56)&0x8080808080808080 == 0 {
			i += 8
		}
		if i >= len(s) {
			return false
		}
		if s[i] < utf8.RuneSelf {
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if isCJK(r) {
			return true
		}
		i += n
	}
	return false
}

// unsegment removes the marks segment put in s (a snippet).
func unsegment(s string) string {
	return strings.ReplaceAll(s, string(segmentMark), "")
}
