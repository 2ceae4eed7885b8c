package session_test

import (
	"context"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	session "github.com/agentsession/session"
	"github.com/agentsession/session/storetest"
)

func TestMemoryStore(t *testing.T) {
	storetest.Run(t, func(t *testing.T) session.Store { return session.NewMemoryStore() })
}

// A MemoryStore's pins (PinBlobs): a collection spares them; the append
// that refers to a manifest releases it and the contents it lists, which
// are garbage once the session is gone; ReleaseBlobs releases too.
func TestMemoryStorePins(t *testing.T) {
	ctx := context.Background()
	mem := session.NewMemoryStore()
	noGrace := &session.CollectOptions{Grace: -1}
	collect := func() []string {
		t.Helper()
		res, err := session.CollectBlobs(ctx, mem, noGrace)
		require.NoError(t, err)
		slices.Sort(res.Deleted)
		return res.Deleted
	}
	contents := [][]byte{[]byte("content one"), []byte("content two")}
	var refs []string
	for _, c := range contents {
		refs = append(refs, session.BlobRef(c))
	}
	manifest := []byte(`{"files":{"a":"` + refs[0] + `","b":"` + refs[1] + `"}}`)
	m := session.BlobRef(manifest)
	require.NoError(t, mem.PinBlobs(ctx, append([]string{m}, refs...)...))
	for _, c := range append(contents, manifest) {
		_, err := mem.PutBlob(ctx, c)
		require.NoError(t, err)
	}
	require.Empty(t, collect(), "pinned")
	s, err := session.Create(ctx, mem, &session.CreateOptions{ID: "s-mem-pins", Cwd: "/w"})
	require.NoError(t, err)
	_, err = s.AppendSnapshot(ctx, session.WorkspaceSnapshot{Snapshot: m, Files: 2})
	require.NoError(t, err)
	require.NoError(t, s.Close())
	require.NoError(t, mem.Delete(ctx, "s-mem-pins"))
	want := append([]string{m}, refs...)
	slices.Sort(want)
	require.Equal(t, want, collect(), "released by the append, the manifest's contents with it")

	g := []byte("pinned, then given up")
	require.NoError(t, mem.PinBlobs(ctx, session.BlobRef(g)))
	_, err = mem.PutBlob(ctx, g)
	require.NoError(t, err)
	require.Empty(t, collect())
	require.NoError(t, mem.ReleaseBlobs(ctx, session.BlobRef(g)))
	require.Equal(t, []string{session.BlobRef(g)}, collect())
	require.ErrorIs(t, mem.PinBlobs(ctx, "blob:sha256:x"), session.ErrInvalidID)
}
