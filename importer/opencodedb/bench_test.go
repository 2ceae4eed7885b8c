package opencodedb_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	session "github.com/agentsession/session"
	"github.com/agentsession/session/importer"
)

// BenchmarkImportDatabase imports a database of 20 sessions of 100 turns
// each (a prompt; an answer of two steps, reasoning and a tool call,
// then text): 4,000 message and 14,000 part rows, 16,000 entries, into a
// MemoryStore, copy of the database included.
func BenchmarkImportDatabase(b *testing.B) {
	const sessions, turns = 20, 100
	n := 0
	id := func(prefix string) string { n++; return fmt.Sprintf("%s_%012x%014d", prefix, 0x9a1b2c3d0000+n, n) }
	var exports []string
	for s := range sessions {
		sid := fmt.Sprintf("ses_4f2a9c1e7ffe%014d", s)
		var msgs []string
		for i := range turns {
			t0 := 1761700000000 + int64(i)*10000
			u, a := id("msg"), id("msg")
			msgs = append(msgs, fmt.Sprintf(`{"info":{"id":%q,"sessionID":%q,"role":"user","time":{"created":%d},"agent":"build","model":{"providerID":"anthropic","modelID":"claude-sonnet-4-5"}},"parts":[{"id":%q,"messageID":%q,"sessionID":%q,"type":"text","text":"Step %d: read src/file%d.go and fix what fails."}]}`,
				u, sid, t0, id("prt"), u, sid, i, i))
			parts := []string{
				`"type":"step-start","snapshot":"4b825dc642cb6eb9a060e54bf8d69288fbee4904"`,
				fmt.Sprintf(`"type":"reasoning","text":"The file needs reading first.","time":{"start":%d,"end":%d}`, t0+200, t0+300),
				fmt.Sprintf(`"callID":"toolu_%d","tool":"read","type":"tool","state":{"status":"completed","input":{"filePath":"/home/dev/web/src/file%d.go"},"output":"package web\n\nfunc F() int { return 1 }\n","title":"src/file.go","metadata":{},"time":{"start":%d,"end":%d}}`, n, i, t0+400, t0+500),
				`"type":"step-finish","reason":"tool-calls","cost":0.01,"tokens":{"input":1200,"output":40,"reasoning":0,"cache":{"read":500,"write":100}}`,
				`"type":"step-start"`,
				`"type":"text","text":"Fixed: F returns 1."`,
				`"type":"step-finish","reason":"stop","cost":0.0025,"tokens":{"input":1300,"output":40,"reasoning":0,"cache":{"read":1700,"write":0}}`,
			}
			var ps []string
			for _, p := range parts {
				ps = append(ps, fmt.Sprintf(`{"id":%q,"messageID":%q,"sessionID":%q,%s}`, id("prt"), a, sid, p))
			}
			msgs = append(msgs, fmt.Sprintf(`{"info":{"id":%q,"sessionID":%q,"role":"assistant","time":{"created":%d,"completed":%d},"parentID":%q,"modelID":"claude-sonnet-4-5","providerID":"anthropic","mode":"build","path":{"cwd":"/home/dev/web","root":"/home/dev/web"},"cost":0.0125,"tokens":{"input":1200,"output":80,"reasoning":0,"cache":{"read":500,"write":100}}},"parts":[%s]}`,
				a, sid, t0+100, t0+9000, u, strings.Join(ps, ",")))
		}
		exports = append(exports, fmt.Sprintf(`{"info":{"id":%q,"slug":"brave-otter","version":"1.2.0","projectID":"prj_1","directory":"/home/dev/web","title":"Session %d","time":{"created":1761700000000,"updated":1761700040000}},"messages":[%s]}`,
			sid, s, strings.Join(msgs, ",")))
	}
	path := buildDB(b, b.TempDir(), firstSchema, []byte("["+strings.Join(exports, ",")+"]"))
	b.ResetTimer()
	for range b.N {
		rep, err := importer.Import(context.Background(), session.NewMemoryStore(), path, nil)
		if err != nil || len(rep.Imported) != sessions || rep.Imported[0].Entries != 4*turns || len(rep.Errors) != 0 {
			b.Fatalf("%+v, %v", rep, err)
		}
	}
	b.ReportMetric(float64(4*turns*sessions*b.N)/b.Elapsed().Seconds(), "entries/s")
}
