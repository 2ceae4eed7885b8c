package workspace

import (
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	session "github.com/agentsession/session"
)

// TestRestoreKilled: a child process restores two snapshots in turn and
// is killed (SIGKILL) at random points; every file is then either as in
// one snapshot or as in the other, never torn, and a restore afterwards
// brings the tree back exactly. Rounds: AGENTSESSION_CRASH_ROUNDS
// (default 25).
func TestRestoreKilled(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("SIGKILL")
	}
	rounds := 25
	if n, err := strconv.Atoi(os.Getenv("AGENTSESSION_CRASH_ROUNDS")); err == nil {
		rounds = n
	}
	dir := t.TempDir()
	blobs := filepath.Join(t.TempDir(), "blobs")
	r := rand.New(rand.NewPCG(3, 4))
	versions := map[string][2]string{} // path -> A, B ("" absent)
	mk := func(tag string, i int) string {
		return strings.Repeat(fmt.Sprintf("%s%d-", tag, i), 500+r.IntN(8000))
	}
	for i := range 150 {
		p := fmt.Sprintf("d%d/f%d", i%7, i)
		a, b := mk("a", i), mk("b", i)
		switch i % 10 {
		case 0:
			a = ""
		case 1:
			b = ""
		}
		versions[p] = [2]string{a, b}
	}
	write := func(which int) {
		for p, v := range versions {
			full := filepath.Join(dir, p)
			if v[which] == "" {
				os.Remove(full)
				continue
			}
			os.MkdirAll(filepath.Dir(full), 0o755)
			os.WriteFile(full, []byte(v[which]), 0o644)
		}
	}
	w := reopen(t, dir, session.OpenBlobDir(blobs, nil), nil)
	write(0)
	a := snap(t, w)
	write(1)
	b := snap(t, w)
	check := func(round int) {
		for p, v := range versions {
			data, err := os.ReadFile(filepath.Join(dir, p))
			got := string(data)
			if err != nil {
				got = ""
			}
			if got != v[0] && got != v[1] {
				t.Fatalf("round %d: %s is torn (%d bytes; A %d, B %d)", round, p, len(got), len(v[0]), len(v[1]))
			}
		}
	}
	for round := range rounds {
		cmd := exec.Command(os.Args[0], "-test.run=^TestRestoreChild$")
		cmd.Env = append(os.Environ(), "AGENTSESSION_WS_CHILD=restore", "AGENTSESSION_WS_DIR="+dir, "AGENTSESSION_WS_BLOBS="+blobs, "AGENTSESSION_WS_A="+a.ID, "AGENTSESSION_WS_B="+b.ID)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Duration(20+r.IntN(200)) * time.Millisecond)
		cmd.Process.Signal(syscall.SIGKILL)
		cmd.Wait()
		check(round)
	}
	w2 := reopen(t, dir, session.OpenBlobDir(blobs, nil), nil)
	if _, err := w2.Restore(ctx, a.ID, &RestoreOptions{Force: true}); err != nil {
		t.Fatal(err)
	}
	write(0)
	want := state(t, dir)
	if _, err := w2.Restore(ctx, b.ID, &RestoreOptions{Force: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := w2.Restore(ctx, a.ID, &RestoreOptions{Force: true}); err != nil {
		t.Fatal(err)
	}
	equalState(t, state(t, dir), want) // no temporary file left either
}

// TestRestoreChild is the child of TestRestoreKilled.
func TestRestoreChild(t *testing.T) {
	if os.Getenv("AGENTSESSION_WS_CHILD") != "restore" {
		t.Skip("the child of TestRestoreKilled")
	}
	w, err := Open(os.Getenv("AGENTSESSION_WS_DIR"), &Options{Blobs: session.OpenBlobDir(os.Getenv("AGENTSESSION_WS_BLOBS"), nil)})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; ; i++ {
		id := os.Getenv("AGENTSESSION_WS_A")
		if i%2 == 1 {
			id = os.Getenv("AGENTSESSION_WS_B")
		}
		if _, err := w.Restore(ctx, id, &RestoreOptions{Force: true}); err != nil {
			t.Fatal(err)
		}
	}
}
