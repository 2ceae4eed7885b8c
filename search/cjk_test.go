package search_test

import (
	"database/sql"
	"fmt"
	"math/rand/v2"
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

// TestSearchCJKBesideSymbols: a CJK word is found where it touches a
// character that is neither a letter nor a digit to Go but that the
// tokenizer keeps in a token (emoji of Unicode 8 and later), as it is
// beside older emoji and punctuation; in the prompt and in the reply.
func TestSearchCJKBesideSymbols(t *testing.T) {
	f := newFixture(t)
	texts := map[string]string{
		"robot": "已生成🤖完成",
		"think": "让我想想🤔这个问题",
		"crab":  "会话🦀状态",
		"party": "好🥳派对",
		"old":   "开始🎉结束😀通过✅喜欢❤再见",
		"sym":   "价格€100元⁂注释",
	}
	for title, text := range texts {
		f.session(title, [2]string{text, "ok"}, [2]string{"next", text})
	}
	f.update()
	for _, c := range []struct{ query, want string }{
		{"生成", "robot"}, {"完成", "robot"}, {"已生成", "robot"},
		{"想想", "think"}, {"这个", "think"}, {"问题", "think"},
		{"会话", "crab"}, {"状态", "crab"},
		{"派对", "party"}, {"好", "party"},
		{"开始", "old"}, {"结束", "old"}, {"通过", "old"}, {"喜欢", "old"}, {"再见", "old"},
		{"价格", "sym"}, {"元", "sym"}, {"注释", "sym"},
		{"生成🤖完成", "robot"},
	} {
		hits := f.search(c.query, nil)
		got := titles(hits)
		slices.Sort(got)
		got = slices.Compact(got)
		if strings.Join(got, " ") != c.want {
			t.Errorf("search %q: sessions %q, want %q", c.query, got, c.want)
		}
		for _, h := range hits {
			if strings.ContainsRune(h.Snippet, '\u200b') {
				t.Errorf("search %q: snippet %q holds a segment mark", c.query, h.Snippet)
			}
		}
	}
	for _, q := range []string{"成完", "话状", "个这"} {
		if hits := f.search(q, nil); len(hits) != 0 {
			t.Errorf("search %q: %q, want none", q, titles(hits))
		}
	}
}

// TestSearchCJKBigramsProperty: in random text mixing CJK, emoji (of
// every Unicode version), Latin, digits, punctuation and spaces, every
// pair of CJK characters side by side is found by a query for it.
func TestSearchCJKBigramsProperty(t *testing.T) {
	rng := rand.New(rand.NewPCG(39, 2026))
	cjk := []rune("会话状态保存生成完成想这个问题セッションの状態세션을저장语言模块")
	others := []rune("aZé9 0,.!?-_()[]€⁂…、。「」🤖🤔🦀🥳🎉😀✅❤🧠🫠🪄\u2764\ufe0f#*")
	randRune := func() rune {
		switch rng.IntN(10) {
		case 0:
			return rune(0x1F900 + rng.IntN(0x100)) // Supplemental Symbols and Pictographs
		case 1, 2, 3:
			return others[rng.IntN(len(others))]
		default:
			return cjk[rng.IntN(len(cjk))]
		}
	}
	f := newFixture(t)
	texts := make([]string, 12)
	for i := range texts {
		var b strings.Builder
		for range 10 + rng.IntN(30) {
			b.WriteRune(randRune())
		}
		texts[i] = b.String()
		f.session(fmt.Sprint("s", i), [2]string{texts[i], "ok"})
	}
	f.update()
	isCJK := func(r rune) bool { return slices.Contains(cjk, r) }
	for i, text := range texts {
		rs := []rune(text)
		for j := 0; j+1 < len(rs); j++ {
			if !isCJK(rs[j]) || !isCJK(rs[j+1]) {
				continue
			}
			q := string(rs[j : j+2])
			if got := titles(f.search(q, &search.SearchOptions{Limit: 1000})); !slices.Contains(got, fmt.Sprint("s", i)) {
				t.Errorf("search %q: sessions %q, want s%d, whose text is %q", q, got, i, text)
			}
		}
	}
}

// TestSearchCJKIndexOfVersion2Rebuilt: an index segmented by the rule of
// version 2 (marks only between letters and digits, so 成🤖完 was one
// token) is rebuilt when opened: its tokens are not those the deletes of
// the current rule would name, and it misses the words beside emoji.
func TestSearchCJKIndexOfVersion2Rebuilt(t *testing.T) {
	f := newFixture(t)
	f.session("robot", [2]string{"已生成🤖完成", "ok"})
	f.update()
	f.idx.Close()
	db, err := sql.Open("sqlite", f.path)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		`INSERT INTO text (text) VALUES ('delete-all')`,
		`INSERT INTO text (rowid, prompt, body)
			SELECT rowid, replace(replace(agentsession_search_indexed(prompt), '🤖` + "\u200b" + `', '🤖'), '` + "\u200b" + `🤖', '🤖'),
				agentsession_search_indexed(body) FROM docs`,
		`PRAGMA user_version = 2`,
	} {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	var n int
	if err := db.QueryRow(`SELECT count(*) FROM text WHERE text MATCH '"成🤖完"'`).Scan(&n); err != nil || n != 1 {
		t.Fatalf("the version 2 index holds 成🤖完 as one token: %d, %v", n, err)
	}
	db.Close()

	f.idx = f.open()
	if st := f.update(); st.Indexed != 1 {
		t.Fatalf("update after the rebuild: %+v, want the session indexed again", st)
	}
	for _, q := range []string{"生成", "完成"} {
		if got := titles(f.search(q, nil)); len(got) != 1 || got[0] != "robot" {
			t.Errorf("search %s after the rebuild: %q", q, got)
		}
	}
}
