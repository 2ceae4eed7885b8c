package importer

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	session "github.com/agentsession/session"
)

// ocOwnerTree writes a storage tree of two sessions, A and B, in which A's
// directories hold records that name B, or a message id of B's. It
// returns the storage directory.
func ocOwnerTree(t *testing.T) string {
	t.Helper()
	st := filepath.Join(t.TempDir(), "storage")
	put := func(rel, body string) { writeFile(t, filepath.Join(st, filepath.FromSlash(rel)), body) }
	put("migration", "2")
	put("session/proj/ses_A.json", `{"id":"ses_A","projectID":"proj","directory":"/a","title":"attacker","time":{"created":1,"updated":2}}`)
	put("session/proj/ses_B.json", `{"id":"ses_B","projectID":"proj","directory":"/b","title":"victim","time":{"created":1,"updated":2}}`)
	// B's own message and its part.
	put("message/ses_B/msg_B1.json", `{"id":"msg_B1","sessionID":"ses_B","role":"user","time":{"created":10}}`)
	put("part/msg_B1/prt_B1.json", `{"id":"prt_B1","sessionID":"ses_B","messageID":"msg_B1","type":"text","text":"VICTIM-B private prompt"}`)
	// A part of B's message id without a sessionID: whose it is cannot
	// be told once two sessions hold a message of that id.
	put("part/msg_B1/prt_B2.json", `{"id":"prt_B2","messageID":"msg_B1","type":"text","text":"VICTIM-B second part"}`)
	// A's file named after B's message: B's parts must not follow it.
	put("message/ses_A/msg_B1.json", `{"id":"msg_B1","sessionID":"ses_A","role":"user","time":{"created":10}}`)
	// A's own message, one of its parts naming B, one with a stale
	// messageID (OpenCode's conversion takes such a part with its
	// directory's id: kept, and reported).
	put("message/ses_A/msg_A1.json", `{"id":"msg_A1","sessionID":"ses_A","role":"user","time":{"created":11}}`)
	put("part/msg_A1/prt_A1.json", `{"id":"prt_A1","sessionID":"ses_A","messageID":"msg_A1","type":"text","text":"attacker text"}`)
	put("part/msg_A1/prt_A2.json", `{"id":"prt_A2","sessionID":"ses_B","messageID":"msg_A1","type":"text","text":"VICTIM-B claimed part"}`)
	put("part/msg_A1/prt_A3.json", `{"id":"prt_A3","sessionID":"ses_A","messageID":"msg_stale","type":"text","text":"stale messageID kept"}`)
	// A message in A's directory that says it is B's, and its part.
	put("message/ses_A/msg_A2.json", `{"id":"msg_A2","sessionID":"ses_B","role":"user","time":{"created":12}}`)
	put("part/msg_A2/prt_A4.json", `{"id":"prt_A4","sessionID":"ses_B","messageID":"msg_A2","type":"text","text":"VICTIM-B claimed message"}`)
	return st
}

// TestOpenCodeStorageRecordsOfAnotherSession: a record whose own ids name
// another session than the one whose directory holds it (a message file
// named after another session's message, which brings that message's
// parts; a part or message whose sessionID is another's), or whose
// session cannot be told, is not taken into the session: it is reported
// in that session's Malformed (ErrOpenCodeRecord and ErrOpenCodeIDs). A
// stale id OpenCode's conversion takes from the path (a part's
// messageID) is taken so, and reported (ErrOpenCodeIDs alone).
func TestOpenCodeStorageRecordsOfAnotherSession(t *testing.T) {
	st := ocOwnerTree(t)
	ctx := context.Background()
	for _, target := range []string{st, filepath.Join(st, "session", "proj", "ses_A.json")} {
		t.Run(filepath.Base(target), func(t *testing.T) {
			store := session.NewMemoryStore()
			rep, _ := Import(ctx, store, target, nil)
			var a, b *Session
			for i := range rep.Imported {
				switch rep.Imported[i].ID {
				case "ses_A":
					a = &rep.Imported[i]
				case "ses_B":
					b = &rep.Imported[i]
				}
			}
			if a == nil {
				t.Fatalf("ses_A not imported: %+v", rep)
			}
			logA, err := store.Load(ctx, "ses_A")
			if err != nil {
				t.Fatal(err)
			}
			var textA strings.Builder
			for _, e := range logA.Entries {
				textA.Write(e.JSON())
			}
			if strings.Contains(textA.String(), "VICTIM") {
				t.Errorf("ses_A holds B's words:\n%s", textA.String())
			}
			for _, want := range []string{"attacker text", "stale messageID kept"} {
				if !strings.Contains(textA.String(), want) {
					t.Errorf("ses_A lacks %q:\n%s", want, textA.String())
				}
			}
			reported := map[string]error{}
			for _, m := range a.Malformed {
				reported[filepath.Base(m.Path)] = m.Err
			}
			for _, name := range []string{"prt_B1.json", "prt_B2.json", "prt_A2.json", "msg_A2.json"} {
				err := reported[name]
				if !errors.Is(err, ErrOpenCodeRecord) || !errors.Is(err, ErrOpenCodeIDs) {
					t.Errorf("%s: reported as %v, want ErrOpenCodeRecord and ErrOpenCodeIDs (malformed %v)", name, err, a.Malformed)
				}
			}
			if err := reported["prt_A3.json"]; !errors.Is(err, ErrOpenCodeIDs) || errors.Is(err, ErrOpenCodeRecord) {
				t.Errorf("prt_A3.json (kept with its directory's messageID): reported as %v", err)
			}
			if target != st {
				return
			}
			if b == nil {
				t.Fatalf("ses_B not imported: %+v", rep)
			}
			logB, err := store.Load(ctx, "ses_B")
			if err != nil {
				t.Fatal(err)
			}
			var textB strings.Builder
			for _, e := range logB.Entries {
				textB.Write(e.JSON())
			}
			if !strings.Contains(textB.String(), "VICTIM-B private prompt") || strings.Contains(textB.String(), "second part") {
				t.Errorf("ses_B:\n%s", textB.String())
			}
			var second error
			for _, m := range b.Malformed {
				if filepath.Base(m.Path) == "prt_B2.json" {
					second = m.Err
				}
			}
			if !errors.Is(second, ErrOpenCodeRecord) || !errors.Is(second, ErrOpenCodeIDs) {
				t.Errorf("prt_B2.json in ses_B: %v (malformed %v)", second, b.Malformed)
			}
		})
	}
}
