package encrypt

import (
	"bytes"
	"testing"
	"time"

	session "github.com/agentsession/session"
)

// FuzzOpen reads arbitrary bytes as a stored entry of a session, and as
// a sealed title: opening never panics, and what opens is an entry with
// the stored entry's envelope.
func FuzzOpen(f *testing.F) {
	k, err := NewKeyring(Key{ID: "k1", Secret: bytes.Repeat([]byte{7}, 32)})
	if err != nil {
		f.Fatal(err)
	}
	at := time.Date(2026, 1, 15, 10, 0, 0, 0, time.UTC)
	for _, m := range []*session.Message{session.UserText("hello"), session.AssistantText("")} {
		e, err := session.NewEntry(session.TypeMessage, "e1", "e0", at, map[string]any{"message": m})
		if err != nil {
			f.Fatal(err)
		}
		sealed, err := k.sealEntry("s1", e)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(sealed.JSON())
	}
	si, _ := session.NewEntry(session.TypeSessionInfo, "e2", "", at, map[string]string{"name": "a title"})
	sealed, _ := k.sealEntry("s1", si)
	f.Add(sealed.JSON())
	title, _ := k.sealTitle("s1", "a title")
	f.Add([]byte(title))
	f.Add([]byte(`{"type":"custom","id":"x","sealed":{"v":1,"key":"k1","box":["AAAA"]}}`))
	f.Add([]byte(`{"type":"custom","id":"x","sealed":{"v":1,"key":"k9","box":[]}}`))
	f.Add([]byte(`{"type":"custom","id":"x","sealed":[1,2]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 1<<16 {
			return
		}
		_, _, _ = k.openTitle("s1", string(data))
		e, err := session.ParseEntry(data)
		if err != nil {
			return
		}
		x, err := k.openEntry("s1", e)
		if err != nil {
			return
		}
		if x.ID() != e.ID() || x.ParentID() != e.ParentID() || x.Timestamp() != e.Timestamp() {
			t.Fatalf("opened %v from %v", x, e)
		}
	})
}
