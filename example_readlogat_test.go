package session_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	session "github.com/agentsession/session"
)

// ReadLogAt reads a session file read-only, as a FileStore reads its
// own: the size is checked before anything is read, and a line over the
// limit is skipped without ever being held.
func ExampleReadLogAt() {
	dir, _ := os.MkdirTemp("", "example")
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "s.jsonl")
	os.WriteFile(path, []byte(`{"type":"session","version":3,"id":"s1","cwd":"/w"}`+"\n"+
		`{"type":"message","id":"a","parentId":null,"message":{"role":"user","content":"hi"}}`+"\n"+
		`{"type":"message","id":"b","parentId":"a","message":{"role":"user","content":"`+strings.Repeat("x", 2000)+`"}}`+"\n"), 0o600)

	f, _ := os.Open(path)
	defer f.Close()
	fi, _ := f.Stat()
	opts := &session.ReadOptions{Limits: session.Limits{MaxLineBytes: 1000}}
	log, err := session.ReadLogAt(f, fi.Size(), opts)
	fmt.Println(len(log.Entries), len(log.Malformed), err)

	opts.Limits.MaxLogBytes = 1000 // refused from its size, unread
	_, err = session.ReadLogAt(f, fi.Size(), opts)
	fmt.Println(errors.Is(err, session.ErrTooLarge))
	// Output:
	// 1 1 <nil>
	// true
}
