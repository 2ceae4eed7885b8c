package encrypt_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	session "github.com/agentsession/session"
	"github.com/agentsession/session/encrypt"
	"github.com/agentsession/session/storetest"
)

// key returns a master key whose secret is fill repeated.
func key(id string, fill byte) encrypt.Key {
	return encrypt.Key{ID: id, Secret: bytes.Repeat([]byte{fill}, 32)}
}

func keyring(t testing.TB, current encrypt.Key, older ...encrypt.Key) *encrypt.Keyring {
	t.Helper()
	k, err := encrypt.NewKeyring(current, older...)
	require.NoError(t, err)
	return k
}

func wrap(t testing.TB, inner session.Store, k *encrypt.Keyring) *encrypt.Store {
	t.Helper()
	s, err := encrypt.New(inner, k)
	require.NoError(t, err)
	return s
}

func openFS(t testing.TB, root string) *session.FileStore {
	t.Helper()
	s, err := session.OpenFileStore(root, nil)
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	return s
}

func TestConformance(t *testing.T) {
	k := keyring(t, key("k1", 1))
	t.Run("memory", func(t *testing.T) {
		storetest.Run(t, func(t *testing.T) session.Store { return wrap(t, session.NewMemoryStore(), k) })
	})
	t.Run("file", func(t *testing.T) {
		storetest.Run(t, func(t *testing.T) session.Store {
			return wrap(t, openFS(t, filepath.Join(t.TempDir(), "sessions")), k)
		})
	})
}

// secrets are the words the session below writes, which must not be on
// disk in clear.
var secrets = []string{"zebra-prompt", "walrus-args", "okapi-result", "lynx-title", "heron-name", "ibis-thinking", "yak-extra", "newt-state", "puffin-shared"}

// writeSession writes a session with a secret in each place it can hold
// one, and returns its id.
func writeSession(t *testing.T, store session.Store) string {
	t.Helper()
	ctx := context.Background()
	s, err := session.Create(ctx, store, &session.CreateOptions{Cwd: "/work", Title: "lynx-title", ProjectID: "p1", User: "u1"})
	require.NoError(t, err)
	args, _ := json.Marshal(map[string]string{"command": "grep walrus-args"})
	require.NoError(t, s.SaveTurn(ctx, []*session.Message{
		session.UserText("find the zebra-prompt"),
		session.Assistant(session.Thinking("ibis-thinking", "sig"), session.ToolCall("c1", "bash", args)),
		session.ToolResult("c1", "bash", "okapi-result"),
		session.AssistantText("found"),
	}, nil))
	require.NoError(t, s.SetTitle(ctx, "heron-name"))
	require.NoError(t, s.UpdateState(ctx, map[string]any{"k": "newt-state", "user:color": "puffin-shared"}))
	require.NoError(t, s.Close())
	return s.ID()
}

// grepTree fails the test for every file under root that holds one of
// needles.
func grepTree(t *testing.T, root string, needles ...string) {
	t.Helper()
	files := 0
	require.NoError(t, filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		files++
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, n := range needles {
			if bytes.Contains(b, []byte(n)) {
				t.Errorf("%s holds %q in clear", path, n)
			}
		}
		return nil
	}))
	require.NotZero(t, files)
}

func TestNoPlaintextOnDisk(t *testing.T) {
	ctx := context.Background()
	root := filepath.Join(t.TempDir(), "sessions")
	k := keyring(t, key("k1", 1))
	fs1, err := session.OpenFileStore(root, nil)
	require.NoError(t, err)
	id := writeSession(t, wrap(t, fs1, k))
	require.NoError(t, fs1.Close())

	grepTree(t, filepath.Dir(root), secrets...) // the sessions, and the blobs beside them

	// Closed and opened again, the session reads as it was written.
	fs2 := openFS(t, root)
	raw, err := fs2.LoadState(ctx, session.ScopeUser, "u1")
	require.NoError(t, err)
	assert.Contains(t, string(raw["color"]), `"sealed:1:k1:`, "%s", raw)
	store := wrap(t, fs2, k)
	s, err := session.Open(ctx, store, id)
	require.NoError(t, err)
	defer s.Close()
	c := s.Context()
	require.Len(t, c.Messages, 4)
	assert.Equal(t, "find the zebra-prompt", c.Messages[0].Text())
	assert.Equal(t, "ibis-thinking", c.Messages[1].Content[0].Thinking)
	assert.JSONEq(t, `{"command":"grep walrus-args"}`, string(c.Messages[1].Content[1].Arguments))
	assert.Equal(t, "okapi-result", c.Messages[2].Text())
	assert.Equal(t, "heron-name", s.Title())
	assert.Equal(t, "p1", s.Meta().ProjectID)
	st, err := s.State(ctx)
	require.NoError(t, err)
	assert.JSONEq(t, `"newt-state"`, string(st["k"]))
	assert.JSONEq(t, `"puffin-shared"`, string(st["user:color"]), "shared state, sealed by value")

	p, err := store.List(ctx, session.ListOptions{Cwd: "/work", ProjectID: "p1"})
	require.NoError(t, err)
	require.Len(t, p.Sessions, 1)
	assert.Equal(t, "heron-name", p.Sessions[0].Title)
	log, err := store.Load(ctx, id)
	require.NoError(t, err)
	assert.Equal(t, "lynx-title", log.Header.Title)
}

func TestHeaderExtraSealed(t *testing.T) {
	ctx := context.Background()
	mem := session.NewMemoryStore()
	store := wrap(t, mem, keyring(t, key("k1", 1)))
	h := session.Header{ID: "s1", Cwd: "/w", Title: "t"}
	h.Extra.Set("note", json.RawMessage(`"yak-extra"`))
	h.Extra.Set("agentsession", json.RawMessage(`{"user":"u1"}`))
	require.NoError(t, store.Create(ctx, h))

	raw, err := mem.Load(ctx, "s1")
	require.NoError(t, err)
	line, _ := json.Marshal(raw.Header)
	assert.NotContains(t, string(line), "yak-extra")
	assert.Equal(t, "u1", session.HeaderMeta(raw.Header).User, "the metadata stays in clear for listings")

	got, err := store.Load(ctx, "s1")
	require.NoError(t, err)
	assert.Equal(t, "t", got.Header.Title)
	assert.Equal(t, h.Extra, got.Header.Extra)
}

// storedLine returns the file of the one session under root and the
// index of its first line holding sub.
func storedLine(t *testing.T, root, sub string) (string, [][]byte, int) {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(root, "*", "*.jsonl"))
	require.NoError(t, err)
	require.Len(t, files, 1)
	b, err := os.ReadFile(files[0])
	require.NoError(t, err)
	lines := bytes.Split(b, []byte("\n"))
	for i, l := range lines {
		if bytes.Contains(l, []byte(sub)) {
			return files[0], lines, i
		}
	}
	t.Fatalf("no line holds %q", sub)
	return "", nil, 0
}

func TestTampered(t *testing.T) {
	ctx := context.Background()
	k := keyring(t, key("k1", 1))
	for _, tc := range []struct {
		name, find string
		change     func([]byte) []byte
	}{
		{"entry box", `"customType":"agentsession.sealed"`, func(l []byte) []byte {
			i := bytes.Index(l, []byte(`"box":["`)) + 12
			l[i] = otherLetter(l[i]) // still base64, another nonce
			return l
		}},
		{"entry envelope", `"customType":"agentsession.sealed"`, func(l []byte) []byte {
			return bytes.Replace(l, []byte(`"timestamp":"20`), []byte(`"timestamp":"19`), 1)
		}},
		{"header title", `"type":"session"`, func(l []byte) []byte {
			i := bytes.Index(l, []byte(`"title":"sealed:1:k1:`)) + 30
			l[i] = otherLetter(l[i])
			return l
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := filepath.Join(t.TempDir(), "sessions")
			fs1 := openFS(t, root)
			id := writeSession(t, wrap(t, fs1, k))
			require.NoError(t, fs1.Close())
			file, lines, i := storedLine(t, root, tc.find)
			lines[i] = tc.change(lines[i])
			require.NoError(t, os.WriteFile(file, bytes.Join(lines, []byte("\n")), 0o600))

			_, err := wrap(t, openFS(t, root), k).Load(ctx, id)
			require.Error(t, err)
			assert.ErrorIs(t, err, session.ErrCorrupt)
			assert.ErrorIs(t, err, encrypt.ErrAuth)
			var oe *encrypt.OpenError
			require.ErrorAs(t, err, &oe)
			assert.Equal(t, id, oe.Session)
		})
	}
}

func otherLetter(c byte) byte {
	if c == 'A' {
		return 'B'
	}
	return 'A'
}

// An entry sealed for one session does not open in another.
func TestEntryMovedToAnotherSession(t *testing.T) {
	ctx := context.Background()
	mem := session.NewMemoryStore()
	store := wrap(t, mem, keyring(t, key("k1", 1)))
	for _, id := range []string{"a", "b"} {
		require.NoError(t, store.Create(ctx, session.Header{ID: id}))
	}
	sa, err := session.Open(ctx, store, "a")
	require.NoError(t, err)
	_, err = sa.Append(ctx, session.UserText("for a only"))
	require.NoError(t, err)
	la, err := mem.Load(ctx, "a")
	require.NoError(t, err)
	require.NoError(t, mem.Append(ctx, "b", session.AppendOptions{}, la.Entries...))
	_, err = store.Load(ctx, "b")
	assert.ErrorIs(t, err, encrypt.ErrAuth)
	assert.ErrorIs(t, err, session.ErrCorrupt)
}

func TestWrongKey(t *testing.T) {
	ctx := context.Background()
	mem := session.NewMemoryStore()
	id := writeSession(t, wrap(t, mem, keyring(t, key("k1", 1))))
	for _, tc := range []struct {
		name string
		keys *encrypt.Keyring
		want error
	}{
		{"same id, other secret", keyring(t, key("k1", 2)), encrypt.ErrAuth},
		{"unknown id", keyring(t, key("k2", 1)), encrypt.ErrUnknownKey},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := wrap(t, mem, tc.keys).Load(ctx, id)
			assert.ErrorIs(t, err, tc.want)
			assert.ErrorIs(t, err, session.ErrCorrupt)
			_, err = session.Open(ctx, wrap(t, mem, tc.keys), id)
			assert.ErrorIs(t, err, session.ErrCorrupt)
		})
	}
}

func TestRotation(t *testing.T) {
	ctx := context.Background()
	root := filepath.Join(t.TempDir(), "sessions")
	k1, k2 := key("k1", 1), key("k2", 2)
	fs1 := openFS(t, root)
	old := writeSession(t, wrap(t, fs1, keyring(t, k1)))

	// k2 becomes current; k1 still opens what it sealed.
	both := wrap(t, fs1, keyring(t, k2, k1))
	s, err := session.Open(ctx, both, old)
	require.NoError(t, err)
	assert.Equal(t, "find the zebra-prompt", s.Context().Messages[0].Text())
	_, err = s.Append(ctx, session.UserText("after rotation"))
	require.NoError(t, err)
	require.NoError(t, s.Close())
	fresh, err := session.Create(ctx, both, &session.CreateOptions{Cwd: "/work", Title: "new"})
	require.NoError(t, err)
	_, err = fresh.Append(ctx, session.UserText("sealed with k2"))
	require.NoError(t, err)
	require.NoError(t, fresh.Close())
	_, err = wrap(t, fs1, keyring(t, k2)).Load(ctx, old)
	require.ErrorIs(t, err, encrypt.ErrUnknownKey, "k1 is still needed")

	n, err := both.ReencryptAll(ctx)
	require.NoError(t, err)
	assert.Equal(t, 1, n, "only the old session had anything under k1")
	changed, err := both.Reencrypt(ctx, old)
	require.NoError(t, err)
	assert.False(t, changed)
	require.NoError(t, fs1.Close())

	// k1 dropped, the store closed and opened again: everything opens.
	only2 := wrap(t, openFS(t, root), keyring(t, k2))
	s, err = session.Open(ctx, only2, old)
	require.NoError(t, err)
	msgs := s.Context().Messages
	require.Len(t, msgs, 5)
	assert.Equal(t, "find the zebra-prompt", msgs[0].Text())
	assert.Equal(t, "after rotation", msgs[4].Text())
	assert.Equal(t, "heron-name", s.Title())
	require.NoError(t, s.Close())
	s, err = session.Open(ctx, only2, fresh.ID())
	require.NoError(t, err)
	assert.Equal(t, "sealed with k2", s.Context().Messages[0].Text())
	require.NoError(t, s.Close())
	_, err = wrap(t, openFS(t, root), keyring(t, k1)).Load(ctx, old)
	assert.ErrorIs(t, err, encrypt.ErrUnknownKey)
}

// Sessions written before encryption are read in clear, and Reencrypt
// seals them.
func TestEncryptExisting(t *testing.T) {
	ctx := context.Background()
	mem := session.NewMemoryStore()
	id := writeSession(t, mem)
	store := wrap(t, mem, keyring(t, key("k1", 1)))
	s, err := session.Open(ctx, store, id)
	require.NoError(t, err)
	want := s.Context().Messages
	require.NoError(t, s.Close())

	changed, err := store.Reencrypt(ctx, id)
	require.NoError(t, err)
	assert.True(t, changed)
	raw, err := mem.Load(ctx, id)
	require.NoError(t, err)
	for _, e := range raw.Entries {
		for _, w := range secrets {
			assert.NotContains(t, string(e.JSON()), w)
		}
	}
	s, err = session.Open(ctx, store, id)
	require.NoError(t, err)
	assert.Equal(t, len(want), len(s.Context().Messages))
	for i, m := range s.Context().Messages {
		assert.Equal(t, want[i].Text(), m.Text())
	}
	require.NoError(t, s.Close())
}

func TestNewKeyring(t *testing.T) {
	for _, tc := range []struct {
		name    string
		current encrypt.Key
		older   []encrypt.Key
		err     string
	}{
		{"ok", key("k1", 1), []encrypt.Key{key("k0", 2)}, ""},
		{"short secret", encrypt.Key{ID: "k1", Secret: make([]byte, 16)}, nil, "at least 32"},
		{"empty id", key("", 1), nil, "1 to 32"},
		{"long id", key(strings.Repeat("k", 33), 1), nil, "1 to 32"},
		{"bad id", key("k:1", 1), nil, "only ASCII"},
		{"duplicate", key("k1", 1), []encrypt.Key{key("k1", 2)}, "twice"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k, err := encrypt.NewKeyring(tc.current, tc.older...)
			if tc.err == "" {
				require.NoError(t, err)
				assert.Equal(t, tc.current.ID, k.Current())
				return
			}
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.err)
		})
	}
	_, err := encrypt.New(nil, nil)
	assert.True(t, err != nil && !errors.Is(err, session.ErrCorrupt))
}

// What a FileStore would cut (strings over MaxStringChars) or move to
// blobs (images) is sealed whole, and comes back whole.
func TestLargeContentOverFileStore(t *testing.T) {
	ctx := context.Background()
	root := filepath.Join(t.TempDir(), "sessions")
	k := keyring(t, key("k1", 1))
	fs1 := openFS(t, root)
	s, err := session.Create(ctx, wrap(t, fs1, k), &session.CreateOptions{Cwd: "/work"})
	require.NoError(t, err)
	long := strings.Repeat("0123456789", session.DefaultMaxStringChars/10+1000)
	img := bytes.Repeat([]byte{0x89, 'P', 'N', 'G'}, 5000)
	_, err = s.Append(ctx, session.User(session.Text(long), session.Image("image/png", img)))
	require.NoError(t, err)
	require.NoError(t, s.Close())
	require.NoError(t, fs1.Close())

	s, err = session.Open(ctx, wrap(t, openFS(t, root), k), s.ID())
	require.NoError(t, err)
	defer s.Close()
	m := s.Context().Messages[0]
	assert.Equal(t, long, m.Content[0].Text)
	assert.Equal(t, session.Image("image/png", img).Data, m.Content[1].Data)
	for _, dir := range []string{filepath.Join(root, ".blobs"), filepath.Join(filepath.Dir(root), "blobs")} {
		blobs, _ := filepath.Glob(filepath.Join(dir, "*"))
		assert.Empty(t, blobs, "no image reaches the blob store")
	}
}
