package export_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strings"

	session "github.com/agentsession/session"
	"github.com/agentsession/session/export"
)

// A session exported as a JSON envelope and read back: the same entries,
// byte for byte.
func ExampleJSON() {
	ctx := context.Background()
	s, _ := session.Create(ctx, session.NewMemoryStore(), &session.CreateOptions{Cwd: "/home/dev/project"})
	s.Append(ctx, session.UserText("What does main.go do?"))
	s.Append(ctx, session.AssistantText("It starts the server."))

	var buf bytes.Buffer
	if err := export.JSON(ctx, &buf, s, nil); err != nil {
		fmt.Println(err)
		return
	}
	env, err := export.Read(&buf)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(env.Format, env.Version)
	fmt.Println(len(env.Entries), "entries, leaf", env.Leaf == s.LeafID())
	m, _ := env.Entries[0].Message()
	fmt.Println(m.Role+":", m.Text())
	// Output:
	// agentsession.export 1
	// 2 entries, leaf true
	// user: What does main.go do?
}

// The Markdown transcript of the current branch (its heading, which
// names the session and its creation time, is left out here).
func ExampleMarkdown() {
	ctx := context.Background()
	s, _ := session.Create(ctx, session.NewMemoryStore(), &session.CreateOptions{Title: "Tests"})
	s.Append(ctx, session.UserText("Run the tests."))
	s.Append(ctx, session.Assistant(session.ToolCall("call_1", "bash", []byte(`{"command":"go test ./..."}`))))
	s.Append(ctx, session.ToolResult("call_1", "bash", "ok  \texample.com/pkg\t0.01s"))

	var buf bytes.Buffer
	if err := export.Markdown(ctx, &buf, s, nil); err != nil {
		fmt.Println(err)
		return
	}
	_, body, _ := strings.Cut(buf.String(), "---\n\n")
	os.Stdout.WriteString(body)
	// Output:
	// ## User
	//
	// Run the tests.
	//
	// ## Assistant
	//
	// **Tool call** `bash` (`call_1`)
	//
	// ```json
	// {
	//   "command": "go test ./..."
	// }
	// ```
	//
	// ### Tool result: `bash`
	//
	// ```
	// ok  	example.com/pkg	0.01s
	// ```
}
