package session_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// faultyFS mounts, for a test, an ext4 file system whose disk fails: a
// loop device over a sparse file much larger than the small tmpfs that
// holds it. Writes go to the page cache and succeed; once the tmpfs is
// full, writing them back fails, and fsync says so (ENOSPC or EIO) as a
// dying disk would. It needs root and loop devices; the test is skipped
// with the reason where the machine has neither. remount unmounts the
// file system, gives the disk room again and mounts it, as after a
// reboot with the disk replaced: what did not reach the disk is gone.
func faultyFS(t *testing.T, room string) (dir string, remount func()) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root, to mount a failing file system on a loop device")
	}
	base := t.TempDir()
	back, mnt := filepath.Join(base, "back"), filepath.Join(base, "mnt")
	for _, d := range []string{back, mnt} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	run := func(name string, args ...string) (string, error) {
		out, err := exec.Command(name, args...).CombinedOutput()
		return strings.TrimSpace(string(out)), err
	}
	if err := syscall.Mount("tmpfs", back, "tmpfs", 0, "size="+room); err != nil {
		t.Skipf("cannot mount a tmpfs for the failing disk: %v", err)
	}
	t.Cleanup(func() { syscall.Unmount(back, syscall.MNT_DETACH) })
	img := filepath.Join(back, "disk.img")
	if err := os.WriteFile(img, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(img, 256<<20); err != nil {
		t.Fatal(err)
	}
	dev, err := run("losetup", "-f", "--show", img)
	if err != nil {
		t.Skipf("no loop device for the failing disk: %v: %s", err, dev)
	}
	t.Cleanup(func() { run("losetup", "-d", dev) })
	if out, err := run("mkfs.ext4", "-q", "-F", dev); err != nil {
		t.Skipf("cannot make the failing disk's file system: %v: %s", err, out)
	}
	mount := func() {
		if err := syscall.Mount(dev, mnt, "ext4", 0, "errors=continue"); err != nil {
			t.Fatalf("mount the failing disk: %v", err)
		}
	}
	mount()
	t.Cleanup(func() { syscall.Unmount(mnt, syscall.MNT_DETACH) })
	return mnt, func() {
		if err := syscall.Unmount(mnt, 0); err != nil {
			t.Fatalf("unmount the failing disk: %v", err)
		}
		// The disk is repaired: room again for what comes next (what
		// failed to be written stays lost).
		if err := syscall.Mount("tmpfs", back, "tmpfs", syscall.MS_REMOUNT, "size=512m"); err != nil {
			t.Fatalf("repair the failing disk: %v", err)
		}
		mount()
	}
}
