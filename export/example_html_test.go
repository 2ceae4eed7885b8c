package export_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	session "github.com/agentsession/session"
	"github.com/agentsession/session/export"
)

// HTML writes one file that shows the whole session tree in a browser,
// with no network: open it, or send it to someone.
func ExampleHTML() {
	ctx := context.Background()
	s := session.New()
	s.Append(ctx, session.UserText("Write add(a, b) in Go."))
	s.Append(ctx, session.AssistantText("func add(a, b int) int { return a + b }"))
	s.SetTitle(ctx, "add in Go")

	dir, _ := os.MkdirTemp("", "export")
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "session.html")
	f, _ := os.Create(path)
	if err := export.HTML(ctx, f, s, nil); err != nil {
		fmt.Println(err)
	}
	f.Close()

	page, _ := os.ReadFile(path)
	fmt.Println(strings.Contains(string(page), "<title>add in Go</title>"))
	fmt.Println(strings.Contains(string(page), "func add(a, b int)"))
	// Output:
	// true
	// true
}
