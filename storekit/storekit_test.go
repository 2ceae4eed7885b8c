package storekit_test

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	session "github.com/agentsession/session"
	"github.com/agentsession/session/storekit"
)

func entry(t *testing.T, id string) session.Entry {
	t.Helper()
	e, err := session.NewEntry("custom", id, "", time.Unix(1, 0), map[string]any{"customType": "x"})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func TestCheckEntries(t *testing.T) {
	a, b := entry(t, "a"), entry(t, "b")
	if err := storekit.CheckEntries([]session.Entry{a, b}); err != nil {
		t.Fatal(err)
	}
	if err := storekit.CheckEntries([]session.Entry{a, b, a}); !errors.Is(err, session.ErrConflict) {
		t.Fatalf("a repeated id: %v, want ErrConflict", err)
	}
	many := make([]session.Entry, 0, 40) // past the pairwise comparison
	for i := range 40 {
		many = append(many, entry(t, fmt.Sprint("e", i)))
	}
	if err := storekit.CheckEntries(append(many, many[7])); !errors.Is(err, session.ErrConflict) {
		t.Fatalf("a repeated id among many: %v, want ErrConflict", err)
	}
	if err := storekit.CheckEntries([]session.Entry{a, {}}); err == nil || errors.Is(err, session.ErrConflict) {
		t.Fatalf("a zero Entry: %v, want an error that is no conflict", err)
	}
}

func TestCheckAppend(t *testing.T) {
	for _, c := range []struct {
		opts session.AppendOptions
		last string
		ok   bool
	}{
		{session.AppendOptions{}, "", true},
		{session.AppendOptions{}, "x", true},
		{session.AppendOptions{IfEmpty: true}, "", true},
		{session.AppendOptions{IfEmpty: true}, "x", false},
		{session.AppendOptions{IfLast: "x"}, "x", true},
		{session.AppendOptions{IfLast: "x"}, "y", false},
		{session.AppendOptions{IfLast: "x"}, "", false},
	} {
		err := storekit.CheckAppend(c.opts, c.last)
		if (err == nil) != c.ok || err != nil && !errors.Is(err, session.ErrConflict) {
			t.Errorf("CheckAppend(%+v, %q) = %v", c.opts, c.last, err)
		}
	}
}

// Paging with Page, cursor after cursor, gives every session once, in
// CompareInfo's order, ties in time broken by id.
func TestPage(t *testing.T) {
	t0 := time.Unix(1000, 0)
	var all []session.SessionInfo
	for i := range 23 {
		all = append(all, session.SessionInfo{ID: fmt.Sprint("s", i%10, i), Updated: t0.Add(time.Duration(i/3) * time.Second)})
	}
	slices.SortFunc(all, storekit.CompareInfo)
	var got []session.SessionInfo
	opts := session.ListOptions{Limit: 4}
	for pages := 0; ; pages++ {
		if pages > 10 {
			t.Fatal("paging does not end")
		}
		p, err := storekit.Page(all, opts)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, p.Sessions...)
		if p.Next == "" {
			break
		}
		opts.Cursor = p.Next
	}
	if !slices.EqualFunc(got, all, func(a, b session.SessionInfo) bool { return a.ID == b.ID }) {
		t.Fatalf("paged %v, want %v", got, all)
	}
	if _, err := storekit.Page(all, session.ListOptions{Cursor: "not a cursor"}); err == nil {
		t.Fatal("a cursor Cursor did not make is accepted")
	}
}

// A store that lists in memory filters its sessions, sorts them with
// CompareInfo and cuts a page with Page: its cursors then mean what
// every store's do.
func ExamplePage() {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	sessions := []session.SessionInfo{
		{ID: "a", Updated: t0}, {ID: "b", Updated: t0.Add(time.Hour)}, {ID: "c", Updated: t0},
	}
	slices.SortFunc(sessions, storekit.CompareInfo)
	first, _ := storekit.Page(sessions, session.ListOptions{Limit: 2})
	rest, _ := storekit.Page(sessions, session.ListOptions{Limit: 2, Cursor: first.Next})
	for _, p := range []*session.ListPage{first, rest} {
		for _, s := range p.Sessions {
			fmt.Print(s.ID, " ")
		}
	}
	fmt.Println()
	// Output: b c a
}
