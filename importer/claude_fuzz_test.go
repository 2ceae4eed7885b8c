package importer

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	session "github.com/agentsession/session"
)

// FuzzImportClaude imports arbitrary content as a Claude Code
// transcript: it must not panic, whatever it reads must be storable
// (Import into a MemoryStore succeeds) unless the file is refused with
// ErrClaudeConversation (its conversation cannot be rebuilt), and every
// leaf's context must
// build; a file imported after its first half was resumes that import,
// or reports a conflict (an entry it made changed: a message cut in the
// middle), never fails otherwise. Memory stays bounded by the reader's limits (claudeMaxLineBytes,
// claudeMaxLines, claudeMaxFileBytes), lowered here so that the fuzzer's
// inputs reach them.
//
// CI: go test ./importer/ -run '^$' -fuzz FuzzImportClaude -fuzztime 2000x
func FuzzImportClaude(f *testing.F) {
	seeds, _ := filepath.Glob("testdata/claude/projects/*/*.jsonl")
	sub, _ := filepath.Glob("testdata/claude/projects/*/*/subagents/*.jsonl")
	par, _ := filepath.Glob("testdata/claude/parallel/*.jsonl")
	for _, p := range append(append(seeds, sub...), par...) {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	for _, lines := range [][]string{
		{`{"type":"user","uuid":"a","message":{"content":[{"type":"tool_result","tool_use_id":"t","content":[{"type":"image","source":{"type":"base64","data":"x"}}]}]}}`},
		{`{"type":"system","subtype":"compact_boundary","uuid":"c","logicalParentUuid":"c"}`, `{"type":"user","uuid":"d","parentUuid":"c","isCompactSummary":true,"message":{"content":"s"}}`},
		{`{"type":"assistant","uuid":"a","message":{"id":"m","content":[]}}`, `{"type":"assistant","uuid":"b","parentUuid":"a","message":{"id":"m","content":"x"}}`},
		{`{"type":"user","uuid":"a","isSidechain":true,"agentId":"../x"}`, `{"type":"summary","leafUuid":"a","summary":"t"}`},
	} {
		f.Add([]byte(strings.Join(lines, "\n")))
	}
	defer func(l, n int, b int64) { claudeMaxLineBytes, claudeMaxLines, claudeMaxFileBytes = l, n, b }(claudeMaxLineBytes, claudeMaxLines, claudeMaxFileBytes)
	claudeMaxLineBytes, claudeMaxLines, claudeMaxFileBytes = 4<<10, 200, 256<<10
	f.Fuzz(func(t *testing.T, data []byte) {
		ctx := context.Background()
		path := filepath.Join(t.TempDir(), "s1.jsonl")
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		ps, err := readAt(ctx, readClaude, path)
		if errors.Is(err, ErrClaudeConversation) {
			return // a file whose conversation cannot be rebuilt: refused, typed
		}
		if err != nil {
			t.Fatalf("read: %v", err)
		}
		store := session.NewMemoryStore()
		if i := bytes.IndexByte(data[len(data)/2:], '\n'); i >= 0 {
			half := filepath.Join(t.TempDir(), "s1.jsonl")
			if err := os.WriteFile(half, data[:len(data)/2+i+1], 0o644); err != nil {
				t.Fatal(err)
			}
			hs, err := readAt(ctx, readClaude, half)
			if err != nil && !errors.Is(err, ErrClaudeConversation) {
				t.Fatalf("read: %v", err)
			}
			for _, p := range hs {
				if err := write(ctx, store, p, "", &Options{}, &Report{}); err != nil {
					t.Fatalf("write the first half: %v", err)
				}
			}
		}
		rep := &Report{}
		for _, p := range ps {
			if err := write(ctx, store, p, "", &Options{}, rep); err != nil && !errors.Is(err, session.ErrConflict) {
				t.Fatalf("write: %v", err)
			}
		}
		for _, imp := range rep.Imported {
			s, err := session.Open(ctx, store, imp.ID)
			if err != nil {
				t.Fatalf("open %s: %v", imp.ID, err)
			}
			if s.Len() != imp.Entries {
				t.Fatalf("%s: %d entries stored, %d read", imp.ID, s.Len(), imp.Entries)
			}
			for _, leaf := range s.Leaves() {
				if _, err := s.ContextAt(leaf.ID()); err != nil {
					t.Fatalf("context at %s: %v", leaf.ID(), err)
				}
			}
		}
	})
}
