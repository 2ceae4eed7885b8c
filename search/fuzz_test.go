package search_test

import (
	"testing"
	"unicode/utf8"
)

// FuzzQuery: no query is an FTS5 syntax error or a panic; each either
// searches or fails with ErrEmptyQuery.
func FuzzQuery(f *testing.F) {
	for _, q := range hostileQueries {
		f.Add(q)
	}
	f.Add(`"quick brown" fox pars*`)
	fx := newFixture(f)
	fx.session("fuzz", [2]string{`The quick brown fox, "quoted" AND (parens) col:value 日本語 café`, "reply * NEAR"})
	fx.update()
	f.Fuzz(func(t *testing.T, q string) {
		hits, err := fx.idx.Search(fx.ctx, q, nil)
		if nonFTS(err) {
			t.Fatalf("query %q: %v", q, err)
		}
		for _, h := range hits {
			if !utf8.ValidString(h.Snippet) {
				t.Fatalf("query %q: snippet %q is not UTF-8", q, h.Snippet)
			}
		}
	})
}
