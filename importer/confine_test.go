package importer

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	session "github.com/agentsession/session"
)

// Hostile trees: what an import reads stays inside what the user named.
// Each case builds an import root "in" beside a directory "outside"
// whose files hold a canary; an import of the root, and of the named
// file in it, must store no canary and must not hang on a FIFO.

const canaryOut = "CANARY-OUTSIDE-7f3a"

// clLine is a Claude Code user line of session sid.
func clLine(uuid, parent, sid, text string) string {
	p := "null"
	if parent != "" {
		p = fmt.Sprintf("%q", parent)
	}
	return fmt.Sprintf(`{"parentUuid":%s,"isSidechain":false,"type":"user","message":{"role":"user","content":%q},"uuid":%q,"timestamp":"2025-06-01T10:00:00.000Z","sessionId":%q}`, p, text, uuid, sid)
}

// clAgentLine is a subagent's line, with the canary when it is outside.
func clAgentLine(uuid, sid, agent, text string) string {
	return fmt.Sprintf(`{"parentUuid":null,"isSidechain":true,"agentId":%q,"type":"user","message":{"role":"user","content":%q},"uuid":%q,"timestamp":"2025-06-01T10:00:01.000Z","sessionId":%q}`, agent, text, uuid, sid)
}

func writeFile(t testing.TB, path string, lines ...string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}

func symlink(t testing.TB, target, link string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, link); err != nil {
		t.Skipf("no symlinks here: %v", err)
	}
}

// outsideTree writes what an import of "in" must never read: a victim
// session with subagents, side files and a credentials file, all
// holding the canary.
func outsideTree(t testing.TB, out string) {
	writeFile(t, filepath.Join(out, "victim.jsonl"), clLine("v-1", "", "victim", "victim's prompt "+canaryOut))
	writeFile(t, filepath.Join(out, "victim", "subagents", "agent-v1.jsonl"), clAgentLine("va-1", "victim", "v1", "victim's agent "+canaryOut))
	writeFile(t, filepath.Join(out, "agent-v2.jsonl"), clAgentLine("vb-1", "victim", "v2", "victim's beside agent "+canaryOut))
	writeFile(t, filepath.Join(out, "creds.json"), `{"description":"`+canaryOut+`","agentType":"x","aws_secret_access_key":"`+canaryOut+`"}`)
	writeFile(t, filepath.Join(out, "codex.jsonl"), `{"timestamp":"2025-01-01T00:00:00Z","type":"session_meta","payload":{"id":"0199a000-0000-7000-8000-000000000001","timestamp":"2025-01-01T00:00:00Z","cwd":"/x","originator":"codex_cli_rs","cli_version":"0.1"}}`,
		`{"timestamp":"2025-01-01T00:00:01Z","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"`+canaryOut+`"}]}}`)
}

type hostileCase struct {
	name string
	// build writes the import root in (beside out) and returns the file
	// to import on its own ("" for a directory import only).
	build func(t *testing.T, in, out string) string
}

func hostileCases() []hostileCase {
	return []hostileCase{
		{"sessionId climbs out", func(t *testing.T, in, out string) string {
			rel, _ := filepath.Rel(in, filepath.Join(out, "victim"))
			p := filepath.Join(in, "s.jsonl")
			writeFile(t, p, clLine("u-1", "", rel, "hello"))
			return p
		}},
		{"sessionId climbs out with the stem's name", func(t *testing.T, in, out string) string {
			p := filepath.Join(in, "victim.jsonl")
			writeFile(t, p, clLine("u-1", "", "../outside/victim", "hello"))
			return p
		}},
		{"sessionId is absolute", func(t *testing.T, in, out string) string {
			p := filepath.Join(in, "s.jsonl")
			writeFile(t, p, clLine("u-1", "", filepath.Join(out, "victim"), "hello"))
			return p
		}},
		{"the stem's directory is a symlink out", func(t *testing.T, in, out string) string {
			p := filepath.Join(in, "s.jsonl")
			writeFile(t, p, clLine("u-1", "", "s", "hello"))
			symlink(t, filepath.Join(out, "victim"), filepath.Join(in, "s"))
			return p
		}},
		{"the subagents directory is a symlink out", func(t *testing.T, in, out string) string {
			p := filepath.Join(in, "s.jsonl")
			writeFile(t, p, clLine("u-1", "", "s", "hello"))
			symlink(t, filepath.Join(out, "victim", "subagents"), filepath.Join(in, "s", "subagents"))
			return p
		}},
		{"an agent file is a symlink out", func(t *testing.T, in, out string) string {
			p := filepath.Join(in, "s.jsonl")
			writeFile(t, p, clLine("u-1", "", "s", "hello"))
			symlink(t, filepath.Join(out, "victim", "subagents", "agent-v1.jsonl"), filepath.Join(in, "s", "subagents", "agent-v1.jsonl"))
			symlink(t, filepath.Join(out, "agent-v2.jsonl"), filepath.Join(in, "agent-v2.jsonl"))
			return p
		}},
		{"a meta.json is a symlink to credentials", func(t *testing.T, in, out string) string {
			p := filepath.Join(in, "s.jsonl")
			writeFile(t, p, clLine("u-1", "", "s", "hello"))
			writeFile(t, filepath.Join(in, "s", "subagents", "agent-a1.jsonl"), clAgentLine("a-1", "s", "a1", "the agent's task"))
			symlink(t, filepath.Join(out, "creds.json"), filepath.Join(in, "s", "subagents", "agent-a1.meta.json"))
			return p
		}},
		{"a directory of the root is a symlink out", func(t *testing.T, in, out string) string {
			writeFile(t, filepath.Join(in, "mine.jsonl"), clLine("u-1", "", "mine", "hello"))
			symlink(t, out, filepath.Join(in, "link"))
			return ""
		}},
		{"a session file of the root is a symlink out", func(t *testing.T, in, out string) string {
			writeFile(t, filepath.Join(in, "mine.jsonl"), clLine("u-1", "", "mine", "hello"))
			symlink(t, filepath.Join(out, "victim.jsonl"), filepath.Join(in, "v.jsonl"))
			symlink(t, filepath.Join(out, "codex.jsonl"), filepath.Join(in, "rollout.jsonl"))
			return ""
		}},
		{"FIFOs where files are read", func(t *testing.T, in, out string) string {
			p := filepath.Join(in, "s.jsonl")
			writeFile(t, p, clLine("u-1", "", "s", "hello"))
			mkfifo(t, filepath.Join(in, "fifo.jsonl"))
			mkfifo(t, filepath.Join(in, "s", "subagents", "agent-f1.jsonl"))
			writeFile(t, filepath.Join(in, "s", "subagents", "agent-a1.jsonl"), clAgentLine("a-1", "s", "a1", "the agent's task"))
			mkfifo(t, filepath.Join(in, "s", "subagents", "agent-a1.meta.json"))
			mkfifo(t, filepath.Join(in, "agent-f2.jsonl"))
			return p
		}},
	}
}

func TestImportStaysInside(t *testing.T) {
	ctx := context.Background()
	for _, c := range hostileCases() {
		t.Run(c.name, func(t *testing.T) {
			base := t.TempDir()
			in, out := filepath.Join(base, "in"), filepath.Join(base, "outside")
			outsideTree(t, out)
			if err := os.MkdirAll(in, 0o755); err != nil {
				t.Fatal(err)
			}
			file := c.build(t, in, out)
			targets := []string{in}
			if file != "" {
				targets = append(targets, file)
			}
			for _, target := range targets {
				store := session.NewMemoryStore()
				done := make(chan struct{})
				var rep *Report
				go func() {
					defer close(done)
					rep, _ = Import(ctx, store, target, nil)
				}()
				select {
				case <-done:
				case <-time.After(2 * time.Minute): // a guard against a hang, not a timing condition
					t.Fatalf("import of %s hangs (a FIFO opened?)", target)
				}
				if rep == nil {
					t.Fatalf("import of %s: no report", target)
				}
				if got := storeDump(t, ctx, store); strings.Contains(got, canaryOut) {
					t.Errorf("import of %s read outside its root: the store holds the canary:\n%s", target, got)
				}
				if len(rep.Imported) == 0 {
					t.Errorf("import of %s imported nothing (the root's own session is expected): %v", target, rep.Errors)
				}
				if target == in {
					checkNamed(t, in, rep)
				}
			}
		})
	}
}

// checkNamed fails unless every link and special file below in is named
// in the report of its import: in NotImported, or in a session's
// Malformed.
func checkNamed(t *testing.T, in string, rep *Report) {
	t.Helper()
	named := map[string]bool{}
	for _, e := range rep.NotImported {
		named[e.Path] = true
	}
	for _, s := range rep.Imported {
		for _, e := range s.Malformed {
			named[e.Path] = true
		}
	}
	filepath.WalkDir(in, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && !d.Type().IsRegular() && !named[p] && !namedAbove(named, in, p) {
			t.Errorf("%s (%v) is not named in the report: not imported %v", p, d.Type(), rep.NotImported)
		}
		return nil
	})
}

// storeDump is every header and entry of the store, as JSON.
func storeDump(t testing.TB, ctx context.Context, store session.Store) string {
	t.Helper()
	var b bytes.Buffer
	page, err := store.List(ctx, session.ListOptions{Limit: 10000, Archived: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, info := range page.Sessions {
		log, err := store.Load(ctx, info.ID)
		if err != nil {
			t.Fatal(err)
		}
		if err := session.WriteLog(&b, log); err != nil {
			t.Fatal(err)
		}
	}
	return b.String()
}

// readAt runs a format's reader on the file at path, its directory the
// root, as Import does for a file named alone.
func readAt(ctx context.Context, read func(context.Context, *root, string) ([]*Parsed, error), path string) ([]*Parsed, error) {
	rt, err := openRoot(filepath.Dir(path))
	if err != nil {
		return nil, err
	}
	defer rt.close()
	return read(ctx, rt, filepath.Base(path))
}

// ownedIn reports whether claudeOwned reads the file at path along with
// another, in a root at dir.
func ownedIn(t testing.TB, dir, path string) bool {
	t.Helper()
	rt, err := openRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer rt.close()
	rel, err := filepath.Rel(dir, path)
	if err != nil {
		t.Fatal(err)
	}
	return claudeOwned(rt, rel) != nil
}

// An id from a file's contents never walks the tree, even inside the
// root: a session whose sessionId climbs to another session's directory
// does not take that session's subagents as its own.
func TestImportIDsAreNotPaths(t *testing.T) {
	const canary = "CANARY-OTHER-SESSION-51c2"
	ctx := context.Background()
	for _, sid := range []string{"q/../other", "./other", "other/.", `q\..\other`, "other/"} {
		t.Run(sid, func(t *testing.T) {
			in := t.TempDir()
			writeFile(t, filepath.Join(in, "x.jsonl"), clLine("x-1", "", sid, "mine"))
			writeFile(t, filepath.Join(in, "other.jsonl"), clLine("o-1", "", "other", "theirs"))
			writeFile(t, filepath.Join(in, "other", "subagents", "agent-o1.jsonl"), clAgentLine("oa-1", "other", "o1", "their agent "+canary))
			writeFile(t, filepath.Join(in, "agent-o2.jsonl"), clAgentLine("ob-1", sid, "o2", "an agent naming the id "+canary))
			store := session.NewMemoryStore()
			rep, err := Import(ctx, store, filepath.Join(in, "x.jsonl"), nil)
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range rep.Imported {
				if s.ID != rep.Imported[0].ID && s.ParentSession == rep.Imported[0].ID && !strings.Contains(s.Source, "agent-o2") {
					t.Errorf("x's import took %s (%s) as its child", s.ID, s.Source)
				}
			}
			if got := storeDump(t, ctx, store); strings.Contains(got, "their agent "+canary) {
				t.Errorf("x's import read other's subagents:\n%s", got)
			}
		})
	}
}

// namedAbove reports whether a directory between in and p is named: a
// directory the import could not read (a name that is not UTF-8, say)
// is reported whole, which names everything below it.
func namedAbove(named map[string]bool, in, p string) bool {
	for d := filepath.Dir(p); len(d) > len(in); d = filepath.Dir(d) {
		if named[d] {
			return true
		}
	}
	return false
}
