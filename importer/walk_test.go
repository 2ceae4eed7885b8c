package importer

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	session "github.com/agentsession/session"
)

// A directory import walks past what it cannot read: a subdirectory it
// may not list, a tree deeper than MaxDepth. Each is named in
// Report.NotImported with its reason; the sessions beside import.
func TestImportWalksPastBadDirectories(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		name string
		make func(t *testing.T, in string) string // returns the rel of the directory not read
		want error
	}{
		{"unreadable", func(t *testing.T, in string) string {
			if os.Geteuid() == 0 {
				t.Skip("root reads every directory")
			}
			d := filepath.Join(in, "locked")
			writeFile(t, filepath.Join(d, "x.jsonl"), clLine("x-1", "", "x", "locked away"))
			if err := os.Chmod(d, 0); err != nil {
				t.Skip(err)
			}
			t.Cleanup(func() { os.Chmod(d, 0o755) })
			return "locked"
		}, fs.ErrPermission},
		{"too deep", func(t *testing.T, in string) string {
			parts := make([]string, MaxDepth+1)
			for i := range parts {
				parts[i] = "d"
			}
			deep := filepath.Join(parts...)
			writeFile(t, filepath.Join(in, deep, "x.jsonl"), clLine("x-1", "", "x", "deep down"))
			return deep
		}, ErrTooDeep},
	} {
		t.Run(c.name, func(t *testing.T) {
			in := t.TempDir()
			writeFile(t, filepath.Join(in, "a.jsonl"), clLine("a-1", "", "a", "beside"))
			writeFile(t, filepath.Join(in, "z", "z.jsonl"), clLine("z-1", "", "z", "after"))
			bad := c.make(t, in)
			store := session.NewMemoryStore()
			rep, err := Import(ctx, store, in, nil)
			if err != nil {
				t.Fatalf("the import ended: %v", err)
			}
			var ids []string
			for _, s := range rep.Imported {
				ids = append(ids, s.ID)
			}
			if strings.Join(ids, ",") != "a,z" {
				t.Errorf("imported %v, want a and z", ids)
			}
			var named bool
			for _, n := range rep.NotImported {
				if n.Path == filepath.Join(in, bad) && errors.Is(n.Err, c.want) {
					named = true
				}
			}
			if !named {
				t.Errorf("NotImported %v does not name %s (%v)", rep.NotImported, bad, c.want)
			}
		})
	}
}

// Past claudeMaxAgents, the subagent files of a session are each named
// as not read, and no session stands for them.
func TestClaudeAgentLimit(t *testing.T) {
	defer func(n int) { claudeMaxAgents = n }(claudeMaxAgents)
	claudeMaxAgents = 2
	in := t.TempDir()
	writeFile(t, filepath.Join(in, "s.jsonl"), clLine("u-1", "", "s", "mine"))
	for _, a := range []string{"a1", "a2", "a3", "a4"} {
		writeFile(t, filepath.Join(in, "s", "subagents", "agent-"+a+".jsonl"), clAgentLine(a+"-1", "s", a, "agent "+a))
	}
	store := session.NewMemoryStore()
	rep, err := Import(context.Background(), store, filepath.Join(in, "s.jsonl"), nil)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	var named []string
	for _, s := range rep.Imported {
		ids = append(ids, s.ID)
		for _, m := range s.Malformed {
			if strings.Contains(m.Err.Error(), "more than 2 subagent files") {
				named = append(named, filepath.Base(m.Path))
			}
		}
	}
	if strings.Join(ids, ",") != "s,s_agent-a1,s_agent-a2" {
		t.Errorf("imported %v", ids)
	}
	if strings.Join(named, ",") != "agent-a3.jsonl,agent-a4.jsonl" {
		t.Errorf("not named as not read: %v", named)
	}
}

// A transcript whose lines state another session's id takes none of
// that session's side files: its subagents are found from the file's
// own name only.
func TestClaudeSideFilesByFileName(t *testing.T) {
	in := t.TempDir()
	writeFile(t, filepath.Join(in, "A.jsonl"), clLine("a-0", "", "B", "attacker"))
	writeFile(t, filepath.Join(in, "B.jsonl"), clLine("b-0", "", "B", "victim"))
	writeFile(t, filepath.Join(in, "B", "subagents", "agent-x.jsonl"), clAgentLine("x-1", "B", "x", "VICTIM subagent"))
	writeFile(t, filepath.Join(in, "agent-y.jsonl"), clAgentLine("y-1", "B", "y", "VICTIM beside"))
	store := session.NewMemoryStore()
	rep, err := Import(context.Background(), store, filepath.Join(in, "A.jsonl"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := storeDump(t, context.Background(), store); strings.Contains(got, "VICTIM") {
		t.Fatalf("took the other session's side files: %+v\n%s", rep.Imported, got)
	}
}

// A session's subagent files are read while the session's bytes stay
// under claudeMaxSessionBytes; those past it are named, not read (a
// directory of sparse files of a gigabyte each was read whole).
func TestClaudeSessionBytesBounded(t *testing.T) {
	defer func(n int64) { claudeMaxSessionBytes = n }(claudeMaxSessionBytes)
	in := t.TempDir()
	writeFile(t, filepath.Join(in, "s.jsonl"), clLine("u-1", "", "s", "mine"))
	line := clAgentLine("a-1", "s", "a1", "agent")
	claudeMaxSessionBytes = int64(3*len(line) + 100)
	for _, a := range []string{"a1", "a2", "a3"} {
		writeFile(t, filepath.Join(in, "s", "subagents", "agent-"+a+".jsonl"), clAgentLine(a+"-1", "s", a, "agent "+a))
	}
	// A sparse file past the bound: refused by its size, unread.
	big := filepath.Join(in, "s", "subagents", "agent-b.jsonl")
	writeFile(t, big, clAgentLine("b-1", "s", "b", "big"))
	if err := os.Truncate(big, 1<<30); err != nil {
		t.Skip(err)
	}
	rep, err := Import(context.Background(), session.NewMemoryStore(), filepath.Join(in, "s.jsonl"), nil)
	if err != nil {
		t.Fatal(err)
	}
	var ids, refused []string
	for _, s := range rep.Imported {
		ids = append(ids, s.ID)
		for _, m := range s.Malformed {
			if errors.Is(m.Err, session.ErrTooLarge) {
				refused = append(refused, filepath.Base(m.Path))
			}
		}
	}
	if strings.Join(ids, ",") != "s,s_agent-a1,s_agent-a2" || strings.Join(refused, ",") != "agent-a3.jsonl,agent-b.jsonl" {
		t.Errorf("imported %v, refused %v", ids, refused)
	}
}

// A partial import stopped by the store's limits does not advise an
// import again, which would stop at the same place.
func TestPartialErrorAdvice(t *testing.T) {
	for _, c := range []struct {
		err   error
		again bool
	}{
		{session.ErrTooLarge, false},
		{fmt.Errorf("append: %w", session.ErrTooLarge), false},
		{errors.New("disk full"), true},
	} {
		msg := (&PartialError{ID: "s", Stored: 1, Total: 2, Err: c.err}).Error()
		if strings.Contains(msg, "import again to complete") != c.again {
			t.Errorf("%v: %s", c.err, msg)
		}
	}
}
