package pgstore_test

import (
	"context"
	"fmt"
	"log"
	"os"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agentsession/session"
	"github.com/agentsession/session/pgstore"
)

// A replica of an agent service opens the shared store at startup and
// resumes a session whichever node created it. (Not run by go test: it
// needs a server; examples/postgres is the runnable version.)
func Example() {
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, os.Getenv("AGENTSESSION_PG_DSN"))
	if err != nil {
		log.Fatal(err)
	}
	defer pool.Close()
	if err := pgstore.Migrate(ctx, pool); err != nil { // safe on every replica
		log.Fatal(err)
	}
	store, err := pgstore.New(ctx, pool, nil)
	if err != nil {
		log.Fatal(err)
	}
	s, err := session.Continue(ctx, store, "/srv/agent") // the latest session of this cwd, or a new one
	if err != nil {
		log.Fatal(err)
	}
	if err := s.SaveTurn(ctx, []*session.Message{session.UserText("hello"), session.Assistant(session.Text("hi"))}, nil); err != nil {
		log.Fatal(err)
	}
	fmt.Println(len(s.Context().Messages) >= 2)
}
