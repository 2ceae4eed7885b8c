package main

import (
	"errors"
	"flag"
	"fmt"
	"strings"
	"time"

	session "github.com/agentsession/session"
	"github.com/agentsession/session/search"
)

// search: full-text search across the sessions of a store, through the
// index of package search.

var cmdSearch = &command{
	name:    "search",
	summary: "find sessions and entries by text, user prompts first",
	usage:   "[--index FILE] [--limit N] [--json] QUERY...",
	common:  withJSON | withRoot | withPager,
	nargs:   [2]int{1, -1},
	setup: func(fs *flag.FlagSet, c *call) func([]string) int {
		index := fs.String("index", "", "keep the index in `FILE` (default: under the user's cache directory, one file per root)")
		limit := fs.Int("limit", 20, "print at most `N` matching entries")
		return func(args []string) int {
			if *limit < 1 {
				return c.usageError("--limit must be 1 or more")
			}
			return c.search(strings.Join(args, " "), *index, *limit)
		}
	},
}

// searchJSON is what search --json prints of a hit.
type searchJSON struct {
	SessionID string    `json:"sessionId"`
	Title     string    `json:"title"`
	Cwd       string    `json:"cwd"`
	EntryID   string    `json:"entryId"`
	Role      string    `json:"role"`
	Prompt    bool      `json:"prompt"`
	Time      time.Time `json:"time"`
	Snippet   string    `json:"snippet"`
	Score     float64   `json:"score"`
}

func (c *call) search(query, indexPath string, limit int) int {
	if err := c.checkRoot(); err != nil {
		return c.fail("%v", err)
	}
	if indexPath == "" {
		var err error
		if indexPath, err = search.DefaultPath(c.root); err != nil {
			return c.fail("%v; name a file with --index", err)
		}
	}
	store, err := session.OpenFileStore(c.root, nil)
	if err != nil {
		return c.fail("%v", err)
	}
	defer store.Close()
	p := c.progress("indexing")
	idx, err := search.Open(indexPath, &search.Options{Progress: func(st search.UpdateStats) {
		p.set("", st.Sessions, 0)
	}})
	if err != nil {
		p.end()
		return c.fail("%v", err)
	}
	defer idx.Close()
	_, err = idx.Update(c.ctx, store)
	p.end()
	var se *search.SessionError
	if errors.As(err, &se) {
		// The sessions that could not be read are left out; the others
		// are searched.
		for _, line := range strings.Split(err.Error(), "\n") {
			fmt.Fprintf(c.stderr, "agentsession: warning: %s\n", line)
		}
	} else if err != nil {
		return c.fail("%v", err)
	}
	// The matches are marked with control characters no text keeps
	// (markText takes the others out), then as the output wants.
	hits, err := idx.Search(c.ctx, query, &search.SearchOptions{Limit: limit, MarkStart: "\x02", MarkEnd: "\x03"})
	switch {
	case errors.Is(err, search.ErrEmptyQuery):
		return c.usageError("the query %q has no words to search for", query)
	case errors.Is(err, search.ErrQueryTooLong):
		return c.usageError("the query is too long (at most %d words and phrases, %d bytes)", search.MaxQueryTerms, search.MaxQueryBytes)
	}
	if err != nil {
		return c.fail("%v", err)
	}
	start, end := search.DefaultMarkStart, search.DefaultMarkEnd
	if !c.json && c.term.color {
		start, end = "\x1b[1;33m", "\x1b[0m"
	}
	for i := range hits {
		hits[i].Snippet = markText(hits[i].Snippet, start, end, !c.json)
	}
	if c.json {
		for _, h := range hits {
			if err := c.printJSONLine(searchJSON{h.SessionID, h.Title, h.Cwd, h.EntryID, h.Role, h.Prompt, h.Time, h.Snippet, h.Score}); err != nil {
				return c.fail("%v", err)
			}
		}
		if len(hits) == 0 {
			return exitNoMatch
		}
		return exitOK
	}
	if len(hits) == 0 {
		fmt.Fprintf(c.stderr, "agentsession: no entry matches %q\n", query)
		return exitNoMatch
	}
	c.printHits(hits)
	return exitOK
}

// printHits prints the hits grouped by session, the sessions in the
// order of their best hit.
func (c *call) printHits(hits []search.Hit) {
	var order []string
	bySession := map[string][]search.Hit{}
	for _, h := range hits {
		if _, ok := bySession[h.SessionID]; !ok {
			order = append(order, h.SessionID)
		}
		bySession[h.SessionID] = append(bySession[h.SessionID], h)
	}
	for i, id := range order {
		group := bySession[id]
		if i > 0 {
			fmt.Fprintln(c.stdout)
		}
		head := c.paint(bold, termSafe(id))
		if t := group[0].Title; t != "" {
			head += "  " + cell(t)
		}
		if cwd := group[0].Cwd; cwd != "" {
			head += "  " + c.paint(dim, cell(cwd))
		}
		fmt.Fprintln(c.stdout, head)
		t := &table{c: c, indent: "  "} // no header row
		for _, h := range group {
			// The snippet was made safe by markText, and may hold the
			// marks' colours.
			t.safeRow(cell(h.EntryID), cell(h.Role), h.Time.Local().Format(time.DateTime), h.Snippet)
		}
		t.flush()
	}
}

// markText replaces the marks \x02 and \x03 of a snippet with start and
// end, and every other control character (an escape sequence in a tool's
// output must not reach the terminal) with a space; for a terminal
// (visible), with the escape termSafe shows it as, bidi overrides too.
func markText(s, start, end string, visible bool) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == '\x02':
			b.WriteString(start)
		case r == '\x03':
			b.WriteString(end)
		case visible && unsafeForTerminal(r):
			b.WriteString(termSafe(string(r)))
		case r < 0x20 || r == 0x7f || r >= 0x80 && r < 0xa0:
			b.WriteByte(' ')
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}
