package main

import (
	"bytes"
	"os"
	"testing"
)

// TestUpToDate fails while redact/gitleaks_rules.go differs from what
// this command writes with the gitleaks version of go.mod: after a
// version change, run go generate ./redact/ and commit the result.
func TestUpToDate(t *testing.T) {
	want, err := generate()
	if err != nil {
		t.Fatal(err)
	}
	have, err := os.ReadFile("../gitleaks_rules.go")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(have, want) {
		t.Fatal("redact/gitleaks_rules.go is out of date with the gitleaks version of redact/gitleaksgen/go.mod: run go generate ./redact/")
	}
}

// TestEveryRuleKept: each rule of gitleaks' configuration is in the
// generated file, but those that apply to file paths only.
func TestEveryRuleKept(t *testing.T) {
	cfg, err := load()
	if err != nil {
		t.Fatal(err)
	}
	src, err := generate()
	if err != nil {
		t.Fatal(err)
	}
	kept := 0
	for _, id := range cfg.OrderedRules {
		r := cfg.Rules[id]
		in := bytes.Contains(src, []byte(`{id: "`+id+`",`))
		if r.Path != nil || r.Regex == nil {
			if in {
				t.Errorf("%s: a path rule, written", id)
			}
			continue
		}
		if !in {
			t.Errorf("%s: missing", id)
		}
		kept++
	}
	if kept < 200 {
		t.Errorf("only %d rules kept", kept)
	}
}
