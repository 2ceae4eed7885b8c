package session

import (
	"bytes"
	"strconv"
	"testing"

	"github.com/agentsession/session/internal/jsonx"
)

// FuzzMigrationSteps runs each migration step by itself over a header
// and arbitrary lines: it never panics, and a line it changes comes out
// as one valid JSON value (a line it cannot read it refuses or passes on
// as it is, for the reader to count as malformed).
func FuzzMigrationSteps(f *testing.F) {
	f.Add(`{"type":"session","version":1,"id":"s"}`, `{"type":"message","message":{"role":"user","content":"hi"}}`+"\n"+`{"type":"compaction","summary":"s","firstKeptEntryIndex":1}`)
	f.Add(`{"type":"session","version":2,"id":"s"}`, `{"type":"message","id":"a","parentId":null,"message":{"role":"hookMessage","customType":"x","content":"c"}}`)
	f.Add(`{"type":"session"}`, "not json\n{}\n[1,2]\n{\"type\":\"session\"}\n{\"firstKeptEntryIndex\":99}")
	f.Fuzz(func(t *testing.T, header, body string) {
		for _, m := range migrations {
			t.Run(strconv.Itoa(m.from), func(t *testing.T) {
				step := m.step()
				check := func(in, out []byte, err error) {
					changed := !bytes.Equal(in, out)
					if err == nil && out != nil && (changed || jsonx.Valid(bytes.TrimSpace(in))) && !jsonx.Valid(bytes.TrimSpace(out)) {
						t.Fatalf("step %d turned %q into invalid JSON %q", m.from, in, out)
					}
				}
				out, err := step([]byte(header), true)
				check([]byte(header), out, err)
				for _, line := range bytes.Split([]byte(body), []byte("\n")) {
					out, err := step(line, false)
					check(line, out, err)
				}
			})
		}
	})
}
