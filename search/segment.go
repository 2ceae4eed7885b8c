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
// unicode61) put between two letters or digits when either is CJK; the
// text stays readable, and snippets drop the mark again.

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

// isWordChar reports whether the unicode61 tokenizer keeps r in a
// token: a letter, a number or a private-use character (see hasToken).
func isWordChar(r rune) bool {
	return unicode.IsLetter(r) || unicode.IsNumber(r) || unicode.Is(unicode.Co, r)
}

// segment returns s with segmentMark between two adjacent word
// characters of which one is CJK (combining marks stay with the
// character before them); s itself when it has no CJK character.
func segment(s string) string {
	if !hasCJK(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + len(s)/2)
	prev, prevCJK := false, false // the character before is a word character, a CJK one
	for _, r := range s {
		if unicode.Is(unicode.Mn, r) {
			b.WriteRune(r) // a combining mark stays with its character
			continue
		}
		word := isWordChar(r)
		cjk := word && isCJK(r)
		if word && prev && (cjk || prevCJK) {
			b.WriteRune(segmentMark)
		}
		b.WriteRune(r)
		prev, prevCJK = word, cjk
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
