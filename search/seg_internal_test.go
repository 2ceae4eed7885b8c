package search

import (
	"strings"
	"testing"
)

func BenchmarkSegmentASCII(b *testing.B) {
	s := strings.Repeat("The parser test iterates over a map, whose order varies. ", 90) // ~5 KB
	b.SetBytes(int64(len(s)))
	for b.Loop() {
		if segment(s) != s {
			b.Fatal("changed")
		}
	}
}

func BenchmarkInflate5K(b *testing.B) {
	s := strings.Repeat("The parser test iterates over a map, whose order varies. ", 90)
	d := deflate(s)
	b.SetBytes(int64(len(s)))
	for b.Loop() {
		if _, err := inflate(d); err != nil {
			b.Fatal(err)
		}
	}
}

// TestSegment: marks go between two word characters one of which is
// CJK, wherever they stand (the ASCII fast path reads 8 bytes at a time).
func TestSegment(t *testing.T) {
	for n := range 20 {
		pre := strings.Repeat("a", n)
		if got, want := segment(pre+"会话"), pre+"\u200b会\u200b话"; n > 0 && got != want {
			t.Errorf("%q: %q, want %q", pre+"会话", got, want)
		}
		if !hasCJK(pre+"話") || hasCJK(pre+"é"+pre) || hasCJK(pre+"Привет") {
			t.Errorf("hasCJK wrong after %d ASCII bytes", n)
		}
	}
	for in, want := range map[string]string{
		"":           "",
		"plain text": "plain text",
		"会话":         "会\u200b话",
		"使用Go语言":     "使\u200b用\u200bGo\u200b语\u200b言",
		"会, 话":       "会, 话",
		"세션을 저장":     "세\u200b션\u200b을 저\u200b장",
		"が\u3099き":   "が\u3099\u200bき",
		"セッションー":     "セ\u200bッ\u200bシ\u200bョ\u200bン\u200bー",
		"12会":        "12\u200b会",
		"Ünïcödé 会议": "Ünïcödé 会\u200b议",
		"话🦀状":        "话\u200b🦀\u200b状",
		"生成🤖\ufe0f完": "生\u200b成\u200b🤖\ufe0f\u200b完",
		"会€话":        "会\u200b€\u200b话",
		"a🦀b":        "a🦀b",
	} {
		if got := segment(in); got != want {
			t.Errorf("segment(%q) = %q, want %q", in, got, want)
		}
		if unsegment(segment(in)) != in {
			t.Errorf("unsegment(segment(%q)) = %q", in, unsegment(segment(in)))
		}
	}
}
