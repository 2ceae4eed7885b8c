package importer

import (
	"context"
	"os"
	"testing"
)

// FuzzImportOpenCode: any bytes read as an OpenCode export must not
// panic; an export read must store. An export is read whole, so memory
// is bounded by OpenCodeMaxFileBytes (readOpenCode refuses a larger
// file); a fuzz input is far below it.
func FuzzImportOpenCode(f *testing.F) {
	for _, path := range []string{ocExport, ocParentChild} {
		b, err := os.ReadFile(path)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte(`{"info":{"id":"ses_1"},"messages":[{"info":{"role":"assistant","summary":true},"parts":[{"type":"text","text":"s"}]}]}`))
	f.Add([]byte(`[{"info":{"id":"a"}},{"info":{"id":"b","parentID":"a"}},{"info":{"id":"a","parentID":"b"}}]`))
	f.Add([]byte(`{"info":{"id":"ses_1"},"messages":[{"info":{"role":"user"},"parts":[{"type":"compaction","tail_start_id":"m"}]}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		ps, err := parseOpenCode(context.Background(), data, "fuzz.json")
		if err != nil {
			return // not an export: refused with an error
		}
		for _, p := range ps {
			fuzzStoreParsed(t, p)
		}
	})
}
