package workspace

import (
	"testing"
)

func TestSmoke(t *testing.T) {
	w, dir, _ := open(t,
		spec{path: "a.txt", content: "one\ntwo\nthree\n"},
		spec{path: "bin/run", content: "#!/bin/sh\necho hi\n", mode: 0o755},
		spec{path: "link", content: "->a.txt"},
		spec{path: "empty/"},
		spec{path: "sub/deep/x.go", content: "package x\n"},
	)
	a := snap(t, w)
	stA := state(t, dir)
	t.Logf("%+v", a)
	t.Logf("%s", a.Manifest.Encode())
	build(t, dir, spec{path: "a.txt", content: "one\n2\nthree\nfour\n"}, spec{path: "new.txt", content: "n\n"}, spec{path: "link", content: "->bin/run"})
	b := snap(t, w)
	d, err := w.Diff(ctx, a.ID, b.ID, &DiffOptions{Unified: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range d.Files {
		t.Logf("%s %s +%d -%d\n%s", f.Path, f.Status, f.Additions, f.Deletions, f.Unified)
	}
	res, err := w.Restore(ctx, a.ID, &RestoreOptions{Expect: b.ID})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%+v", res)
	equalState(t, state(t, dir), stA)
}
