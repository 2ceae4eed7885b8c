package search_test

import (
	"database/sql"
	"slices"
	"strings"
	"testing"

	"github.com/agentsession/session/search"
)

// cjkTurns are prompts in Chinese, Japanese (kana and kanji), Korean and
// a mix with Latin, each in a session of its own.
var cjkTurns = map[string]string{
	"zh":    "请保存会话状态以便明天恢复",
	"ja":    "セッションの状態を保存しますか",
	"ko":    "세션을 저장했습니다",
	"mixed": "我们使用Go语言编写parser模块",
}

func cjkFixture(t *testing.T) *fixture {
	f := newFixture(t)
	for title, prompt := range cjkTurns {
		f.session(title, [2]string{prompt, "ok"})
	}
	f.update()
	return f
}

// titles returns the titles of the sessions of hits.
func titles(hits []search.Hit) []string {
	var out []string
	for _, h := range hits {
		out = append(out, h.Title)
	}
	return out
}

// TestSearchCJKWordInsideRun: a CJK word is found where it stands inside
// a longer run of CJK text, without a *, and only there.
func TestSearchCJKWordInsideRun(t *testing.T) {
	f := cjkFixture(t)
	for _, c := range []struct {
		query, want string
	}{
		{"会话", "zh"}, {"状态", "zh"}, {"会话状态", "zh"}, {"恢复", "zh"}, {"会", "zh"}, {"复", "zh"},
		{`"保存会话"`, "zh"}, {"会话 明天", "zh"},
		{"状態", "ja"}, {"セッション", "ja"}, {"保存", "ja zh"}, {"します", "ja"},
		{"세션", "ko"}, {"저장", "ko"},
		{"语言", "mixed"}, {"Go", "mixed"}, {"parser", "mixed"}, {"go语言", "mixed"}, {"模块", "mixed"},
		{"会话*", "zh"}, {"pars*", "mixed"},
	} {
		got := titles(f.search(c.query, nil))
		want := strings.Fields(c.want)
		if strings.Join(slices.Sorted(slices.Values(got)), " ") != strings.Join(want, " ") {
			t.Errorf("search %q: sessions %q, want %q", c.query, got, want)
		}
	}
	// Precision: the characters must stand side by side, in order.
	for _, q := range []string{"会议", "话会", "状会", "세저", "保存会话恢复", "言语"} {
		if hits := f.search(q, nil); len(hits) != 0 {
			t.Errorf("search %q: %d hits (%q), want none", q, len(hits), titles(hits))
		}
	}
}

// TestSearchCJKSnippet: the snippet shows the text as written, the
// whole word between the marks.
func TestSearchCJKSnippet(t *testing.T) {
	f := cjkFixture(t)
	hits := f.search("会话", nil)
	if len(hits) != 1 {
		t.Fatalf("%d hits", len(hits))
	}
	if want := "请保存«会话»状态以便明天恢复"; hits[0].Snippet != want {
		t.Errorf("snippet %q, want %q", hits[0].Snippet, want)
	}
	hits = f.search("Go", nil)
	if len(hits) != 1 || hits[0].Snippet != "我们使用«Go»语言编写parser模块" {
		t.Errorf("hits %+v", hits)
	}
}

// TestSearchCJKIndexOfOldVersionRebuilt: an index an older release
// built (CJK runs indexed whole, PRAGMA user_version 1) is rebuilt when
// opened, and then finds what it missed; it never answers from tokens
// made the old way.
func TestSearchCJKIndexOfOldVersionRebuilt(t *testing.T) {
	f := cjkFixture(t)
	f.idx.Close()
	// Make the file what version 1 wrote: the text indexed unsegmented,
	// through a view of the plain text.
	db, err := sql.Open("sqlite", f.path)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		`INSERT INTO text (text) VALUES ('delete-all')`,
		`DROP VIEW text_content`,
		`CREATE VIEW text_content (rowid, prompt, body) AS
			SELECT rowid, agentsession_search_inflate(prompt), agentsession_search_inflate(body) FROM docs`,
		`INSERT INTO text (rowid, prompt, body) SELECT rowid, prompt, body FROM text_content`,
		`PRAGMA user_version = 1`,
	} {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	var n int
	if err := db.QueryRow(`SELECT count(*) FROM text WHERE text MATCH '"请保存会话状态以便明天恢复"'`).Scan(&n); err != nil || n != 1 {
		t.Fatalf("the old-style index holds the run whole: %d, %v", n, err)
	}
	db.Close()

	f.idx = f.open()
	if hits := f.search("会话", nil); len(hits) != 0 {
		t.Fatalf("before the update, the rebuilt index is empty, yet: %+v", hits)
	}
	if st := f.update(); st.Indexed != len(cjkTurns) {
		t.Fatalf("update after the rebuild: %+v, want all %d sessions indexed", st, len(cjkTurns))
	}
	if got := titles(f.search("会话", nil)); len(got) != 1 || got[0] != "zh" {
		t.Fatalf("search 会话 after the rebuild: %q", got)
	}
	if hits := f.search("세션", nil); len(hits) != 1 {
		t.Fatalf("세션: %+v", hits)
	}
}
