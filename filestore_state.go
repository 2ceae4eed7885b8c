package session

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// Shared state on a FileStore (SharedStateStore): the state of a user or
// an app is one JSON file under the root,
//
//	<root>/.state/<scope>/<owner>.json
//
// holding {"owner": ..., "state": {...}}, where <owner> is the owner's
// name in hexadecimal (safe on every file system, case-insensitive ones
// too), or, past maxOwnerHex bytes of it, "h-" and the SHA-256 of the
// name; the name in the file tells such owners apart. An update is a
// read-modify-write under an exclusive lock on a lock file beside it
// (<owner>.lock: the state file itself is replaced, so its lock would
// not order the writers), from any process, written atomically (a
// temporary file synced and renamed over the old one): concurrent
// updates of other keys are all kept, and a reader sees the state
// before an update or after it. A state file that cannot be read is an
// error (ErrCorrupt) and is never written over.

var _ SharedStateStore = (*FileStore)(nil)

// stateDir is the directory of shared state in a store's root.
const stateDir = ".state"

// maxOwnerHex bounds the owner names kept as they are (in hexadecimal)
// in file names: 2 characters a byte, within the 255 of a name.
const maxOwnerHex = 120

// stateFile is what a shared state file holds.
type stateFile struct {
	Owner string `json:"owner"`
	State State  `json:"state"`
}

// statePath returns the file of owner's state in scope, without its
// extension, relative to the root.
func statePath(scope StateScope, owner string) string {
	name := hex.EncodeToString([]byte(owner))
	if len(owner) > maxOwnerHex {
		sum := sha256.Sum256([]byte(owner))
		name = "h-" + hex.EncodeToString(sum[:])
	}
	return filepath.Join(stateDir, string(scope), name)
}

// LoadState implements SharedStateStore: the state as the last update
// left it (an empty State when there is none).
func (s *FileStore) LoadState(ctx context.Context, scope StateScope, owner string) (State, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := CheckStateOwner(scope, owner); err != nil {
		return nil, err
	}
	if s.fileOnly {
		return nil, fmt.Errorf("%w: a store of one file opened by path keeps none", ErrNoSharedState)
	}
	return s.readState(statePath(scope, owner)+".json", owner)
}

// readState reads the state file rel of owner.
func (s *FileStore) readState(rel, owner string) (State, error) {
	data, err := readFileRoot(s.r, rel)
	if errors.Is(err, fs.ErrNotExist) {
		return State{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("session: read state %s: %w", s.path(rel), err)
	}
	var sf stateFile
	if err := json.Unmarshal(data, &sf); err != nil {
		return nil, &CorruptError{Path: s.path(rel), Err: fmt.Errorf("shared state: %w", err)}
	}
	if sf.Owner != owner {
		return nil, &CorruptError{Path: s.path(rel), Err: fmt.Errorf("shared state of %q, not of %q", sf.Owner, owner)}
	}
	if sf.State == nil {
		sf.State = State{}
	}
	return sf.State, nil
}

// UpdateState implements SharedStateStore: delta is applied (null values
// remove keys) under the state's exclusive lock, across processes, and
// the new state written atomically and synced before it returns.
func (s *FileStore) UpdateState(ctx context.Context, scope StateScope, owner string, delta State) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := CheckStateOwner(scope, owner); err != nil {
		return err
	}
	if s.fileOnly {
		return fmt.Errorf("%w: a store of one file opened by path keeps none", ErrNoSharedState)
	}
	base := statePath(scope, owner)
	dir := filepath.Dir(base)
	if err := mkdirRoot(s.r, dir); err != nil {
		return fmt.Errorf("session: update state: %w", err)
	}
	lf, err := openRegular(s.r, base+".lock", os.O_RDWR|os.O_CREATE)
	if err != nil {
		return fmt.Errorf("session: update state: %w", err)
	}
	defer lf.Close()
	if err := lockFile(ctx, lf, true); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("session: update state: lock %s: %w", s.path(base+".lock"), err)
	}
	defer unlockFile(lf)
	st, err := s.readState(base+".json", owner)
	if err != nil {
		return err // never written over
	}
	applyState(st, delta)
	data, err := json.Marshal(stateFile{Owner: owner, State: st})
	if err != nil {
		return fmt.Errorf("session: update state: %w", err)
	}
	if _, err := writeAtomic(s.r, base+".json", data, true, true, 0o600); err != nil {
		return fmt.Errorf("session: update state %s: %w", s.path(base+".json"), err)
	}
	return nil
}
