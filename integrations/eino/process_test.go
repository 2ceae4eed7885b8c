package eino_test

import (
	"context"
	"os"
	"os/exec"
	"testing"

	"github.com/agentsession/session/integrations/eino"
)

// writerEnv makes the test binary a child that sets one checkpoint in
// the FileStore directory it names, and exits.
const writerEnv = "AGENTSESSION_EINO_WRITER_DIR"

func TestMain_writer(t *testing.T) {
	dir := os.Getenv(writerEnv)
	if dir == "" {
		t.Skip("the child of TestOtherProcessSetIsSeen")
	}
	s, err := eino.New(openFiles(t, dir), nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Set(context.Background(), "shared", []byte(`{"by":"child"}`)); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}

// A Store that has a checkpoint's session open sees what another
// process set since: Get returns its value, and a Set goes after it.
func TestOtherProcessSetIsSeen(t *testing.T) {
	if os.Getenv(writerEnv) != "" {
		t.Skip("the child itself")
	}
	ctx := context.Background()
	dir := t.TempDir()
	s := newStore(t, openFiles(t, dir))
	if err := s.Set(ctx, "shared", []byte(`{"by":"parent"}`)); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run", "^TestMain_writer$", "-test.count", "1")
	cmd.Env = append(os.Environ(), writerEnv+"="+dir)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	got, ok, err := s.Get(ctx, "shared")
	if string(got) != `{"by":"child"}` || !ok || err != nil {
		t.Fatalf("Get after the other process's Set = %q, %v, %v", got, ok, err)
	}
	if err := s.Set(ctx, "shared", []byte(`{"by":"parent again"}`)); err != nil {
		t.Fatal(err)
	}
	revs, err := newStore(t, openFiles(t, dir)).History(ctx, "shared")
	if err != nil {
		t.Fatal(err)
	}
	var seq []string
	for _, r := range revs {
		seq = append(seq, string(r.Data))
	}
	want := []string{`{"by":"parent"}`, `{"by":"child"}`, `{"by":"parent again"}`}
	if len(seq) != len(want) || seq[0] != want[0] || seq[1] != want[1] || seq[2] != want[2] {
		t.Fatalf("History = %q, want %q", seq, want)
	}
}
