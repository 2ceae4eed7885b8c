package importer

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"testing"

	session "github.com/agentsession/session"
)

// A compact boundary whose logicalParentUuid names no line of the file
// (after its first line) continues from the line before it, and the
// import says so: never a silent success.
func TestClaudeCompactBoundaryMissingLogicalParent(t *testing.T) {
	boundary := func(uuid, logical string) string {
		return fmt.Sprintf(`{"parentUuid":null,"logicalParentUuid":%q,"isSidechain":false,"sessionId":"c","type":"system","subtype":"compact_boundary","content":"Conversation compacted","compactMetadata":{"trigger":"auto","preTokens":155000},"uuid":%q,"timestamp":"2026-01-10T09:05:00.000Z"}`, logical, uuid)
	}
	for _, c := range []struct {
		name     string
		logical  string
		reported bool
	}{
		{"in the file", "u-1", false},
		{"not in the file", "not-in-this-file", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			in := t.TempDir()
			writeFile(t, filepath.Join(in, "c.jsonl"),
				clLine("u-0", "", "c", "first"), clLine("u-1", "u-0", "c", "second"),
				boundary("cb", c.logical), clLine("u-2", "cb", "c", "after"))
			rep, err := Import(context.Background(), session.NewMemoryStore(), filepath.Join(in, "c.jsonl"), nil)
			if err != nil {
				t.Fatal(err)
			}
			var got bool
			for _, m := range rep.Imported[0].Malformed {
				if errors.Is(m.Err, ErrClaudeMissingParent) && m.Line == 3 {
					got = true
				}
			}
			if got != c.reported {
				t.Errorf("reported %v, want %v: %v", got, c.reported, rep.Imported[0].Malformed)
			}
		})
	}
}
