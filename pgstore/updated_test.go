package pgstore_test

import (
	"context"
	"errors"
	"testing"
	"time"

	session "github.com/agentsession/session"
	"github.com/agentsession/session/importer"
)

// TestSetUpdated: an imported session is listed as updated at its
// source's last activity; SetUpdated refuses a stale mark and an
// unknown session; the next append sets the time from the clock again.
func TestSetUpdated(t *testing.T) {
	ctx := context.Background()
	pg, _ := newStore(t)
	rep, err := importer.Import(ctx, pg, "../importer/testdata/codex/rollout-2025-08-18T01-16-13-c3c4b301-27c8-4c70-b6e4-46b99fdf0236.jsonl", nil)
	if err != nil || len(rep.Imported) != 1 {
		t.Fatalf("%+v, %v", rep, err)
	}
	id := rep.Imported[0].ID
	log, err := pg.Load(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	var last time.Time
	for _, e := range log.Entries {
		if e.Time().After(last) {
			last = e.Time()
		}
	}
	updated := func() time.Time {
		t.Helper()
		p, err := pg.List(ctx, session.ListOptions{})
		if err != nil || len(p.Sessions) != 1 {
			t.Fatalf("%+v, %v", p, err)
		}
		return p.Sessions[0].Updated
	}
	if got := updated(); !got.Equal(last) {
		t.Fatalf("listed as updated %s, want the source's last activity %s", got, last)
	}
	stale := session.LogMark{Last: log.Entries[0].ID(), Entries: 1}
	if err := session.SetUpdated(ctx, pg, id, stale, time.Now()); !errors.Is(err, session.ErrConflict) {
		t.Fatalf("a stale mark: %v, want ErrConflict", err)
	}
	if err := session.SetUpdated(ctx, pg, "nope", session.MarkOf(log), time.Now()); !errors.Is(err, session.ErrNotFound) {
		t.Fatalf("no such session: %v, want ErrNotFound", err)
	}
	e, err := session.NewEntry(session.TypeLabel, "again", log.Entries[len(log.Entries)-1].ID(), time.Now(), map[string]string{"label": "x"})
	if err != nil {
		t.Fatal(err)
	}
	before := time.Now()
	if err := pg.Append(ctx, id, session.AppendOptions{}, e); err != nil {
		t.Fatal(err)
	}
	if got := updated(); got.Before(before.Add(-time.Second)) {
		t.Fatalf("appended to, listed as updated %s", got)
	}
}
