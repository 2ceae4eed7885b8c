package session_test

import (
	"testing"
	"time"

	session "github.com/agentsession/session"
)

func TestListOptionsMatches(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	info := session.SessionInfo{
		ID: "s1", Cwd: "/w", Updated: at, ParentSession: "/sessions/--w--/2026-01-01T00-00-00-000Z_p1.jsonl",
		ProjectID: "proj", User: "alice", App: "app", Metadata: map[string]string{"k": "v"},
	}
	archived := info
	archived.Archived = true
	cases := []struct {
		name string
		info session.SessionInfo
		opts session.ListOptions
		want bool
	}{
		{"no filter", info, session.ListOptions{}, true},
		{"cwd", info, session.ListOptions{Cwd: "/w"}, true},
		{"other cwd", info, session.ListOptions{Cwd: "/x"}, false},
		{"parent by id from a pi path", info, session.ListOptions{ParentSession: "p1"}, true},
		{"other parent", info, session.ListOptions{ParentSession: "p2"}, false},
		{"updated after, strictly", info, session.ListOptions{UpdatedAfter: at}, false},
		{"updated after", info, session.ListOptions{UpdatedAfter: at.Add(-time.Second)}, true},
		{"updated before, strictly", info, session.ListOptions{UpdatedBefore: at}, false},
		{"archived left out", archived, session.ListOptions{}, false},
		{"archived asked for", archived, session.ListOptions{Archived: true}, true},
		{"only archived", info, session.ListOptions{OnlyArchived: true}, false},
		{"only archived, archived", archived, session.ListOptions{OnlyArchived: true}, true},
		{"project", info, session.ListOptions{ProjectID: "proj", User: "alice", App: "app"}, true},
		{"other user", info, session.ListOptions{User: "bob"}, false},
		{"metadata pair", info, session.ListOptions{Metadata: map[string]string{"k": "v"}}, true},
		{"metadata other value", info, session.ListOptions{Metadata: map[string]string{"k": "w"}}, false},
		{"metadata missing key", info, session.ListOptions{Metadata: map[string]string{"x": ""}}, false},
	}
	for _, tc := range cases {
		if got := tc.opts.Matches(tc.info); got != tc.want {
			t.Errorf("%s: Matches = %v, want %v", tc.name, got, tc.want)
		}
	}
}
