// Filestore keeps sessions on disk in the seed format (the JSONL files of
// the pi and oh-my-pi agents): it saves two turns of an agent, one with an
// image that goes to the blob store, reopens the most recent session of
// the working directory as an agent started again would, lists the
// sessions, and shows what is on disk. Everything happens in a temporary
// directory that is removed at the end.
//
//	go run ./examples/filestore
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"log"
	"os"
	"path/filepath"
	"strings"

	session "github.com/agentsession/session"
)

func main() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "agentsession-example-")
	check(err)
	defer os.RemoveAll(dir)
	root := filepath.Join(dir, "sessions") // an agent would use ~/.pi/agent/sessions

	// SyncOnFlush (the default): appends are written as they come and made
	// durable at the end of each turn, when the agent calls Flush.
	store, err := session.OpenFileStore(root, &session.FileStoreOptions{Sync: session.SyncOnFlush})
	check(err)
	s, err := session.Create(ctx, store, &session.CreateOptions{Cwd: "/home/dev/shop"})
	check(err)

	// Turn 1: the user sends a screenshot; the model runs a tool.
	screenshot := make([]byte, 6000) // a stand-in for a PNG; 1 KiB or more goes to a blob
	for i := range screenshot {
		screenshot[i] = byte(i * 7)
	}
	check(s.SaveTurn(ctx, []*session.Message{
		session.User(session.Text("The checkout page looks broken, see the screenshot."), session.Image("image/png", screenshot)),
		session.Assistant(
			session.Text("Let me find the stylesheet."),
			session.ToolCall("call_1", "bash", json.RawMessage(`{"command":"ls web/css"}`)),
		).WithModel("anthropic-messages", "anthropic", "claude-sonnet-4-5"),
		session.ToolResult("call_1", "bash", "checkout.css\nmain.css\n"),
	}, &session.Usage{Input: 1200, Output: 80, TotalTokens: 1280}))
	check(s.Flush(ctx))
	check(s.SetTitle(ctx, "Fix the checkout page"))
	check(s.Close())

	// Later, in a new process: continue the most recent session of the
	// directory and save the second turn.
	store2, err := session.OpenFileStore(root, nil)
	check(err)
	again, err := session.Continue(ctx, store2, "/home/dev/shop")
	check(err)
	fmt.Printf("continued %q: %d entries, leaf %s\n", again.Title(), again.Len(), again.LeafID())
	check(again.SaveTurn(ctx, []*session.Message{
		session.AssistantText("checkout.css sets the grid to 3 columns; the page needs 2."),
	}, nil))
	check(again.Flush(ctx))

	msgs, err := again.Messages(ctx)
	check(err)
	fmt.Println("\ncontext for the model:")
	for _, m := range msgs {
		fmt.Printf("  %-10s %s\n", m.Role, oneLine(m))
	}
	check(again.Close())

	// Listing reads only what changed since the last listing.
	page, err := store2.List(ctx, session.ListOptions{Cwd: "/home/dev/shop"})
	check(err)
	fmt.Println("\nsessions of /home/dev/shop:")
	for _, info := range page.Sessions {
		fmt.Printf("  %s  %q  %d entries, %d bytes\n", info.ID, info.Title, info.Entries, info.Size)
	}
	check(store2.Close())

	// The file is the seed format: a header, then one entry per line; the
	// image is a blob reference, resolved again when the session is read.
	files, err := filepath.Glob(filepath.Join(root, "*", "*.jsonl"))
	check(err)
	data, err := os.ReadFile(files[0])
	check(err)
	fmt.Println("\nthe session file, line by line:")
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		if i := strings.Index(line, session.BlobPrefix); i >= 0 {
			line = "…" + line[i-30:i+30] + "…"
		} else if len(line) > 110 {
			line = line[:110] + "…"
		}
		fmt.Println("  " + line)
	}

	fmt.Println("\non disk:")
	check(filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		fi, err := d.Info()
		if err != nil {
			return err
		}
		fmt.Printf("  %s  %s (%d bytes)\n", fi.Mode().Perm(), shorten(rel), fi.Size())
		return nil
	}))
}

// oneLine shortens a message to one line; an image shows as its type.
func oneLine(m *session.Message) string {
	var parts []string
	for _, b := range m.Content {
		switch b.Type {
		case session.BlockText:
			parts = append(parts, strings.TrimSpace(b.Text))
		case session.BlockImage:
			parts = append(parts, fmt.Sprintf("[%s, %d bytes of base64]", b.MimeType, len(b.Data)))
		case session.BlockToolCall:
			parts = append(parts, fmt.Sprintf("[%s %s]", b.Name, b.Arguments))
		}
	}
	return strings.ReplaceAll(strings.Join(parts, " "), "\n", " | ")
}

// shorten keeps file names readable: ids and hashes are long.
func shorten(rel string) string {
	base := filepath.Base(rel)
	if len(base) > 40 {
		base = base[:20] + "…" + base[len(base)-12:]
	}
	return filepath.Join(filepath.Dir(rel), base)
}

func check(err error) {
	if err != nil {
		log.Fatal(err)
	}
}
