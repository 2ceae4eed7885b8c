package session_test

// Nothing on a read path encodes again what it was given: a message
// entry read from a file (or whose image references were resolved)
// keeps its message decoded, and Entry.Message hands out a copy of it
// that shares its strings, rather than writing the entry's bytes back
// out (an image's base64 escaped again) and decoding them again.

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	session "github.com/agentsession/session"
)

// imageSession makes session id in store with n user messages that each
// hold the same image of size bytes (one blob, n references), and
// returns the image.
func imageSession(t testing.TB, store session.Store, id string, n, size int) []byte {
	t.Helper()
	ctx := context.Background()
	img := make([]byte, size)
	for i := range img {
		img[i] = byte(i * 7919 >> 3)
	}
	s, err := session.Create(ctx, store, &session.CreateOptions{ID: id, Cwd: "/w"})
	require.NoError(t, err)
	for range n {
		_, err := s.Append(ctx, session.User(session.Text("look"), session.Image("image/png", img)))
		require.NoError(t, err)
	}
	require.NoError(t, s.Close())
	return img
}

// TestMessageDoesNotReencode: Entry.Message of an entry whose image was
// resolved from a blob, and the listing fold and tree walk that call it
// for every entry, allocate a small part of the image, however many
// entries refer to it; the copy it returns is still the caller's own.
func TestMessageDoesNotReencode(t *testing.T) {
	ctx := context.Background()
	store := openFS(t, t.TempDir(), nil)
	const n, size = 8, 8 << 20
	imageSession(t, store, "s-img", n, size)
	log, err := store.Load(ctx, "s-img")
	require.NoError(t, err)
	require.Len(t, log.Entries, n)

	var msgs []*session.Message
	got := allocated(func() {
		for _, e := range log.Entries {
			m, err := e.Message()
			require.NoError(t, err)
			msgs = append(msgs, m)
		}
	})
	require.Less(t, got, uint64(size/8), "Message of %d entries allocated %d bytes", n, got)
	require.Len(t, msgs[0].Content[1].Data, (size+2)/3*4, "the image, resolved")

	// The copy is the caller's: changing it changes nothing read later.
	msgs[0].Content[0].Text = "changed"
	msgs[0].Content = append(msgs[0].Content[:1], session.Text("more"))
	again, err := log.Entries[0].Message()
	require.NoError(t, err)
	require.Equal(t, "look", again.Content[0].Text)
	require.Len(t, again.Content, 2)
	require.Equal(t, session.BlockImage, again.Content[1].Type)

	// A session opened on the log (what the CLI does) folds every entry
	// for its listing, and a tree walk describes each.
	got = allocated(func() {
		s := session.OpenLog(log)
		var fold session.InfoFold
		for e := range s.Entries() {
			fold.Add(e)
		}
		for node := range s.Tree() {
			_, err := node.Entry.Message()
			require.NoError(t, err)
		}
		s.Close()
	})
	require.Less(t, got, uint64(size/4), "open, fold and walk allocated %d bytes", got)
}

// BenchmarkMessageOfImageEntry: Entry.Message of an entry holding a
// resolved 8 MiB image.
func BenchmarkMessageOfImageEntry(b *testing.B) {
	store := openFS(b, b.TempDir(), nil)
	imageSession(b, store, "s-img", 1, 8<<20)
	log, err := store.Load(context.Background(), "s-img")
	require.NoError(b, err)
	e := log.Entries[0]
	b.ReportAllocs()
	for b.Loop() {
		if _, err := e.Message(); err != nil {
			b.Fatal(err)
		}
	}
}
