package genkitstore_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"path/filepath"

	gksession "github.com/firebase/genkit/go/core/x/session"

	session "github.com/agentsession/session"
	genkitstore "github.com/agentsession/session/integrations/genkit"
)

// Cart is the state of a Genkit session of the example.
type Cart struct {
	Items []string `json:"items"`
}

// A Genkit session whose state is kept in a session file: it survives a
// restart, and every value it had stays readable.
func Example() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "genkit-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	root := filepath.Join(dir, "sessions")

	files, err := session.OpenFileStore(root, nil)
	if err != nil {
		log.Fatal(err)
	}
	store, err := genkitstore.New[Cart](files, nil)
	if err != nil {
		log.Fatal(err)
	}
	sess, err := gksession.New(ctx, gksession.WithID[Cart]("user-42"), gksession.WithStore(store))
	if err != nil {
		log.Fatal(err)
	}
	if err := sess.UpdateState(ctx, Cart{Items: []string{"tea"}}); err != nil {
		log.Fatal(err)
	}
	if err := sess.UpdateState(ctx, Cart{Items: []string{"tea", "cups"}}); err != nil {
		log.Fatal(err)
	}
	store.Close()
	files.Close()

	// Another run of the program: the session, from the file.
	files, err = session.OpenFileStore(root, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer files.Close()
	store, err = genkitstore.New[Cart](files, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer store.Close()
	sess, err = gksession.Load(ctx, store, "user-42")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("state:", sess.State().Items)

	// Every value the state had, oldest first (New saved the first).
	history, err := store.History(ctx, "user-42")
	if err != nil {
		log.Fatal(err)
	}
	for _, v := range history {
		fmt.Println("was:", v.Data.State.Items)
	}

	// An id no store can hold is refused.
	_, err = store.Get(ctx, "bad\nid")
	fmt.Println(errors.Is(err, session.ErrInvalidID))
	// Output:
	// state: [tea cups]
	// was: []
	// was: [tea]
	// was: [tea cups]
	// true
}
