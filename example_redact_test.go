package session_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	session "github.com/agentsession/session"
	"github.com/agentsession/session/redact"
)

// Redact puts a redactor in front of a store: secrets in what the agent
// writes are replaced before the store sees them, so they never reach
// the disk. Here the host's own redactor (Options.Custom) replaces a
// database password; redact.New(nil) gives the default rules.
func ExampleRedact() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "example")
	defer os.RemoveAll(dir)

	files, _ := session.OpenFileStore(filepath.Join(dir, "sessions"), nil)
	defer files.Close()
	r := redact.New(&redact.Options{Custom: func(s string) (string, int) {
		n := strings.Count(s, "pg-pass-42")
		return strings.ReplaceAll(s, "pg-pass-42", "[REDACTED]"), n
	}})
	store := session.Redact(files, r)

	s, _ := session.Create(ctx, store, &session.CreateOptions{Cwd: "/home/dev/project"})
	s.SaveTurn(ctx, []*session.Message{
		session.UserText("connect to the database with pg-pass-42"),
		session.AssistantText("Connected."),
	}, nil)
	s.Close()

	again, _ := session.Open(ctx, files, s.ID()) // what is on disk
	fmt.Println(again.Context().Messages[0].Text())
	fmt.Println(store.Report().Counts["custom"])
	// Output:
	// connect to the database with [REDACTED]
	// 1
}

// An export leaves the machine: RedactWholeHeader redacts every member of
// the header, the metadata a store keeps to list sessions by included.
func ExampleRedactWholeHeader() {
	h := session.Header{ID: "s1", Cwd: "/home/dev/project", Title: "deploy with password=hunter2-Xq81"}
	h.Extra.Set("agentsession", json.RawMessage(`{"projectId":"p1","metadata":{"db_password":"Xq81-pw"}}`))
	out, rep, err := session.RedactWholeHeader(redact.New(&redact.Options{Home: []string{}}), h)
	if err != nil {
		panic(err)
	}
	meta, _ := out.Extra.Get("agentsession")
	fmt.Println(out.Cwd, "|", out.Title)
	fmt.Println(string(meta))
	fmt.Println(rep.Counts)
	// Output:
	// ~/project | deploy with password=[REDACTED:password]
	// {"projectId":"p1","metadata":{"db_password":"[REDACTED:password]"}}
	// map[home-path:1 password:2]
}
