package redact_test

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/agentsession/session/internal/compattest"
	"github.com/agentsession/session/redact"
)

// TestPiCorpus runs JSON on every line of the real pi sessions: they hold
// code, tool output and paths but no secrets, so only home paths may be
// redacted, and none may be left.
func TestPiCorpus(t *testing.T) {
	compattest.Need(t)
	files, err := filepath.Glob(filepath.Join(compattest.Dir(), "*.jsonl"))
	if err != nil || len(files) == 0 {
		t.Fatal("no corpus files", err)
	}
	r := redact.New(&redact.Options{Home: []string{}})
	home := regexp.MustCompile(`(^|[^\w.~-])/(home|Users)/\w`)
	var total redact.Report
	lines := 0
	for _, f := range files {
		fh, err := os.Open(f)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(fh)
		sc.Buffer(nil, 64<<20)
		for sc.Scan() {
			lines++
			out, rep, err := r.JSON(sc.Bytes())
			if err != nil {
				t.Fatalf("%s:%d: %v", f, lines, err)
			}
			if !json.Valid(out) {
				t.Fatalf("%s:%d: invalid output", f, lines)
			}
			if home.Match(out) {
				t.Errorf("%s:%d: home path left in %.200s", f, lines, home.Find(out))
			}
			total.Add(rep)
		}
		fh.Close()
		if err := sc.Err(); err != nil {
			t.Fatal(err)
		}
	}
	if total.Counts["home-path"] == 0 || total.Total() != total.Counts["home-path"] {
		t.Errorf("redacted in %d lines: %v, want home paths only", lines, total.Counts)
	}
}
