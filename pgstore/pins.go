package pgstore

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"

	session "github.com/agentsession/session"
)

// Pins (session.BlobPinner): what keeps a writer's blobs from a
// collection however slow the writer is.
//
// The connection of pins lost while the Store lives (the server
// restarted, the network failed) ends its pins: the next pin connects
// again and takes them all again, but a collection in between may have
// deleted their blobs. A grace longer than such an outage (and than the
// clocks of the server and of the machine that collects disagree: the
// release refreshes touched_at by the server's clock, which the
// collection compares with its own) covers it.
//
// A pin is a shared advisory lock (the one-bigint form: pg_locks shows
// it with objsubid 1) on a key drawn from the blob's reference, held by
// a connection of the Store's own, opened at its first pin and kept
// until Close: the server lets the locks go when that connection ends,
// whatever the way (Close, the process killed, the network lost), so a
// writer that dies leaves no pin behind. PutBlob takes the lock before
// it inserts or refreshes the row; an append, a create or a rewrite
// whose entries refer to the blob, or ReleaseBlobs, refreshes the row's
// touched_at and then lets the lock go, with those of the blobs its
// bytes refer to (a manifest's contents) that the Store pinned.
//
// DeleteBlobIfOlder deletes only a row that no other connection than
// the Store's own holds such a lock on (pg_locks), and that the Store
// did not pin with PinBlobs: a collection spares the blobs of the other
// Stores, in this process or another, and of its own only those pinned
// with PinBlobs (its own puts it cannot tell from garbage its caller
// put and dropped). A put that locks after the DELETE looked finds the
// row deleted and inserts it again, or refreshed it first (the DELETE,
// conditional on touched_at, then leaves it). Two references whose keys
// are the same (one chance in 2^63) protect each other, which only
// spares a blob. Applications must keep these keys, bigint advisory
// locks taken shared, free.

// pinSet is a Store's pins.
type pinSet struct {
	mu     sync.Mutex
	conn   *pgx.Conn // holds the locks; nil until the first pin
	pid    uint32    // its backend's pid
	pins   map[string]*pinState
	keys   map[int64]int // the pins on each key (references may share one)
	n      atomic.Int64  // len(pins): appends look without the lock
	closed bool
}

// pinState is what the Store knows of one blob it pins.
type pinState struct {
	held     bool     // pinned with PinBlobs: honoured by the Store's own collections too
	children []string // the references its bytes hold, released with it; nil: not known
}

var _ session.BlobPinner = (*Store)(nil)

// pinKey is the advisory lock key of a reference: 63 bits of its hash.
func pinKey(ref string) int64 {
	var b [8]byte
	_, _ = hex.Decode(b[:], []byte(ref[len(session.BlobPrefix):len(session.BlobPrefix)+16]))
	return int64(binary.BigEndian.Uint64(b[:]) >> 1)
}

// connLocked returns the connection that holds the pins, connected (and
// the pins taken again on it) if it is not. Callers hold mu.
func (s *Store) connLocked(ctx context.Context) (*pgx.Conn, error) {
	p := &s.pins
	if p.conn != nil && !p.conn.IsClosed() {
		return p.conn, nil
	}
	if p.conn != nil {
		closeConn(p.conn)
		p.conn = nil
	}
	conn, err := pgx.ConnectConfig(ctx, s.pool.Config().ConnConfig.Copy())
	if err != nil {
		return nil, err
	}
	keys := make([]int64, 0, len(p.keys))
	for k := range p.keys {
		keys = append(keys, k)
	}
	if len(keys) > 0 {
		// The pins a lost connection took with it.
		if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock_shared(k) FROM unnest($1::bigint[]) AS k`, keys); err != nil {
			closeConn(conn)
			return nil, err
		}
	}
	p.conn, p.pid = conn, conn.PgConn().PID()
	return conn, nil
}

func closeConn(conn *pgx.Conn) {
	cctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_ = conn.Close(cctx)
}

// pin pins ref for the Store (held: with PinBlobs), noting the
// references data holds (nil: not known), released with it.
func (s *Store) pin(ctx context.Context, ref string, data []byte, held bool) error {
	p := &s.pins
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil
	}
	if st, ok := p.pins[ref]; ok {
		st.held = st.held || held
		if st.children == nil && data != nil {
			st.children = refsIn(ref, data)
		}
		return nil
	}
	key := pinKey(ref)
	for attempt := 0; p.keys[key] == 0; attempt++ {
		conn, err := s.connLocked(ctx)
		if err == nil {
			if _, err = conn.Exec(ctx, `SELECT pg_advisory_lock_shared($1)`, key); err == nil {
				break
			}
		}
		if attempt > 0 || ctx.Err() != nil || conn == nil || !conn.IsClosed() {
			return mapErr(ctx, err, "pin blob "+ref)
		}
		// The connection was lost (its pins with it): connect again,
		// taking them again, and try once more.
	}
	st := &pinState{held: held}
	if data != nil {
		st.children = refsIn(ref, data)
	}
	if p.pins == nil {
		p.pins, p.keys = map[string]*pinState{}, map[int64]int{}
	}
	p.pins[ref] = st
	p.keys[key]++
	p.n.Store(int64(len(p.pins)))
	return nil
}

// refsIn returns the blob references data holds other than ref (a
// manifest's contents, an entry's blobs); never nil.
func refsIn(ref string, data []byte) []string {
	out := []string{}
	prefix := []byte(session.BlobPrefix)
	for {
		i := bytes.Index(data, prefix)
		if i < 0 {
			return out
		}
		if end := i + len(prefix) + 64; end <= len(data) {
			if r := string(data[i:end]); r != ref && session.ValidateBlobRef(r) == nil {
				out = append(out, r)
			}
		}
		data = data[i+len(prefix):]
	}
}

// release releases the pins of refs, and of the blobs they hold that the
// Store pinned: their rows' touched_at refreshed first, then the locks
// let go.
func (s *Store) release(ctx context.Context, refs []string) error {
	p := &s.pins
	if p.n.Load() == 0 {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	var done []string
	var keys []int64
	for len(refs) > 0 {
		ref := refs[len(refs)-1]
		refs = refs[:len(refs)-1]
		st, ok := p.pins[ref]
		if !ok {
			continue
		}
		delete(p.pins, ref)
		done = append(done, ref)
		refs = append(refs, st.children...)
		key := pinKey(ref)
		if p.keys[key]--; p.keys[key] == 0 {
			delete(p.keys, key)
			keys = append(keys, key)
		}
	}
	p.n.Store(int64(len(p.pins)))
	if len(done) == 0 {
		return nil
	}
	_, err := s.pool.Exec(ctx, `UPDATE agentsession_blobs SET touched_at = clock_timestamp() WHERE ref = ANY($1)`, done)
	if err != nil {
		err = mapErr(ctx, err, "release blobs")
	}
	if len(keys) > 0 && p.conn != nil && !p.conn.IsClosed() {
		if _, uerr := p.conn.Exec(ctx, `SELECT pg_advisory_unlock_shared(k) FROM unnest($1::bigint[]) AS k`, keys); uerr != nil {
			// A lock that stays: the connection is closed, so that none does.
			closeConn(p.conn)
			p.conn = nil
			err = errors.Join(err, mapErr(ctx, uerr, "release blobs"))
		}
	}
	return err
}

// releaseIn releases the pins of the blobs entries refer to, once they
// are stored. Its errors are not the write's, which happened: a pin left
// behind keeps its blob until the Store is closed.
func (s *Store) releaseIn(entries []session.Entry) {
	if s.pins.n.Load() == 0 {
		return
	}
	var refs []string
	for _, e := range entries {
		raw := e.JSON()
		refs = append(refs, refsIn("", raw)...)
	}
	if len(refs) > 0 {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = s.release(ctx, refs)
	}
}

// PinBlobs implements session.BlobPinner: the pins are honoured by every
// collection, this Store's own included.
func (s *Store) PinBlobs(ctx context.Context, refs ...string) error {
	for _, ref := range refs {
		if err := session.ValidateBlobRef(ref); err != nil {
			return err
		}
	}
	for _, ref := range refs {
		if err := s.pin(ctx, ref, nil, true); err != nil {
			return err
		}
	}
	return nil
}

// ReleaseBlobs implements session.BlobPinner.
func (s *Store) ReleaseBlobs(ctx context.Context, refs ...string) error {
	for _, ref := range refs {
		if err := session.ValidateBlobRef(ref); err != nil {
			return err
		}
	}
	return s.release(ctx, refs)
}

// heldHere reports whether the Store pinned ref with PinBlobs, and the
// backend pid of its connection of pins (0: none), whose locks its own
// collections pass over.
func (s *Store) heldHere(ref string) (held bool, pid uint32) {
	p := &s.pins
	p.mu.Lock()
	defer p.mu.Unlock()
	st, ok := p.pins[ref]
	if p.conn != nil {
		pid = p.pid
	}
	return ok && st.held, pid
}

// closePins lets every pin of the Store go (without a refresh: a Store
// closed writes nothing more), and pins nothing more.
func (s *Store) closePins() {
	p := &s.pins
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed = true
	p.pins, p.keys = nil, nil
	p.n.Store(0)
	if p.conn != nil {
		// Unlocked before the connection closes: the server lets a
		// closed connection's locks go only when its backend has exited,
		// after Close would have returned, and a collection right after
		// Close must find nothing pinned.
		cctx, cancel := context.WithTimeout(context.Background(), time.Second)
		_, _ = p.conn.Exec(cctx, "SELECT pg_advisory_unlock_all()")
		cancel()
		closeConn(p.conn)
		p.conn = nil
	}
}

// pinnedSQL is the condition of DeleteBlobIfOlder on pins: no other
// connection than the Store's own ($3) holds the shared advisory lock of
// the reference's key ($4).
const pinnedSQL = `NOT EXISTS (SELECT 1 FROM pg_locks l
	WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 1
	AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
	AND l.classid::bigint = ($4::bigint >> 32) AND l.objid::bigint = ($4::bigint & 4294967295)
	AND l.pid <> $3)`
