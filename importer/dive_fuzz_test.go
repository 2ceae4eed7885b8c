package importer

import (
	"bytes"
	"context"
	"os"
	"testing"

	session "github.com/agentsession/session"
)

// FuzzImportDive: any bytes read as a Dive session file must not panic
// (nor hang: the reader is one pass over the lines, each decoded a
// bounded number of times), and what is read must store. Memory is
// bounded by the reader's caps (DiveMaxLineBytes a line,
// DiveMaxFileBytes a file): a fuzz input is far below them, so the cost
// is linear in its size. Seeded with the real files of testdata/dive.
func FuzzImportDive(f *testing.F) {
	for _, n := range diveNames {
		b, err := os.ReadFile(diveFile(n))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte(`{"line_type":"header","data":{"id":"s","suspended":true,"pending_tool_calls":[{"id":"c","name":"n"}]}}` + "\n" +
		`{"line_type":"event","data":{"id":"e","type":"turn","messages":[{"role":"assistant","content":[{"type":"tool_use","id":"c","name":"n","input":"x"}]}],"metadata":{"suspended":true}}}`))
	f.Add([]byte(`{"line_type":"header","data":{}}` + "\n" + `{"line_type":"event","data":{"type":"compaction","messages":[{"role":"user","content":[{"type":"summary","summary":"s"}]}]}}` + "\n" + `{"line_type":"ev`))
	f.Add([]byte(`{"line_type":"header_v2","data":{"id":"s"}}`))
	f.Add([]byte("\n\n{}\n[]\nnull\n\"x\"\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := parseDive(context.Background(), bytes.NewReader(data), "fuzz.jsonl")
		if err != nil {
			return // a header of another version: refused with an error
		}
		if session.ValidateID(p.Header.ID) != nil {
			t.Fatalf("invalid session id %q", p.Header.ID)
		}
		fuzzStoreParsed(t, p)
	})
}
