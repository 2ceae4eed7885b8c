package search_test

import (
	"database/sql"
	"os"
	"path/filepath"
	"strings"
	"testing"

	session "github.com/agentsession/session"
	"github.com/agentsession/session/search"
	"github.com/stretchr/testify/require"
	_ "modernc.org/sqlite"
)

// The driver is built with FTS5, and the index uses it.
func TestFTS5CompiledIn(t *testing.T) {
	f := newFixture(t)
	db, err := sql.Open("sqlite", f.path)
	require.NoError(t, err)
	defer db.Close()
	var used int
	require.NoError(t, db.QueryRow(`SELECT sqlite_compileoption_used('ENABLE_FTS5')`).Scan(&used))
	require.Equal(t, 1, used)
	var sqlText string
	require.NoError(t, db.QueryRow(`SELECT sql FROM sqlite_schema WHERE name = 'text'`).Scan(&sqlText))
	require.Contains(t, sqlText, "fts5")
}

func TestSearchPromptsFirst(t *testing.T) {
	f := newFixture(t)
	a := f.session("parser work", [2]string{"fix the flaky parser test", "I made the tokenizer deterministic."})
	b := f.session("other", [2]string{"hello there", "The parser test is flaky because of map order; the parser is fine."})
	f.update()

	hits := f.search("flaky parser", nil)
	require.Len(t, hits, 2)
	require.Equal(t, a.ID(), hits[0].SessionID)
	require.True(t, hits[0].Prompt)
	require.Equal(t, session.RoleUser, hits[0].Role)
	require.Equal(t, "parser work", hits[0].Title)
	require.Equal(t, "/home/dev/parser work", hits[0].Cwd)
	require.Equal(t, "fix the «flaky» «parser» test", hits[0].Snippet)
	require.False(t, hits[0].Time.IsZero())
	require.Equal(t, b.ID(), hits[1].SessionID)
	require.False(t, hits[1].Prompt)
	require.Equal(t, session.RoleAssistant, hits[1].Role)

	// The entry id names the message that matched.
	log, err := f.store.Load(f.ctx, a.ID())
	require.NoError(t, err)
	found := false
	for _, e := range log.Entries {
		if e.ID() == hits[0].EntryID {
			m, err := e.Message()
			require.NoError(t, err)
			require.Equal(t, "fix the flaky parser test", m.Text())
			found = true
		}
	}
	require.True(t, found, "hit's entry %s is in the session", hits[0].EntryID)
}

func TestSearchRanksWithinGroup(t *testing.T) {
	f := newFixture(t)
	weak := f.session("weak", [2]string{"a long prompt that mentions widget once among many many other words of no interest at all here", "ok"})
	strong := f.session("strong", [2]string{"widget widget widget", "ok"})
	f.update()
	hits := f.search("widget", nil)
	require.Len(t, hits, 2)
	require.Equal(t, strong.ID(), hits[0].SessionID)
	require.Equal(t, weak.ID(), hits[1].SessionID)
	require.Greater(t, hits[0].Score, hits[1].Score)
}

// Every kind of text an entry can carry is found, with its role.
func TestSearchIndexesAllText(t *testing.T) {
	f := newFixture(t)
	s := f.session("kinds", [2]string{"start", "ok"})
	ctx := f.ctx
	require.NoError(t, s.SaveTurn(ctx, []*session.Message{
		session.UserText("run it"),
		session.Assistant(session.Thinking("pondering quasarthought", "sig"),
			session.ToolCall("c1", "grepper", mustJSON(map[string]any{"pattern": "zephyrpattern", "paths": []string{"nebuladir"}}))),
		session.ToolResult("c1", "grepper", "found marmosetresult in file"),
		session.BashExecution("echo wombatcommand", "wombatoutput", 0),
	}, nil))
	_, err := s.AppendCustomMessage(ctx, session.CustomMessage("note", "an ocelotcustom note", true))
	require.NoError(t, err)
	_, err = s.AppendCompaction(ctx, session.Compaction{Summary: "we talked of pangolinsummary", FirstKeptEntryID: s.LeafID(), TokensBefore: 10})
	require.NoError(t, err)
	f.update()

	for _, c := range []struct{ query, role string }{
		{"quasarthought", session.RoleAssistant},
		{"grepper zephyrpattern", session.RoleAssistant},
		{"nebuladir", session.RoleAssistant},
		{"marmosetresult", session.RoleToolResult},
		{"wombatcommand wombatoutput", session.RoleBashExecution},
		{"ocelotcustom", session.RoleCustom},
		{"pangolinsummary", session.RoleCompactionSummary},
		{"run", session.RoleUser},
	} {
		t.Run(c.query, func(t *testing.T) {
			hits := f.search(c.query, nil)
			require.Len(t, hits, 1)
			require.Equal(t, c.role, hits[0].Role)
			require.Equal(t, c.role == session.RoleUser, hits[0].Prompt)
		})
	}
	// Keys of tool arguments are not text.
	require.Empty(t, f.search("pattern", nil))
}

func TestSearchBranchSummary(t *testing.T) {
	f := newFixture(t)
	s := f.session("branches", [2]string{"first", "one"})
	first := s.LeafID()
	f.turn(s, "second", "two")
	_, err := s.BranchWithSummary(f.ctx, first, "abandoned the axolotlbranch idea", nil)
	require.NoError(t, err)
	f.turn(s, "third", "three")
	f.update()
	hits := f.search("axolotlbranch", nil)
	require.Len(t, hits, 1)
	require.Equal(t, session.RoleBranchSummary, hits[0].Role)
	// Entries off the current path are searched too.
	require.Len(t, f.search("second", nil), 1)
}

func TestQuerySyntax(t *testing.T) {
	f := newFixture(t)
	f.session("q", [2]string{"The quick brown fox jumps over the lazy dog", "Café crème at the naïve bistro"},
		[2]string{"parsers and parsing", `the "quoted" word and x:y pairs`})
	f.update()
	for _, c := range []struct {
		query string
		hits  int
	}{
		{"quick fox", 1},
		{"fox quick", 1},
		{`"quick brown"`, 1},
		{`"brown quick"`, 0},
		{`"quick brown" lazy`, 1},
		{"QUICK", 1},
		{"cafe creme", 1},
		{"naive", 1},
		{"pars*", 1},
		{"parse", 0},
		{`"pars"*`, 1},
		{"quick missing", 0},
		{`"quoted`, 1},
		{"x:y", 1},
		{"fox OR zebra", 0}, // OR is a word, not an operator
	} {
		t.Run(c.query, func(t *testing.T) {
			require.Len(t, f.search(c.query, nil), c.hits)
		})
	}
}

// No query is a syntax error: each either searches or is empty.
func TestHostileQueries(t *testing.T) {
	f := newFixture(t)
	f.session("hostile", [2]string{"parser AND OR NOT words, col: x (parens) 日本語のテスト Ünïcödé 🦀 crab", "ok"})
	f.update()
	for _, q := range hostileQueries {
		_, err := f.idx.Search(f.ctx, q, nil)
		require.False(t, nonFTS(err), "query %q: %v", q, err)
	}
	require.Len(t, f.search("AND OR NOT", nil), 1)
	require.Len(t, f.search("unicode", nil), 1)
	require.Len(t, f.search("日本語のテスト", nil), 1)
	require.Len(t, f.search("(parens)", nil), 1)
	require.Len(t, f.search("col:", nil), 1)
}

func TestEmptyQuery(t *testing.T) {
	f := newFixture(t)
	for _, q := range []string{"", "   ", `"`, `*`, `""`, "(", "-- ;"} {
		_, err := f.idx.Search(f.ctx, q, nil)
		require.ErrorIs(t, err, search.ErrEmptyQuery, "query %q", q)
	}
}

func TestQueryTooLong(t *testing.T) {
	f := newFixture(t)
	f.session("long", [2]string{"a b c", "ok"})
	f.update()
	ok := strings.Repeat("a ", search.MaxQueryTerms)
	require.Len(t, f.search(ok, nil), 1)
	for _, q := range []string{
		ok + "b",
		strings.Repeat(`"a b" `, search.MaxQueryTerms+1),
		`"` + strings.Repeat("a ", search.MaxQueryBytes/2) + `"`, // one phrase, too many bytes
	} {
		_, err := f.idx.Search(f.ctx, q, nil)
		require.ErrorIs(t, err, search.ErrQueryTooLong)
	}
}

func TestSearchOptions(t *testing.T) {
	f := newFixture(t)
	var ids []string
	for range 5 {
		ids = append(ids, f.session("s", [2]string{"gadget here", "gadget there"}).ID())
	}
	f.update()
	require.Len(t, f.search("gadget", nil), 10)
	require.Len(t, f.search("gadget", &search.SearchOptions{Limit: 3}), 3)
	// The limit is filled with prompts first.
	hits := f.search("gadget", &search.SearchOptions{Limit: 7})
	require.Len(t, hits, 7)
	for i, h := range hits {
		require.Equal(t, i < 5, h.Prompt, "hit %d", i)
	}
	hits = f.search("gadget", &search.SearchOptions{Session: ids[2], MarkStart: "<b>", MarkEnd: "</b>"})
	require.Len(t, hits, 2)
	for _, h := range hits {
		require.Equal(t, ids[2], h.SessionID)
		require.Contains(t, h.Snippet, "<b>gadget</b>")
	}
}

func TestMaxEntryText(t *testing.T) {
	dir := t.TempDir()
	store, err := session.OpenFileStore(filepath.Join(dir, "s"), nil)
	require.NoError(t, err)
	defer store.Close()
	s, err := session.Create(t.Context(), store, nil)
	require.NoError(t, err)
	_, err = s.Append(t.Context(), session.AssistantText("early "+strings.Repeat("filler ", 200)+"late"))
	require.NoError(t, err)
	idx, err := search.Open(filepath.Join(dir, "i.sqlite"), &search.Options{MaxEntryText: 100})
	require.NoError(t, err)
	defer idx.Close()
	_, err = idx.Update(t.Context(), store)
	require.NoError(t, err)
	hits, err := idx.Search(t.Context(), "early", nil)
	require.NoError(t, err)
	require.Len(t, hits, 1)
	hits, err = idx.Search(t.Context(), "late", nil)
	require.NoError(t, err)
	require.Empty(t, hits)
}

func TestOpenNotIndex(t *testing.T) {
	dir := t.TempDir()
	text := filepath.Join(dir, "notes.txt")
	require.NoError(t, os.WriteFile(text, []byte(strings.Repeat("not a database\n", 100)), 0o644))
	_, err := search.Open(text, nil)
	require.ErrorIs(t, err, search.ErrNotIndex)

	other := filepath.Join(dir, "other.sqlite")
	db, err := sql.Open("sqlite", other)
	require.NoError(t, err)
	_, err = db.Exec(`CREATE TABLE mine (x TEXT); INSERT INTO mine VALUES ('keep')`)
	require.NoError(t, err)
	require.NoError(t, db.Close())
	before, err := os.ReadFile(other)
	require.NoError(t, err)
	_, err = search.Open(other, nil)
	require.ErrorIs(t, err, search.ErrNotIndex)
	after, err := os.ReadFile(other)
	require.NoError(t, err)
	require.Equal(t, before, after, "Open changed a file that is not its own")
}

// An index of another schema version is a cache: Open rebuilds it and
// the next Update fills it again.
func TestOpenOldSchemaRebuilds(t *testing.T) {
	f := newFixture(t)
	f.session("old", [2]string{"ancient words", "ok"})
	f.update()
	require.NoError(t, f.idx.Close())
	db, err := sql.Open("sqlite", f.path)
	require.NoError(t, err)
	_, err = db.Exec(`PRAGMA user_version = 0`)
	require.NoError(t, err)
	require.NoError(t, db.Close())

	f.idx = f.open()
	require.Empty(t, f.search("ancient", nil))
	st := f.update()
	require.Equal(t, 1, st.Indexed)
	require.Len(t, f.search("ancient", nil), 1)
}

func TestClosed(t *testing.T) {
	f := newFixture(t)
	require.NoError(t, f.idx.Close())
	require.NoError(t, f.idx.Close())
	_, err := f.idx.Search(f.ctx, "x", nil)
	require.ErrorIs(t, err, search.ErrClosed)
	_, err = f.idx.Update(f.ctx, f.store)
	require.ErrorIs(t, err, search.ErrClosed)
}

func TestDefaultPath(t *testing.T) {
	cache := t.TempDir()
	t.Setenv("XDG_CACHE_HOME", cache)
	t.Setenv("HOME", t.TempDir())
	root := t.TempDir()
	p, err := search.DefaultPath(root)
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(p, filepath.Join(cache, "agentsession", "search")+string(filepath.Separator)), p)
	same, err := search.DefaultPath(root + "/./")
	require.NoError(t, err)
	require.Equal(t, p, same)
	other, err := search.DefaultPath(filepath.Join(root, "x"))
	require.NoError(t, err)
	require.NotEqual(t, p, other)
	_, err = search.Open(p, nil) // creates the directories
	require.NoError(t, err)
	require.FileExists(t, p)
}
