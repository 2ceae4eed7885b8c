package session

import (
	"bytes"
	"strconv"
	"testing"

	"github.com/agentsession/session/internal/jsonx"
)

// FuzzMigrationSteps runs each migration step by itself over a header
// and arbitrary lines: it never panics, a valid JSON line stays valid, and
// a line it changes comes out as one value the reader takes (a line it
// cannot read it refuses or passes on as it is, for the reader to count
// as malformed). The reader passes over the escapes of value strings
// (jsonx.ValidLoose), so a step that adds a member to such a line keeps
// the foreign escape as it was: the changed line is loose-valid, as the
// line it came from.
func FuzzMigrationSteps(f *testing.F) {
	f.Add(`{"type":"session","version":1,"id":"s"}`, `{"type":"message","message":{"role":"user","content":"hi"}}`+"\n"+`{"type":"compaction","summary":"s","firstKeptEntryIndex":1}`)
	f.Add(`{"type":"session","version":2,"id":"s"}`, `{"type":"message","id":"a","parentId":null,"message":{"role":"hookMessage","customType":"x","content":"c"}}`)
	f.Add(`{"type":"session"}`, "not json\n{}\n[1,2]\n{\"type\":\"session\"}\n{\"firstKeptEntryIndex\":99}")
	// A value string with an escape JSON has not (\e): the reader passes
	// over it, so the steps must keep it when they add members.
	f.Add(`{"type":"session","version":1,"id":"s","x":"\e"}`, `{"type":"message","message":{"role":"user","content":"hi"},"x":"\e"}`)
	f.Fuzz(func(t *testing.T, header, body string) {
		for _, m := range migrations {
			t.Run(strconv.Itoa(m.from), func(t *testing.T) {
				step := m.step()
				check := func(in, out []byte, err error) {
					if err != nil || out == nil {
						return
					}
					in, out = bytes.TrimSpace(in), bytes.TrimSpace(out)
					if jsonx.Valid(in) && !jsonx.Valid(out) {
						t.Fatalf("step %d turned valid JSON %q into invalid JSON %q", m.from, in, out)
					}
					if !bytes.Equal(in, out) && !jsonx.ValidLoose(out) {
						t.Fatalf("step %d turned %q into %q, which the reader cannot take", m.from, in, out)
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
