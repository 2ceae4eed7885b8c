package search

import (
	"context"
	"fmt"
	"strings"
	"time"
	"unicode"
)

// DefaultLimit is the number of hits Search returns when
// SearchOptions.Limit is 0.
const DefaultLimit = 50

// Limits of a query: longer ones fail with ErrQueryTooLong, which
// bounds the work one query can ask for.
const (
	MaxQueryBytes = 4 << 10
	MaxQueryTerms = 64
)

// Default marks of a match in Hit.Snippet.
const (
	DefaultMarkStart = "«"
	DefaultMarkEnd   = "»"
)

// SearchOptions configures a search. The zero value (or nil) returns up
// to DefaultLimit hits from every session.
type SearchOptions struct {
	Limit   int    // the most hits returned (0: DefaultLimit)
	Session string // search this session only ("" for all)
	// MarkStart and MarkEnd surround each match in Hit.Snippet (both
	// empty: DefaultMarkStart and DefaultMarkEnd).
	MarkStart, MarkEnd string
}

// Hit is one entry that matches a query.
type Hit struct {
	SessionID string
	EntryID   string
	Role      string    // the message's role (user, assistant, toolResult, ...), compactionSummary or branchSummary
	Prompt    bool      // the match is in a user prompt
	Title     string    // the session's title, as the store lists it
	Cwd       string    // the session's working directory
	Time      time.Time // the message's (or entry's) time
	// Snippet is the part of the entry's text around the best match, on
	// one line (runs of white space made one space), each matched word or
	// phrase between the marks; "…" where text was left out.
	Snippet string
	// Score is the entry's relevance to the query (BM25): higher is
	// better. Scores compare hits of one search only.
	Score float64
}

// Search returns the entries that hold every word and phrase of query,
// the matches in user prompts first, each group best first (BM25).
//
// The query is words and "quoted phrases", all of which must match; a
// word ending in * matches the words it begins (pars* finds parser).
// Matching ignores case and diacritics. A word in Chinese, Japanese or
// Korean matches wherever its characters stand side by side, inside a
// longer run too (会话 finds 保存会话状态). Every other character is taken
// as text, never as operator syntax: any query is valid, but one with no
// letter or digit fails with ErrEmptyQuery, and one over MaxQueryBytes
// or MaxQueryTerms with ErrQueryTooLong.
func (x *Index) Search(ctx context.Context, query string, opts *SearchOptions) ([]Hit, error) {
	var o SearchOptions
	if opts != nil {
		o = *opts
	}
	if o.Limit <= 0 {
		o.Limit = DefaultLimit
	}
	if o.MarkStart == "" && o.MarkEnd == "" {
		o.MarkStart, o.MarkEnd = DefaultMarkStart, DefaultMarkEnd
	}
	if x.isClosed() {
		return nil, ErrClosed
	}
	if len(query) > MaxQueryBytes {
		return nil, fmt.Errorf("%w: %d bytes, over %d", ErrQueryTooLong, len(query), MaxQueryBytes)
	}
	expr, n := matchExpr(query)
	switch {
	case n == 0:
		return nil, fmt.Errorf("%w: %q", ErrEmptyQuery, query)
	case n > MaxQueryTerms:
		return nil, fmt.Errorf("%w: %d words and phrases, over %d", ErrQueryTooLong, n, MaxQueryTerms)
	}
	hits, err := x.searchColumn(ctx, "prompt", expr, o, o.Limit)
	if err != nil {
		return nil, err
	}
	if len(hits) < o.Limit {
		more, err := x.searchColumn(ctx, "body", expr, o, o.Limit-len(hits))
		if err != nil {
			return nil, err
		}
		hits = append(hits, more...)
	}
	return hits, nil
}

// searchColumn returns the best hits in one column. An entry has text in
// one column only, so the two searches never return the same entry.
func (x *Index) searchColumn(ctx context.Context, column, expr string, o SearchOptions, limit int) ([]Hit, error) {
	filter, args := "", []any{o.MarkStart, o.MarkEnd, "{" + column + "} : (" + expr + ")"}
	if o.Session != "" {
		filter = ` AND rowid IN (SELECT rowid FROM docs WHERE session = ?)`
		args = append(args, o.Session)
	}
	args = append(args, limit)
	rows, err := x.db.QueryContext(ctx, `
		SELECT d.session, d.entry, d.role, d.time, s.title, s.cwd, t.snip, t.score
		FROM (SELECT rowid, snippet(text, -1, ?, ?, '…', 24) AS snip, bm25(text) AS score
			FROM text WHERE text MATCH ?`+filter+` ORDER BY rank LIMIT ?) AS t
		JOIN docs AS d ON d.rowid = t.rowid
		JOIN sessions AS s ON s.id = d.session
		ORDER BY t.score`, args...)
	if err != nil {
		return nil, fmt.Errorf("search: %w", err)
	}
	defer rows.Close()
	var hits []Hit
	for rows.Next() {
		var h Hit
		var ms int64
		if err := rows.Scan(&h.SessionID, &h.EntryID, &h.Role, &ms, &h.Title, &h.Cwd, &h.Snippet, &h.Score); err != nil {
			return nil, fmt.Errorf("search: %w", err)
		}
		h.Time = time.UnixMilli(ms).UTC()
		h.Prompt = column == "prompt"
		h.Snippet = strings.Join(strings.Fields(unsegment(h.Snippet)), " ")
		h.Score = -h.Score // bm25() is lower for better matches
		hits = append(hits, h)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("search: %w", err)
	}
	return hits, nil
}

// matchExpr turns a user's query into an FTS5 expression that cannot be
// a syntax error: each word or phrase becomes an FTS5 string (quotes
// doubled), optionally followed by the prefix operator, and the strings
// are joined by spaces (AND). Terms without a letter or digit, which
// the tokenizer would make nothing of, are left out; n is the number of
// terms kept.
func matchExpr(query string) (expr string, n int) {
	var out []string
	for _, t := range splitQuery(query) {
		if !hasToken(t.text) {
			continue
		}
		// A CJK word becomes the phrase of its characters, as the
		// text was segmented (segment.go).
		s := `"` + strings.ReplaceAll(segment(t.text), `"`, `""`) + `"`
		if t.prefix {
			s += " *"
		}
		out = append(out, s)
	}
	return strings.Join(out, " "), len(out)
}

type term struct {
	text   string
	prefix bool
}

// splitQuery splits a query into words and "quoted phrases" (an
// unclosed quote runs to the end). NUL bytes and invalid UTF-8 are
// dropped first.
func splitQuery(q string) []term {
	q = strings.ToValidUTF8(strings.ReplaceAll(q, "\x00", ""), "")
	var terms []term
	for {
		q = strings.TrimLeftFunc(q, unicode.IsSpace)
		if q == "" {
			return terms
		}
		if rest, ok := strings.CutPrefix(q, `"`); ok {
			phrase, after, closed := strings.Cut(rest, `"`)
			t := term{text: phrase}
			if closed && strings.HasPrefix(after, "*") {
				t.prefix = true
				after = strings.TrimLeft(after, "*")
			}
			terms = append(terms, t)
			q = after
			continue
		}
		end := strings.IndexFunc(q, func(r rune) bool { return r == '"' || unicode.IsSpace(r) })
		if end < 0 {
			end = len(q)
		}
		word := q[:end]
		q = q[end:]
		stem := strings.TrimRight(word, "*")
		terms = append(terms, term{text: stem, prefix: stem != word})
	}
}

// hasToken reports whether s holds a character the unicode61 tokenizer
// keeps in a token: a letter, a number or a private-use character.
func hasToken(s string) bool {
	return strings.IndexFunc(s, func(r rune) bool {
		return unicode.IsLetter(r) || unicode.IsNumber(r) || unicode.Is(unicode.Co, r)
	}) >= 0
}
