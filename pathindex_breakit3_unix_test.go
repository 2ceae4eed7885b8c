//go:build unix

package session

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestBreakIt3IndexNotAFile: the index's name holds a FIFO (no writer:
// an open that waited for one would hang), a directory, a symlink to the
// log itself or to another file: the open reads whole, at once.
func TestBreakIt3IndexNotAFile(t *testing.T) {
	for _, c := range []struct {
		name string
		make func(t *testing.T, idx, logPath string)
	}{
		{"fifo", func(t *testing.T, idx, _ string) { require.NoError(t, syscall.Mkfifo(idx, 0o600)) }},
		{"directory", func(t *testing.T, idx, _ string) { require.NoError(t, os.Mkdir(idx, 0o700)) }},
		{"symlink to the log", func(t *testing.T, idx, logPath string) {
			rel, err := filepath.Rel(filepath.Dir(idx), logPath)
			require.NoError(t, err)
			require.NoError(t, os.Symlink(rel, idx))
		}},
		{"symlink out of the root", func(t *testing.T, idx, _ string) { require.NoError(t, os.Symlink("/dev/zero", idx)) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			id := b3Session(t, dir)
			idx := b3IndexPath(t, dir, id)
			require.NoError(t, os.Remove(idx))
			c.make(t, idx, b3LogPath(t, dir))
			partial, got, want := b3OpenVsWhole(t, dir, id)
			require.Equal(t, want, got)
			require.False(t, partial)
		})
	}
}
