package main

import (
	"context"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	session "github.com/agentsession/session"
	"github.com/mattn/go-runewidth"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// columnStarts returns the display column at which each field of a
// table line starts (fields are separated by two spaces or more).
func columnStarts(line string) []int {
	var starts []int
	for _, m := range regexp.MustCompile(`\S+( \S+)*`).FindAllStringIndex(line, -1) {
		starts = append(starts, runewidth.StringWidth(line[:m[0]]))
	}
	return starts
}

// TestLsColumnsByDisplayWidth: wide (CJK) ids and titles keep ls's
// columns aligned as a terminal shows them, and a long title is cut to
// the column with an ellipsis, by display width, never inside a
// character or a grapheme (an emoji of several code points, a letter
// and its accent).
func TestLsColumnsByDisplayWidth(t *testing.T) {
	ctx := context.Background()
	root := filepath.Join(t.TempDir(), "sessions")
	store, err := session.OpenFileStore(root, nil)
	require.NoError(t, err)
	family := "👩‍👩‍👧"     // one grapheme of five code points
	accented := "e\u0301" // é as two code points
	long := strings.Repeat("長い"+family+accented+"タイトル ", 20)
	for _, s := range []struct{ id, title string }{
		{"会话一", "修复解析器的测试"},
		{"s-ascii", "plain"},
		{"s-long", long},
		{"ид-2", "кириллица"},
	} {
		sess, err := session.Create(ctx, store, &session.CreateOptions{ID: s.id, Cwd: "/w", Title: s.title})
		require.NoError(t, err)
		_, err = sess.Append(ctx, session.UserText("hi"))
		require.NoError(t, err)
		require.NoError(t, sess.Close())
	}
	require.NoError(t, store.Close())

	out, errOut, code := runCLI("ls", "--all", "--root", root)
	require.Equal(t, exitOK, code, errOut)
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	require.Len(t, lines, 5, out)
	head := columnStarts(lines[0])
	require.Len(t, head, 6, lines[0])
	for _, l := range lines[1:] {
		starts := columnStarts(l)
		require.GreaterOrEqual(t, len(starts), 6, l)
		// The date and time are one field with one space; the title may
		// hold spaces: the first five columns and the title's start.
		assert.Equal(t, head[:5], starts[:5], "columns line up: %q", l)
	}
	var cut string
	for _, l := range lines[1:] {
		if strings.Contains(l, " s-long ") {
			cut = l[strings.Index(l, "長"):]
		}
	}
	require.NotEmpty(t, cut, out)
	require.True(t, strings.HasSuffix(cut, "…"), "cut with an ellipsis: %q", cut)
	assert.LessOrEqual(t, runewidth.StringWidth(cut), lsTitleWidth)
	assert.Greater(t, runewidth.StringWidth(cut), lsTitleWidth-3, "cut to the column, not short of it")
	kept := strings.TrimSuffix(cut, "…")
	require.True(t, utf8.ValidString(kept))
	require.True(t, strings.HasPrefix(long, kept), "a prefix of the title: %q", kept)
	next, _ := utf8.DecodeRuneInString(long[len(kept):])
	last, _ := utf8.DecodeLastRuneInString(kept)
	assert.False(t, unicode.Is(unicode.Mn, next) || next == '\u200d' || last == '\u200d',
		"not cut inside a grapheme: ...%q | %q...", kept[max(0, len(kept)-12):], long[len(kept):len(kept)+12])

	// --json keeps the whole title.
	out, _, _ = runCLI("ls", "--json", "--all", "--root", root)
	assert.Contains(t, out, `"title":"`+long+`"`)
}

// TestTruncateWidth cuts at every width without splitting a grapheme.
func TestTruncateWidth(t *testing.T) {
	s := "ab" + "👩‍👩‍👧" + "e\u0301" + "漢字"
	for w := 0; w <= runewidth.StringWidth(s)+1; w++ {
		got := truncateWidth(s, w)
		assert.LessOrEqual(t, runewidth.StringWidth(got), max(w, 0), "width %d: %q", w, got)
		kept := strings.TrimSuffix(got, "…")
		assert.True(t, strings.HasPrefix(s, kept), "width %d: %q", w, got)
		assert.NotContains(t, []string{"ab\U0001F469", "ab👩\u200d", "ab👩‍👩‍👧e"}, kept, "width %d: cut inside a grapheme", w)
	}
	assert.Equal(t, s, truncateWidth(s, runewidth.StringWidth(s)))
}

// TestLsTitleFitsTheTerminal: on a terminal whose width is known, the
// title takes what the line leaves of it (not less than 20 columns);
// every line fits.
func TestLsTitleFitsTheTerminal(t *testing.T) {
	ctx := context.Background()
	root := filepath.Join(t.TempDir(), "sessions")
	store, err := session.OpenFileStore(root, nil)
	require.NoError(t, err)
	long := strings.Repeat("漢字とかな ", 40)
	for _, id := range []string{"s-long", "s-short"} {
		title := long
		if id == "s-short" {
			title = "short"
		}
		sess, err := session.Create(ctx, store, &session.CreateOptions{ID: id, Cwd: "/w", Title: title})
		require.NoError(t, err)
		require.NoError(t, sess.Close())
	}
	require.NoError(t, store.Close())
	for _, cols := range []int{100, 150, 200} {
		out, errOut, code := runTTY(terminal{outTTY: true, cols: cols, rows: 1000}, "ls", "--no-pager", "--all", "--root", root)
		require.Equal(t, exitOK, code, errOut)
		lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
		require.Len(t, lines, 3, out)
		for _, l := range lines {
			assert.LessOrEqual(t, runewidth.StringWidth(l), cols, "%d columns: %q", cols, l)
		}
		assert.Contains(t, out, "…")
		for _, l := range lines {
			if strings.Contains(l, " s-long ") {
				assert.GreaterOrEqual(t, runewidth.StringWidth(l), cols-2, "the long title fills the line: %q", l)
			}
		}
	}
	// Too narrow a terminal: the title keeps 20 columns.
	out, _, _ := runTTY(terminal{outTTY: true, cols: 40, rows: 1000}, "ls", "--no-pager", "--all", "--root", root)
	for _, l := range strings.Split(out, "\n") {
		if i := strings.Index(l, "漢"); i >= 0 {
			assert.Equal(t, 20, runewidth.StringWidth(l[i:]), l)
		}
	}
}
