package search_test

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"testing"

	session "github.com/agentsession/session"
	"github.com/agentsession/session/search"
)

// fixture is a FileStore in a temporary directory and an index beside it.
type fixture struct {
	t     testing.TB
	ctx   context.Context
	root  string
	store *session.FileStore
	path  string
	idx   *search.Index
}

func newFixture(t testing.TB) *fixture {
	t.Helper()
	dir := t.TempDir()
	f := &fixture{t: t, ctx: context.Background(), root: filepath.Join(dir, "sessions"), path: filepath.Join(dir, "index", "search.sqlite")}
	var err error
	if f.store, err = session.OpenFileStore(f.root, &session.FileStoreOptions{Sync: session.SyncNever}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.store.Close() })
	f.idx = f.open()
	return f
}

// open opens another handle on the fixture's index.
func (f *fixture) open() *search.Index {
	f.t.Helper()
	idx, err := search.Open(f.path, nil)
	if err != nil {
		f.t.Fatal(err)
	}
	f.t.Cleanup(func() { idx.Close() })
	return idx
}

// session creates a session whose turns are each a user prompt and an
// assistant reply.
func (f *fixture) session(title string, turns ...[2]string) *session.Session {
	f.t.Helper()
	s, err := session.Create(f.ctx, f.store, &session.CreateOptions{Cwd: "/home/dev/" + title})
	if err != nil {
		f.t.Fatal(err)
	}
	if title != "" {
		if err := s.SetTitle(f.ctx, title); err != nil {
			f.t.Fatal(err)
		}
	}
	for _, turn := range turns {
		f.turn(s, turn[0], turn[1])
	}
	return s
}

func (f *fixture) turn(s *session.Session, prompt, reply string) {
	f.t.Helper()
	msgs := []*session.Message{session.UserText(prompt), session.AssistantText(reply)}
	if err := s.SaveTurn(f.ctx, msgs, nil); err != nil {
		f.t.Fatal(err)
	}
}

func (f *fixture) update() search.UpdateStats {
	f.t.Helper()
	st, err := f.idx.Update(f.ctx, f.store)
	if err != nil {
		f.t.Fatal(err)
	}
	return st
}

func (f *fixture) search(q string, opts *search.SearchOptions) []search.Hit {
	f.t.Helper()
	hits, err := f.idx.Search(f.ctx, q, opts)
	if err != nil {
		f.t.Fatalf("search %q: %v", q, err)
	}
	return hits
}

// hostileQueries are queries that are FTS5 syntax, or break it, when
// passed through as they are.
var hostileQueries = []string{
	`"`, `""`, `"""`, `*`, `**`, `"*"`, `AND`, `OR`, `NOT`, `AND OR NOT`, `NEAR`, `NEAR(a b, 2)`,
	`col:`, `prompt:`, `body: parser`, `{prompt}: x`, `{body prompt}:`, `-parser`, `+`, `^parser`,
	`(`, `)`, `(parser`, `parser)`, `((a) OR (b))`, `a AND`, `OR b`, `a NOT`, `'`, `''`, `a'b`,
	`\`, `\"`, `%`, `_`, `;DROP TABLE text;--`, `parser*`, `*parser`, `par*ser`, `"parser"*`,
	`"unclosed phrase`, "tab\tand\nnewline", "nul\x00byte", "\xff\xfe invalid utf8",
	`日本語のテスト`, `Ünïcödé`, `🦀 crab`, "\u200b", "e\u0301", `a.b.c`, `x:y:z`, `:`, `,`, `.`,
	`rowid`, `rank`, `MATCH`, `text`,
}

// nonFTS reports whether err is something other than a query refused
// for what it is (empty, or too long).
func nonFTS(err error) bool {
	return err != nil && !errors.Is(err, search.ErrEmptyQuery) && !errors.Is(err, search.ErrQueryTooLong)
}

func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}
