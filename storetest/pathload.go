package storetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/agentsession/session"
)

// testLoadPath checks the PathLoader ability, for stores that have it:
// LoadPath returns what its contract names (the reference is
// MemoryStore's LoadPath of the same log), or the whole log with
// Complete set; and a session opened through it gives a whole open's
// context, before and after an append.
func testLoadPath(t *testing.T, s session.Store) {
	pl, ok := s.(session.PathLoader)
	if !ok {
		t.Skipf("%T is no session.PathLoader: LoadPath not checked (sessions load whole)", s)
	}
	ctx := context.Background()
	if _, err := pl.LoadPath(ctx, "s-missing"); !errors.Is(err, session.ErrNotFound) {
		t.Fatalf("LoadPath of a missing session: %v, want ErrNotFound", err)
	}
	for _, shape := range []string{"none", "linear", "branched", "moved", "keptOff"} {
		t.Run(shape, func(t *testing.T) {
			id := "s-path-" + shape
			pathSession(t, s, id, shape)
			checkLoadPath(t, s, pl, id)
			// An append on the handle Open gives, then again.
			h, err := session.Open(ctx, s, id)
			if err != nil {
				t.Fatal(err)
			}
			if err := h.SaveTurn(ctx, []*session.Message{session.UserText("after the open"), session.AssistantText("noted")}, nil); err != nil {
				t.Fatal(err)
			}
			if err := h.Close(); err != nil {
				t.Fatal(err)
			}
			checkLoadPath(t, s, pl, id)
		})
	}
}

// checkLoadPath compares LoadPath of id with the reference, and an open
// through the store with a whole open of what Load returns.
func checkLoadPath(t *testing.T, s session.Store, pl session.PathLoader, id string) {
	t.Helper()
	ctx := context.Background()
	whole := load(t, s, id)
	got, err := pl.LoadPath(ctx, id)
	if err != nil {
		t.Fatalf("LoadPath: %v", err)
	}
	ref := session.NewMemoryStore()
	if err := ref.CreateWithEntries(ctx, whole.Header, whole.Entries); err != nil {
		t.Fatal(err)
	}
	want, err := ref.LoadPath(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if got.Log == nil {
		t.Fatal("LoadPath returned no log")
	}
	if encode(t, &session.Log{Header: got.Log.Header}) != encode(t, &session.Log{Header: whole.Header}) {
		t.Fatal("LoadPath's header differs from Load's")
	}
	if last := whole.Entries[len(whole.Entries)-1].ID(); got.Last != last {
		t.Fatalf("LoadPath's Last = %q, the log ends with %q", got.Last, last)
	}
	switch {
	case got.Complete:
		if !slices.Equal(ids(got.Log), ids(whole)) {
			t.Fatalf("LoadPath answered Complete with %v, Load gives %v", ids(got.Log), ids(whole))
		}
	case want.Complete:
		t.Fatalf("LoadPath returned %d of %d entries where the path is the whole log", len(got.Log.Entries), len(whole.Entries))
	case !slices.Equal(ids(got.Log), ids(want.Log)):
		t.Fatalf("LoadPath returned %v, the contract names %v", ids(got.Log), ids(want.Log))
	}
	byID := map[string][]byte{}
	for _, e := range whole.Entries {
		byID[e.ID()] = e.JSON()
	}
	for _, e := range got.Log.Entries {
		if !bytes.Equal(e.JSON(), byID[e.ID()]) {
			t.Fatalf("LoadPath's entry %s differs from Load's", e.ID())
		}
	}
	opened, err := session.Open(ctx, s, id)
	if err != nil {
		t.Fatal(err)
	}
	defer opened.Close()
	ref2 := session.OpenLog(whole)
	defer ref2.Close()
	a, b := opened.Context(), ref2.Context()
	if !reflect.DeepEqual(a.EntryIDs, b.EntryIDs) || !reflect.DeepEqual(a.Messages, b.Messages) ||
		a.ThinkingLevel != b.ThinkingLevel || !reflect.DeepEqual(a.Model, b.Model) || a.Mode != b.Mode {
		t.Fatalf("the context of a session opened by its path differs from a whole open's")
	}
}

// pathSession writes session id on s: settings and model changes early,
// turns, compactions, then the shape's end.
func pathSession(t *testing.T, s session.Store, id, shape string) {
	t.Helper()
	ctx := context.Background()
	h, err := session.Create(ctx, s, &session.CreateOptions{ID: id, Cwd: "/work"})
	if err != nil {
		t.Fatal(err)
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	opts := &session.CompactionOptions{ContextWindow: 4000, KeepRecentTokens: 600}
	if shape == "keptOff" {
		// Nothing kept: the compaction itself starts the context.
		opts.KeepRecentTokens = 1
	}
	for turn := range 40 {
		switch turn {
		case 1:
			_, err := h.AppendModelChange(ctx, "anthropic", "claude-early")
			must(err)
		case 2:
			_, err := h.AppendThinkingLevel(ctx, "high")
			must(err)
			_, err = h.AppendModeChange(ctx, "plan", map[string]any{"x": 1})
			must(err)
		}
		a := session.AssistantText(fmt.Sprintf("answer %d %s", turn, strings.Repeat("more ", 40)))
		a.Provider, a.Model = "anthropic", fmt.Sprintf("model-%d", turn%3)
		must(h.SaveTurn(ctx, []*session.Message{session.UserText(fmt.Sprintf("question %d %s", turn, strings.Repeat("words ", 30))), a}, nil))
		if shape != "none" && turn%15 == 14 {
			_, err := h.Compact(ctx, session.ExtractiveSummarizer{}, opts)
			must(err)
		}
	}
	switch shape {
	case "branched":
		ids := h.Context().EntryIDs
		must(h.Branch(ctx, ids[len(ids)-4]))
		must(h.SaveTurn(ctx, []*session.Message{session.UserText("on a branch")}, nil))
	case "moved":
		ids := h.Context().EntryIDs
		must(h.Branch(ctx, ids[len(ids)-3]))
	}
	must(h.Close())
}
