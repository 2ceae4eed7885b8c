// Postgres keeps agent sessions in PostgreSQL: it migrates the schema,
// saves a turn, opens the session again through a second pool (another
// replica of the agent), continues it there, moves a copy into a local
// FileStore and prints the listing and the context.
//
//	AGENTSESSION_PG_DSN=postgres://user@localhost/db go run ./examples/postgres
//
// (from the pgstore folder). The tables go into the connection's current
// schema; the program deletes the session it made before it exits.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"os"
	"strings"

	"github.com/jackc/pgx/v5/pgxpool"

	session "github.com/agentsession/session"
	"github.com/agentsession/session/pgstore"
)

func main() {
	dsn := os.Getenv("AGENTSESSION_PG_DSN")
	if dsn == "" {
		log.Fatal("set AGENTSESSION_PG_DSN to a PostgreSQL connection string, e.g. postgres://postgres@127.0.0.1:5432/postgres")
	}
	ctx := context.Background()

	// Replica A: every replica may run Migrate at startup.
	poolA := must(pgxpool.New(ctx, dsn))
	defer poolA.Close()
	check(pgstore.Migrate(ctx, poolA))
	storeA := must(pgstore.New(ctx, poolA, nil))

	s := must(session.Create(ctx, storeA, &session.CreateOptions{Cwd: "/srv/agent"}))
	defer storeA.Delete(ctx, s.ID())
	check(s.SaveTurn(ctx, []*session.Message{
		session.UserText("What is in the config directory?"),
		session.Assistant(session.ToolCall("call_1", "bash", json.RawMessage(`{"command":"ls config"}`))),
		session.ToolResult("call_1", "bash", "app.yaml\ndb.yaml\n"),
		session.Assistant(session.Text("Two files: app.yaml and db.yaml.")),
	}, nil))
	check(s.SetTitle(ctx, "config question"))
	fmt.Printf("replica A saved session %s\n", s.ID())

	// Replica B, another pool (another machine, in production), resumes it.
	poolB := must(pgxpool.New(ctx, dsn))
	defer poolB.Close()
	storeB := must(pgstore.New(ctx, poolB, nil))
	t := must(session.Open(ctx, storeB, s.ID()))
	check(t.SaveTurn(ctx, []*session.Message{
		session.UserText("And which one holds the database URL?"),
		session.Assistant(session.Text("db.yaml.")),
	}, nil))
	fmt.Printf("replica B continued it: %d messages\n", len(t.Context().Messages))

	page := must(storeA.List(ctx, session.ListOptions{Cwd: "/srv/agent", Limit: 5}))
	fmt.Println("sessions of /srv/agent, most recent first:")
	for _, in := range page.Sessions {
		fmt.Printf("  %s %q, %d entries, %d bytes\n", in.ID, in.Title, in.Entries, in.Size)
	}

	// Move a copy into a local FileStore (and it could come back).
	dir := must(os.MkdirTemp("", "agentsession-postgres-"))
	defer os.RemoveAll(dir)
	files := must(session.OpenFileStore(dir, nil))
	defer files.Close()
	check(session.Copy(ctx, files, storeA, s.ID()))
	local := must(session.Open(ctx, files, s.ID()))
	fmt.Printf("copied into %s; its context there:\n", dir)
	for _, m := range local.Context().Messages {
		fmt.Printf("  %-10s %s\n", m.Role, describe(m))
	}
}

// describe is a message on one line.
func describe(m *session.Message) string {
	text := strings.Join(strings.Fields(m.Text()), " ")
	for _, b := range m.Content {
		if b.Type == session.BlockToolCall {
			text += fmt.Sprintf("[calls %s %s]", b.Name, b.Arguments)
		}
	}
	return text
}

func must[T any](v T, err error) T {
	check(err)
	return v
}

func check(err error) {
	if err != nil {
		log.Fatal(err)
	}
}
