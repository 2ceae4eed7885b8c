package session

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
)

// Replacing a session file: Rewrite, the migration of old file format
// versions (on Load, and MigrateFile), and the atomic write through a
// temporary file renamed or linked into place that Create uses too.

// Rewrite implements Store: under the exclusive file lock, the file is
// read again and checked against opts (the conditions, and lines that
// are not entries, which are kept unless opts.DropUnreadable); then the
// new file is written beside the old one, synced, renamed over it, and
// the directory synced. Other processes' handles notice the replacement
// at their next append or load.
func (s *FileStore) Rewrite(ctx context.Context, id string, opts RewriteOptions, h Header, entries []Entry) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := checkRewrite(id, h, entries); err != nil {
		return err
	}
	fsess, err := s.file(id)
	if err != nil {
		return err
	}
	if err := lockCtx(ctx, &fsess.mu); err != nil {
		return err
	}
	defer fsess.mu.Unlock()
	if fsess.err != nil {
		return fsess.err
	}
	for attempt := 0; ; attempt++ {
		// The file at the session's name, which the rewrite replaces by
		// name (not one moved meanwhile: see lockAtName).
		if err := s.lockCurrent(ctx, fsess); err != nil {
			return err
		}
		data, replaced, err := readAll(fsess.f, s.lim.MaxLogBytes)
		if err != nil {
			s.closeFile(fsess)
			return s.ioErr(fsess, "read", err)
		}
		if replaced && attempt < 3 {
			s.closeFile(fsess) // another process replaced it: check the new file
			continue
		}
		if hasZstdMagic(data) {
			// A compressed archived session: rewritten plain, in place.
			if data, err = decompressLog(data, s.lim.MaxLogBytes); err != nil {
				s.closeFile(fsess)
				return WithPath(err, s.path(fsess.rel))
			}
		}
		s.markOwn(fsess.id, ChangeRewritten, nil)
		err = s.rewriteChecked(fsess, opts, data, h, entries)
		s.closeFile(fsess)
		if err != nil {
			return err
		}
		// Done: what the store knows of the file is read again when next
		// needed (a failure to read it now would report a rewrite that
		// happened as failed).
		fsess.loaded = false
		s.touched(fsess)
		s.nudge(fsess.rel)
		return nil
	}
}

// rewriteChecked replaces the file, whose bytes are data, if they meet
// opts. Callers hold the exclusive file lock.
func (s *FileStore) rewriteChecked(fsess *fileSession, opts RewriteOptions, data []byte, h Header, entries []Entry) error {
	old, err := DecodeLog(data, &ReadOptions{Limits: s.opts.Limits})
	if err != nil {
		return WithPath(err, s.path(fsess.rel))
	}
	if old.MigratedFrom != 0 {
		return fmt.Errorf("%w: %s is in format version %d; load it first to migrate it", ErrConflict, s.path(fsess.rel), old.MigratedFrom)
	}
	if err := opts.Check(lastID(old.Entries), len(old.Entries)); err != nil {
		return err
	}
	if !opts.DropUnreadable {
		if err := unreadableError(s.path(fsess.rel), old, "the rewrite"); err != nil {
			return err
		}
	}
	return s.rewriteLocked(fsess, h, entries, data)
}

// rewriteLocked replaces the file with h and entries. The caller holds
// the file lock on the old file, whose bytes are old. The size limits
// apply to entries that are not lines of the file already (those stay
// byte for byte).
func (s *FileStore) rewriteLocked(fsess *fileSession, h Header, entries []Entry, old []byte) error {
	h.Version = CurrentVersion
	buf, err := h.appendJSON(nil)
	if err != nil {
		return err
	}
	buf = append(buf, '\n')
	var lines map[string]bool
	keep := func(raw []byte) bool {
		if lines == nil {
			lines = map[string]bool{}
			for _, l := range bytes.Split(old, []byte{'\n'}) {
				if !s.limits.small(l, false) {
					lines[string(l)] = true
				}
			}
		}
		return lines[string(raw)]
	}
	stored, cuts, err := s.storedLinesKeep(context.Background(), fsess.id, nil, entries, keep)
	if err != nil {
		return err
	}
	for _, l := range stored {
		buf = append(append(buf, l...), '\n')
	}
	if err := s.lim.checkLog(buf); err != nil {
		return fmt.Errorf("session: rewrite %s: %w", s.path(fsess.rel), err)
	}
	ino, err := s.writeNew(fsess.rel, buf, nil, true)
	if err != nil {
		return fmt.Errorf("session: rewrite %s: %w", s.path(fsess.rel), err)
	}
	fsess.ownIno = ino
	s.releaseWritten(stored...) // the pins of the blobs the entries refer to
	s.reportCuts(cuts)
	return nil
}

// migrate rewrites a version 1 or 2 file in version 3, if it still holds
// data when the lock is taken.
func (s *FileStore) migrate(ctx context.Context, fsess *fileSession, data []byte, log *Log) error {
	if err := s.lockAtName(ctx, fsess); err != nil {
		return err
	}
	defer s.closeFile(fsess) // read again, whatever happened
	now, replaced, err := readAll(fsess.f, s.lim.MaxLogBytes)
	if err != nil {
		return s.ioErr(fsess, "read", err)
	}
	if hasZstdMagic(now) {
		// Compressed as it was (by hand, or by a version that compressed
		// without migrating): migrated from its bytes, written plain.
		if now, err = decompressLog(now, s.lim.MaxLogBytes); err != nil {
			return WithPath(err, s.path(fsess.rel))
		}
	}
	if replaced || !bytes.Equal(now, data) {
		return nil // someone else changed it
	}
	out, err := migrateFile(data, log.MigratedFrom, &ReadOptions{Strict: s.opts.Strict, Limits: s.opts.Limits})
	if le := (*LimitError)(nil); errors.As(err, &le) {
		return WithPath(err, s.path(fsess.rel)) // migrated, it would not read
	}
	if err != nil {
		return WithPath(&CorruptError{Line: 1, Err: err}, s.path(fsess.rel))
	}
	ino, err := s.writeNew(fsess.rel, out, nil, true)
	if err != nil {
		return fmt.Errorf("session: migrate %s: %w", s.path(fsess.rel), err)
	}
	fsess.ownIno = ino
	return nil
}

// MigrateFileOptions configures MigrateFile. The zero value (or nil)
// migrates in place, keeping nothing of the old file.
type MigrateFileOptions struct {
	// DryRun only says what version the file has: nothing is written.
	DryRun bool
	// Backup keeps the file as it was at path + ".bak" (same mode), made
	// under the same lock as the migration so that no append falls
	// between them; MigrateFile refuses (fs.ErrExist) when that file is
	// there already. A current file, or a dry run, makes no backup.
	Backup bool
}

// MigrateFile upgrades the session file at path to the current format
// version, rewriting it atomically (temporary file, fsync, rename, fsync
// of the directory) under the file lock, with the mode the file had, and
// returns the version it had. A current file is left untouched and gives
// CurrentVersion. A file that cannot be read as a session gives an error
// naming it and is never written to. The new file has a line for each
// line of the old: each entry migrated as a read migrates it, anything
// else (a malformed or torn line, the zero bytes a crash left before a
// line) kept as it was, so that reading it reports what it reported. A
// file with a line over the default Limits, which a read does not
// migrate, or that its migration would take past them (an entry near
// MaxLineBytes gains its id), gives a *LimitError, and nothing is
// written; a FileStore applies its own limits the same way.
func MigrateFile(ctx context.Context, path string, opts *MigrateFileOptions) (from int, err error) {
	var o MigrateFileOptions
	if opts != nil {
		o = *opts
	}
	dryRun := o.DryRun
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	r, err := os.OpenRoot(filepath.Dir(path))
	if err != nil {
		return 0, err
	}
	defer r.Close()
	name := filepath.Base(path)
	f, err := openRegular(r, name, os.O_RDWR)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	if err := lockFile(ctx, f, !dryRun); err != nil {
		return 0, fmt.Errorf("session: lock %s: %w", path, err)
	}
	defer unlockFile(f)
	// Read whole only what will be migrated (see migratable).
	if v, err := migratable(f, Limits{}.withDefaults()); err != nil || v == CurrentVersion {
		return v, WithPath(err, path)
	}
	data, _, err := readAll(f, DefaultMaxLogBytes)
	if err != nil {
		return 0, fmt.Errorf("session: read %s: %w", path, err)
	}
	log, err := DecodeLog(data, nil)
	if err != nil {
		return 0, WithPath(err, path)
	}
	if log.MigratedFrom == 0 {
		return CurrentVersion, nil
	}
	if dryRun {
		return log.MigratedFrom, nil
	}
	plain := data
	if hasZstdMagic(data) {
		// Compressed (DecodeLog read it so): migrated from its bytes,
		// written plain, as a FileStore does.
		if plain, err = decompressLog(data, DefaultMaxLogBytes); err != nil {
			return 0, WithPath(err, path)
		}
	}
	out, err := migrateFile(plain, log.MigratedFrom, nil)
	if le := (*LimitError)(nil); errors.As(err, &le) {
		return 0, WithPath(err, path) // migrated, it would not read
	}
	if err != nil {
		return 0, WithPath(&CorruptError{Line: 1, Err: err}, path)
	}
	perm := filePerm(f)
	if o.Backup {
		// Linked into place only if no backup is there: never replaced.
		if _, err := writeAtomic(r, name+".bak", data, false, true, perm); err != nil {
			return 0, fmt.Errorf("session: back up %s: %w", path, err)
		}
	}
	if _, err := writeAtomic(r, name, out, true, true, perm); err != nil {
		return 0, fmt.Errorf("session: migrate %s: %w", path, err)
	}
	return log.MigratedFrom, nil
}

// filePerm is the permission bits of the open file f, or 0600 when they
// cannot be had: what a rewrite of it keeps.
func filePerm(f *os.File) os.FileMode {
	if fi, err := f.Stat(); err == nil {
		return fi.Mode().Perm()
	}
	return 0o600
}

// readAll reads a whole file, and reports whether it has been replaced
// (unlinked by a rename) since it was opened. A file over maxBytes (a
// log's Limits.MaxLogBytes) is refused from its size, unread: a
// *LimitError.
func readAll(f *os.File, maxBytes int64) ([]byte, bool, error) {
	size, _, nlink, err := fileState(f)
	if err != nil {
		return nil, false, err
	}
	if nlink == 0 {
		return nil, true, nil
	}
	if size > maxBytes {
		return nil, false, &LimitError{What: "log", Size: size, Limit: maxBytes}
	}
	data := make([]byte, size)
	n, err := f.ReadAt(data, 0)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, false, err
	}
	return data[:n], false, nil
}

// writeNew writes data to a temporary file beside rel, and then what
// more writes (if not nil), syncs it, whatever the policy, and puts it
// at rel: replacing what is there when replace is set, failing with
// fs.ErrExist otherwise. The directory is synced afterwards. A file it
// replaces keeps its mode; a new one has mode 0600. It returns the new
// file's inode.
func (s *FileStore) writeNew(rel string, data []byte, more func(io.Writer) error, replace bool) (uint64, error) {
	r, name := s.r, rel
	if filepath.IsAbs(rel) {
		var err error
		if r, err = os.OpenRoot(filepath.Dir(rel)); err != nil {
			return 0, err
		}
		defer r.Close()
		name = filepath.Base(rel)
	}
	// Always synced, whatever the policy: renaming an unsynced file over
	// a good one could leave neither after a crash, and a new session's
	// file must never survive without its header.
	perm := os.FileMode(0o600)
	if replace {
		if fi, err := r.Stat(name); err == nil {
			perm = fi.Mode().Perm()
		}
	}
	f, ino, err := writeAtomicKeep(r, name, data, more, replace, true, perm)
	if f != nil {
		f.Close()
	}
	return ino, err
}

// writeAtomic puts data at name in r through a temporary file in the same
// directory (mode 0600, locked while it is written so that cleaners in
// other processes leave it alone), renamed (replace) or linked (no
// replace: fs.ErrExist if name exists) into place, with the file and
// then the directory synced when sync is set. The new file has the mode
// perm, whatever the umask. It returns the new file's inode (0 where
// files have none).
func writeAtomic(r *os.Root, name string, data []byte, replace, sync bool, perm os.FileMode) (ino uint64, err error) {
	f, ino, err := writeAtomicKeep(r, name, data, nil, replace, sync, perm)
	if f != nil {
		f.Close()
	}
	return ino, err
}

// writeAtomicLocked replaces name with data as writeAtomic does (synced)
// and returns the new file still open and exclusively locked: it is
// locked before it takes the name.
func writeAtomicLocked(r *os.Root, name string, data []byte, perm os.FileMode) (*os.File, error) {
	f, _, err := writeAtomicKeep(r, name, data, nil, true, true, perm)
	if err != nil && f != nil {
		f.Close()
		return nil, err
	}
	return f, err
}

// writeAtomicKeep is writeAtomic, returning the file (nil on an error
// before it took the name) for the caller to close. After data, more
// (if not nil) writes the rest of the file, in pieces: a file of tens of
// megabytes need not be held in memory whole.
func writeAtomicKeep(r *os.Root, name string, data []byte, more func(io.Writer) error, replace, sync bool, perm os.FileMode) (file *os.File, ino uint64, err error) {
	dir := filepath.Dir(name)
	tmp := filepath.Join(dir, "."+filepath.Base(name)+".tmp-"+strconv.FormatUint(rand.Uint64(), 36))
	f, err := createIn(r, tmp)
	if err != nil {
		return nil, 0, err
	}
	if err := f.Chmod(perm); err != nil { // whatever the umask
		f.Close()
		_ = removeIn(r, tmp)
		return nil, 0, err
	}
	named := false
	defer func() {
		if !named {
			f.Close()
			_ = removeIn(r, tmp)
		}
	}()
	_ = lockFile(context.Background(), f, true) // a new file: no one else holds it
	if n, werr := writeAt(f, data, 0); werr != nil || n < len(data) {
		return nil, 0, cmp.Or(werr, io.ErrShortWrite)
	}
	if more != nil {
		if err := more(&fileWriter{f: f, off: int64(len(data))}); err != nil {
			return nil, 0, err
		}
	}
	if sync && mutant != "rename-before-sync" {
		if err = fsync(f); err != nil {
			return nil, 0, err
		}
	}
	if _, ino, _, err = fileState(f); err != nil {
		return nil, 0, err
	}
	if replace {
		err = renameIn(r, tmp, name)
	} else if err = linkIn(r, tmp, name); err == nil {
		_ = removeIn(r, tmp)
	}
	if err != nil {
		return nil, 0, err
	}
	named = true
	if sync && mutant == "rename-before-sync" {
		_ = fsync(f)
	}
	if sync {
		err = syncDir(r, dir)
	}
	return f, ino, err
}

// fileWriter writes to f from off on, through writeAt (which the crash
// tests record).
type fileWriter struct {
	f   *os.File
	off int64
}

func (w *fileWriter) Write(p []byte) (int, error) {
	n, err := writeAt(w.f, p, w.off)
	w.off += int64(n)
	if err == nil && n < len(p) {
		err = io.ErrShortWrite
	}
	return n, err
}
