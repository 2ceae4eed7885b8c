package encrypt_test

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	session "github.com/agentsession/session"
	"github.com/agentsession/session/encrypt"
)

// Sessions sealed at rest with the host's key, then the key rotated:
// the new key becomes current, the old one stays until every session is
// sealed again, and then goes.
func Example() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "example")
	defer os.RemoveAll(dir)
	files, _ := session.OpenFileStore(filepath.Join(dir, "sessions"), nil)
	defer files.Close()

	// The host keeps its master keys itself (a KMS, a file only it reads).
	k1 := encrypt.Key{ID: "2026-01", Secret: make([]byte, 32)}
	rand.Read(k1.Secret)
	keys, _ := encrypt.NewKeyring(k1)
	store, _ := encrypt.New(files, keys)

	s, _ := session.Create(ctx, store, &session.CreateOptions{Cwd: "/home/dev/project", Title: "Billing bug"})
	s.SaveTurn(ctx, []*session.Message{
		session.UserText("The customer's card is declined"),
		session.AssistantText("Let me look at the logs."),
	}, nil)
	s.Close()

	// Rotation: a new current key, the old one kept for reading.
	k2 := encrypt.Key{ID: "2026-07", Secret: make([]byte, 32)}
	rand.Read(k2.Secret)
	keys, _ = encrypt.NewKeyring(k2, k1)
	store, _ = encrypt.New(files, keys)
	n, _ := store.ReencryptAll(ctx)
	fmt.Println("sealed again:", n)

	// Every session is under k2 now: k1 can go.
	keys, _ = encrypt.NewKeyring(k2)
	store, _ = encrypt.New(files, keys)
	s, _ = session.Open(ctx, store, s.ID())
	fmt.Println(s.Title(), "/", s.Context().Messages[0].Text())

	// The store beneath sees sealed entries only.
	raw, _ := files.Load(ctx, s.ID())
	fmt.Println(raw.Entries[0].Type())
	// Output:
	// sealed again: 1
	// Billing bug / The customer's card is declined
	// custom
}

// The recommended setting: a strict store reads only what it sealed. An
// entry in clear that someone added to the files is refused, naming the
// session and the entry; a session written before the store was
// encrypted is sealed once, explicitly, with SealPlaintext.
func ExampleNewWithOptions() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "example")
	defer os.RemoveAll(dir)
	files, _ := session.OpenFileStore(filepath.Join(dir, "sessions"), nil)
	defer files.Close()

	// A session from before encryption, in clear.
	old, _ := session.Create(ctx, files, &session.CreateOptions{ID: "s-before", Cwd: "/home/dev/project"})
	old.Append(ctx, session.UserText("written before the switch"))
	old.Close()

	k := encrypt.Key{ID: "2026-01", Secret: make([]byte, 32)}
	rand.Read(k.Secret)
	keys, _ := encrypt.NewKeyring(k)
	store, _ := encrypt.NewWithOptions(files, keys, &encrypt.Options{Strict: true})

	_, err := store.Load(ctx, "s-before")
	fmt.Println(errors.Is(err, encrypt.ErrUnsealed))

	// The migration: run once, on sessions known to be the host's own.
	sealed, _ := store.SealPlaintext(ctx, "s-before")
	s, _ := session.Open(ctx, store, "s-before")
	fmt.Println(sealed, s.Context().Messages[0].Text())
	s.Close()

	// An entry in clear added to the file afterwards is refused.
	log, _ := files.Load(ctx, "s-before")
	e, _ := session.NewEntry(session.TypeMessage, "added", log.Entries[0].ID(), time.Now(),
		map[string]any{"message": session.UserText("added by hand")})
	files.Append(ctx, "s-before", session.AppendOptions{}, e)
	_, err = session.Open(ctx, store, "s-before")
	var ue *encrypt.UnsealedError
	if errors.As(err, &ue) {
		fmt.Println("refused:", ue.Session, ue.Entry, ue.What)
	}
	// Output:
	// true
	// true written before the switch
	// refused: s-before added message entry
}
