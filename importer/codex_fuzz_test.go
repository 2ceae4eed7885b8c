package importer

import (
	"bytes"
	"context"
	"os"
	"testing"

	session "github.com/agentsession/session"
)

// fuzzStoreParsed stores p (and its children) in a fresh MemoryStore and reads
// it back: whatever a reader made of hostile input must be storable and
// give a context.
func fuzzStoreParsed(t *testing.T, p *Parsed) {
	ctx := context.Background()
	store := session.NewMemoryStore()
	rep := &Report{}
	if err := write(ctx, store, p, "", &Options{}, rep); err != nil {
		t.Fatalf("write: %v", err)
	}
	for _, imp := range rep.Imported {
		s, err := session.Open(ctx, store, imp.ID)
		if err != nil {
			t.Fatalf("open %s: %v", imp.ID, err)
		}
		_ = s.Context()
		if _, err := s.Messages(ctx); err != nil {
			t.Fatalf("messages: %v", err)
		}
		s.Close()
	}
}

// FuzzImportCodex: any bytes read as a rollout must not panic, and what
// is read must store. Memory is bounded by the reader's caps
// (CodexMaxLineBytes a line, CodexMaxFileBytes a file): a fuzz input is
// far below them, so the cost is linear in its size.
func FuzzImportCodex(f *testing.F) {
	for _, path := range []string{codexNew, codexOld} {
		b, err := os.ReadFile(path)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte(`{"timestamp":"2025-10-29T00:00:00Z","type":"session_meta","payload":{"id":"x"}}` + "\n" +
		`{"type":"event_msg","payload":{"type":"token_count","input_tokens":1}}`))
	f.Add([]byte(`{"id":"x","timestamp":"t"}` + "\n" + `{"record_type":"state"}` + "\n" + `{"type":"message","role":"user","content":"hi"}`))
	f.Add([]byte("\n\n{}\n[]\nnull\n\"x\"\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := parseCodex(context.Background(), bytes.NewReader(data), "fuzz.jsonl")
		if err != nil {
			t.Fatalf("parse: %v", err)
		}
		if session.ValidateID(p.Header.ID) != nil {
			t.Fatalf("invalid session id %q", p.Header.ID)
		}
		fuzzStoreParsed(t, p)
	})
}
