package pgstore

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/puddle/v2"

	session "github.com/agentsession/session"
	"github.com/agentsession/session/storekit"
)

// Options configures a Store; nil means the zero Options.
type Options struct {
	// Limits bound the lines and sessions the store writes and reads
	// (see session.Limits); the zero value is the defaults, which every
	// reader of this module applies. Create, Append and Rewrite refuse
	// what would break them (an error wrapping session.ErrTooLarge,
	// nothing written), and Load and LoadTail read with them, so that
	// what the store wrote it can read. A store opened with other
	// limits on the same database may refuse, or accept, more.
	Limits session.Limits
	// MaxBlobBytes bounds the size of a blob: PutBlob refuses a larger
	// one, GetBlob reports one it finds as corrupt. Default
	// session.DefaultMaxBlobBytes (64 MiB).
	MaxBlobBytes int64
	// AppendFlights bounds the appends of messages the Store has in
	// flight at once, alone or in batches, each on a connection of its
	// own: an append that comes while that many are out waits, and the
	// appends that waited go together, in one statement and one commit,
	// as soon as one is back (see Store.Append). Zero means 2, which
	// gathers the most on a database server of a few cores; a server of
	// many, with many sessions written at once, may do more with more.
	// Negative makes every append alone (no batches).
	AppendFlights int
}

// Store keeps sessions in PostgreSQL. It implements session.Store,
// TailLoader, PathLoader (pathload.go), Archiver, SharedStateStore and Subscriber, and
// session.BlobStore, BlobCollector and BlobSweeper with the blobs of
// workspace snapshots, and is safe for concurrent use by many
// goroutines, processes and machines. Close it when done with it (the
// pool stays the caller's).
type Store struct {
	pool    *pgxpool.Pool
	limits  session.Limits // Options.Limits, as given (readers take the zero value as the defaults)
	lim     session.Limits // with the defaults: what writes check
	maxBlob int64          // Options.MaxBlobBytes, with its default
	schema  string         // the connection's current schema, where the tables are
	origin  string         // names this Store in the notifications of its writes
	ev      events
	appends group  // the appends of messages in flight, and those waiting (group.go)
	pins    pinSet // the blobs this Store pins (pins.go)
	fill    fills  // the places being filled in the background (pathload.go)
}

var (
	_ session.Store        = (*Store)(nil)
	_ session.TailLoader   = (*Store)(nil)
	_ session.EntryCreator = (*Store)(nil)
)

// fills are the fills of places in flight (Store.fillLater).
type fills struct {
	mu     sync.Mutex
	busy   map[string]bool // by session: true if asked again while in flight
	closed bool
	ctx    context.Context // ended by Close
	stop   context.CancelFunc
	wg     sync.WaitGroup
	hold   func() // tests: called once by the next fill, its snapshot read
}

// reached calls, and clears, the hook a test set.
func (f *fills) reached() {
	f.mu.Lock()
	h := f.hold
	f.hold = nil
	f.mu.Unlock()
	if h != nil {
		h()
	}
}

// New returns a Store on pool. It checks that the schema is at
// SchemaVersion (ErrSchema otherwise: run Migrate first; ErrUnavailable
// when the database cannot be reached). The pool stays the caller's to
// close.
func New(ctx context.Context, pool *pgxpool.Pool, opts *Options) (*Store, error) {
	v, err := schemaVersion(ctx, pool)
	if err != nil {
		return nil, mapErr(ctx, err, "read the schema version")
	}
	if v != SchemaVersion {
		hint := "run pgstore.Migrate"
		if v > SchemaVersion {
			hint = "this package is older than the database"
		}
		return nil, fmt.Errorf("%w: the database has version %d, this package needs %d (%s)", ErrSchema, v, SchemaVersion, hint)
	}
	st := &Store{pool: pool, maxBlob: session.DefaultMaxBlobBytes}
	if err := pool.QueryRow(ctx, `SELECT current_schema()`).Scan(&st.schema); err != nil {
		return nil, mapErr(ctx, err, "read the current schema")
	}
	var b [8]byte
	_, _ = rand.Read(b[:])
	st.origin = hex.EncodeToString(b[:])
	st.ev.init(st)
	if opts != nil {
		st.limits = opts.Limits
		if opts.MaxBlobBytes > 0 {
			st.maxBlob = opts.MaxBlobBytes
		}
	}
	st.lim = st.limits.WithDefaults()
	st.appends.max = defaultFlights
	if opts != nil && opts.AppendFlights != 0 {
		st.appends.max = max(opts.AppendFlights, 0)
	}
	return st, nil
}

// ErrUnavailable means the database could not be reached, or the
// connection broke during the call: the server is down or restarting,
// the backend was terminated, the network failed, or the pool is closed.
// The driver's error stays in the chain. A write that failed this way may
// or may not have been committed: read the session again (a Session
// handle does, on its next conditional append) before repeating it.
var ErrUnavailable = errors.New("pgstore: database unavailable")

// PostgreSQL error codes the store maps to the package's errors.
const (
	codeSerializationFailure  = "40001"
	codeDeadlockDetected      = "40P01"
	codeUndefinedTable        = "42P01"
	codeUndefinedFunction     = "42883"
	codeAdminShutdown         = "57P01"
	codeCrashShutdown         = "57P02"
	codeCannotConnectNow      = "57P03"
	classConnection           = "08" // connection_exception and its subclasses
	classInvalidAuthorization = "28"
	codeInvalidCatalogName    = "3D000" // no such database
)

// mapErr turns an error of a call into what the store returns: the
// session package's sentinels and ErrSchema and ErrUnavailable where one
// fits, with the original in the chain; ctx.Err() when ctx is done.
// Errors the store made itself (a sentinel wrapped with detail) pass
// through as they are.
func mapErr(ctx context.Context, err error, what string) error {
	if err == nil {
		return nil
	}
	for _, own := range []error{session.ErrNotFound, session.ErrExists, session.ErrConflict, session.ErrCorrupt,
		session.ErrUnsupportedVersion, session.ErrInvalidID, session.ErrTooLarge, ErrSchema, ErrUnavailable} {
		if errors.Is(err, own) {
			return err
		}
	}
	if cerr := ctx.Err(); cerr != nil {
		// The call failed because ctx ended (pgx may report that as a
		// closed connection, or a timeout of its own).
		return cerr
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	if unavailable(err) {
		return fmt.Errorf("%w: %s: %w", ErrUnavailable, what, err)
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch pe.Code {
		case codeSerializationFailure, codeDeadlockDetected:
			return fmt.Errorf("%w: %s: %w", session.ErrConflict, what, err)
		case codeUndefinedTable, codeUndefinedFunction:
			return fmt.Errorf("%w: %s: %w (run pgstore.Migrate)", ErrSchema, what, err)
		}
	}
	return fmt.Errorf("pgstore: %s: %w", what, err)
}

// unavailable reports whether err is a failure of the connection rather
// than of the statement: the server could not be reached, refused the
// connection for now, or went away.
func unavailable(err error) bool {
	var ce *pgconn.ConnectError
	connect := errors.As(err, &ce)
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		if connect {
			// Refused at the door: for now (too many connections,
			// starting up), unless the configuration is wrong (the
			// password, the database's name), which waiting won't fix.
			return !strings.HasPrefix(pe.Code, classInvalidAuthorization) && pe.Code != codeInvalidCatalogName
		}
		// The server's own word: the statement failed, or the session
		// ended (terminated, shutting down, starting up).
		switch pe.Code {
		case codeAdminShutdown, codeCrashShutdown, codeCannotConnectNow:
			return true
		}
		return strings.HasPrefix(pe.Code, classConnection)
	}
	var ne net.Error
	return connect || // no server there, or the network failed
		pgconn.SafeToRetry(err) || // failed before anything was sent
		errors.Is(err, pgconn.ErrConnClosed) ||
		errors.Is(err, puddle.ErrClosedPool) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, net.ErrClosed) || errors.As(err, &ne) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.EPIPE)
}

// Create implements session.Store. A header line over the store's
// Limits.MaxLineBytes is refused (*session.LimitError), and nothing is
// written.
func (s *Store) Create(ctx context.Context, h session.Header) error {
	if err := session.ValidateID(h.ID); err != nil {
		return err
	}
	return mapErr(ctx, s.createIn(ctx, s.pool, h), "create "+h.ID)
}

// CreateWithEntries implements session.EntryCreator: the session's row
// and its entries are inserted in one transaction, so a crash or a
// refused entry leaves no session behind.
func (s *Store) CreateWithEntries(ctx context.Context, h session.Header, entries []session.Entry) (err error) {
	defer func() {
		if err == nil {
			s.releaseIn(entries) // the pins of the blobs the entries refer to
		}
	}()
	if err := session.ValidateID(h.ID); err != nil {
		return err
	}
	if err := check(entries); err != nil {
		return err
	}
	if len(entries) == 0 {
		return mapErr(ctx, s.createIn(ctx, s.pool, h), "create "+h.ID)
	}
	if err := s.lim.CheckLog(h, entries); err != nil {
		return fmt.Errorf("pgstore: create %s: %w", h.ID, err)
	}
	var res string
	err = pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{IsoLevel: pgx.ReadCommitted}, func(tx pgx.Tx) error {
		if err := s.createIn(ctx, tx, h); err != nil {
			return err
		}
		var err error
		res, _, _, err = s.appendIn(ctx, tx, h.ID, session.AppendOptions{IfEmpty: true}, entries)
		if err == nil && res != "" {
			err = errRefused // roll the create back
		}
		return err
	})
	if errors.Is(err, errRefused) {
		return s.refusal(h.ID, session.AppendOptions{IfEmpty: true}, res)
	}
	return mapErr(ctx, err, "create "+h.ID)
}

// errRefused rolls back a transaction whose append the database refused.
var errRefused = errors.New("pgstore: refused")

// queryer is what a statement runs on: the pool, or a transaction.
type queryer interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// createIn inserts the session's row with q.
func (s *Store) createIn(ctx context.Context, q queryer, h session.Header) error {
	if err := s.lim.CheckLog(h, nil); err != nil {
		return fmt.Errorf("pgstore: create %s: the header: %w", h.ID, err)
	}
	hb, err := h.MarshalJSON()
	if err != nil {
		return err
	}
	cwd, title, parent := headerStrings(h)
	var f session.InfoFold
	m := metaOf(h, &f)
	// The insert and its notification, in one statement.
	var got string
	err = q.QueryRow(ctx, `WITH ins AS (INSERT INTO agentsession_sessions
		(id, header, cwd_utf8, title_utf8, parent_session_utf8, parent_id, created_at, updated_at, size,
			fold, meta, project_id, user_id, app, metadata_pairs)
		VALUES ($1, $2, $3, $4, $5, $6, $7, clock_timestamp(), $8, '{}', $9, $10, $11, $12, $13)
		ON CONFLICT (id) DO NOTHING RETURNING id)
		SELECT agentsession_notify(id, 'created', 0, 0, 0, $14) FROM ins`,
		h.ID, hb, utf8Bytes(cwd), utf8Bytes(title), utf8Bytes(parent), parentID(parent), created(h), len(hb)+1,
		m.meta, m.projectID, m.user, m.app, m.pairs, s.origin).Scan(&got)
	if errors.Is(err, pgx.ErrNoRows) {
		return fmt.Errorf("%w: session %s", session.ErrExists, h.ID)
	}
	return err // the caller maps it
}

// headerStrings returns the header's strings as its JSON holds them
// (storekit.StoredString): what the columns cwd_utf8, title_utf8 and
// parent_session_utf8 keep, NUL and all.
func headerStrings(h session.Header) (cwd, title, parent string) {
	return storekit.StoredString(h.Cwd), storekit.StoredString(h.Title), storekit.StoredString(h.ParentSession)
}

// utf8Bytes returns the bytes of s for a bytea column: never nil, which
// pgx would send as NULL.
func utf8Bytes(s string) []byte {
	return append([]byte{}, s...)
}

// parentID returns what the parent_id column keeps: the session id that
// parentSession names, or "" when that is not a valid id, which no
// listing's filter can ask for (it would not fit a text column if it
// held NUL).
func parentID(parentSession string) string {
	id := session.ParentID(parentSession)
	if session.ValidateID(id) != nil {
		return ""
	}
	return id
}

func created(h session.Header) *time.Time {
	if h.Timestamp.IsZero() {
		return nil
	}
	return &h.Timestamp
}

// check rejects zero entries and ids repeated within one append, as the
// other stores do (storekit.CheckEntries), before anything is sent.
func check(entries []session.Entry) error { return storekit.CheckEntries(entries) }

// titleOf returns the name of the last session_info entry that sets one,
// as the title_utf8 column keeps it (storekit.StoredString).
func titleOf(entries []session.Entry) (string, bool) {
	for i := len(entries) - 1; i >= 0; i-- {
		if entries[i].Type() != session.TypeSessionInfo {
			continue
		}
		var n session.SessionInfoEntry
		if entries[i].Decode(&n) == nil && strings.TrimSpace(n.Name) != "" {
			return storekit.StoredString(strings.TrimSpace(n.Name)), true
		}
	}
	return "", false
}

// Append implements session.Store. The entries, the conditions and the
// row update go in one statement (one round trip), a call of the
// agentsession_append function, which holds the session row's lock:
// appends to one session are serialised, appends to different sessions
// run in parallel.
//
// Appends of messages (those that change neither the title, the
// metadata nor a compaction) go together when the store is busy (group
// commit): while Options.AppendFlights appends or batches are in
// flight, the appends that come wait, and go as soon as one is back, in
// one call of agentsession_append_batch, one transaction and one
// commit. Each keeps its conditions, checks and answer, as if made
// alone after those before it in the batch; none is answered before
// the commit, and an append that finds a flight free goes at once.
//
// An append that would take the session past the store's Limits (a line
// over MaxLineBytes, more than MaxEntries entries, a log over
// MaxLogBytes) is refused with a *session.LimitError, and nothing is
// written. The lines are checked before anything is sent; the totals by
// the function, under the row's lock, so that appends running together
// cannot push a session past a limit between them.
func (s *Store) Append(ctx context.Context, id string, opts session.AppendOptions, entries ...session.Entry) (err error) {
	defer func() {
		if err == nil {
			s.releaseIn(entries) // the pins of the blobs the entries refer to
		}
	}()
	if err := session.ValidateID(id); err != nil {
		return err
	}
	if err := check(entries); err != nil {
		return err
	}
	// The lines, and the totals of these entries alone (a lower bound of
	// the session's): nothing this append can make fit is sent.
	if err := s.lim.CheckAppend(0, 0, entries); err != nil {
		return fmt.Errorf("pgstore: append to %s: %w", id, err)
	}
	res, ids, raws, err := s.appendIn(ctx, nil, id, opts, entries)
	if err != nil {
		return mapErr(ctx, err, "append to "+id)
	}
	switch why, _, _ := strings.Cut(res, ":"); why {
	case "notempty", "last", "dup":
		// Refused: unless the entries are there already, as after a
		// retry of an append whose answer was lost.
		done, err := s.storedAs(ctx, id, ids, raws)
		if err != nil || done {
			return err
		}
	}
	return s.refusal(id, opts, res)
}

// appendIn makes the append in tx, or with the pool when tx is nil: its
// answer ("" when it was made, else why it was refused), and the ids and
// lines it sent.
func (s *Store) appendIn(ctx context.Context, tx pgx.Tx, id string, opts session.AppendOptions, entries []session.Entry) (res string, ids []string, raws [][]byte, err error) {
	ids = make([]string, len(entries))
	raws = make([][]byte, len(entries))
	size := 0
	for i, e := range entries {
		ids[i] = e.ID()
		raws[i] = e.AppendJSON(nil)
		size += len(raws[i]) + 1
	}
	var title []byte // NULL: the title stays
	if t, ok := titleOf(entries); ok {
		title = utf8Bytes(t)
	}
	pl := placesOf(entries)
	args := []any{id, opts.IfLast, opts.IfEmpty, ids, raws, title, size, int64(s.lim.MaxEntries), s.lim.MaxLogBytes,
		[]byte(nil), []byte(nil), []byte(nil), []byte(nil), [][]byte(nil), s.origin,
		pl.pidx, pl.parents, pl.flags, pl.kept}
	if changes, firstUser := foldDelta(entries); !changes {
		// The usual append (messages): one statement, which sets the
		// fold's first user message itself when it has none; with the
		// pool, in a batch with the appends of other callers when one is
		// in flight (group.go).
		if firstUser != "" {
			args[9] = utf8Bytes(firstUser)
		}
		if tx != nil {
			err = tx.QueryRow(ctx, appendCall, args...).Scan(&res)
		} else {
			res, err = s.appendGrouped(&pending{ctx: ctx, id: id, opts: opts, ids: ids, raws: raws, size: size, title: title, firstUser: args[9].([]byte), places: pl})
		}
		return res, ids, raws, err
	}
	// A title, metadata or a compaction: the fold is read under the row's
	// lock, the entries folded in, and the append made, in one
	// transaction (the caller's, when q is one).
	fold := func(tx pgx.Tx) error {
		var foldRaw, header, first []byte
		err := tx.QueryRow(ctx, `SELECT fold, first_user, header FROM agentsession_sessions WHERE id = $1 FOR UPDATE`, id).Scan(&foldRaw, &first, &header)
		if errors.Is(err, pgx.ErrNoRows) {
			res = "notfound"
			return nil
		} else if err != nil {
			return err
		}
		f := readFold(foldRaw)
		if len(first) > 0 {
			f.FirstUser = string(first) // set by appends of messages
		}
		for _, e := range entries {
			f.Add(e)
		}
		m := metaOf(headerOf(header), &f)
		args[9], args[10], args[11], args[12], args[13] = utf8Bytes(f.FirstUser), foldJSON(&f), m.meta, m.projectID, m.pairs
		return tx.QueryRow(ctx, appendCall, args...).Scan(&res)
	}
	if tx != nil {
		err = fold(tx)
	} else {
		err = pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{IsoLevel: pgx.ReadCommitted}, fold)
	}
	return res, ids, raws, err
}

// refusal is the error of an append the database answered res to (nil
// for "").
func (s *Store) refusal(id string, opts session.AppendOptions, res string) error {
	why, arg, _ := strings.Cut(res, ":")
	switch why {
	case "":
		return nil
	case "notfound":
		return fmt.Errorf("%w: session %s", session.ErrNotFound, id)
	case "notempty": // arg is the last entry
		if err := storekit.CheckAppend(session.AppendOptions{IfEmpty: true}, arg); err != nil {
			return err
		}
	case "last": // arg is the last entry ("" for none), not opts.IfLast
		if err := storekit.CheckAppend(session.AppendOptions{IfLast: opts.IfLast}, arg); err != nil {
			return err
		}
	case "dup":
		return fmt.Errorf("%w: entry id %s is already in the session", session.ErrConflict, arg)
	case "toolarge":
		if le := s.limitError(arg); le != nil {
			return fmt.Errorf("pgstore: append to %s: %w", id, le)
		}
	}
	return fmt.Errorf("pgstore: append to %s: unexpected answer %q", id, res)
}

// storedAs reports whether the entries with ids, whose lines are raws,
// are all in session id already, each line the same bytes: an append of
// them is the retry of one that happened, and succeeds without writing
// (see session.Store). Some of them stored, or stored as other bytes, is
// session.ErrConflict. One query, made only when the append was refused.
func (s *Store) storedAs(ctx context.Context, id string, ids []string, raws [][]byte) (bool, error) {
	rows, err := s.pool.Query(ctx, `SELECT entry_id, raw FROM agentsession_entries WHERE session_id = $1 AND entry_id = ANY ($2)`, id, ids)
	if err != nil {
		return false, mapErr(ctx, err, "append to "+id)
	}
	stored := make(map[string][]byte, len(ids))
	for rows.Next() {
		var eid string
		var raw []byte
		if err := rows.Scan(&eid, &raw); err != nil {
			rows.Close()
			return false, mapErr(ctx, err, "append to "+id)
		}
		stored[eid] = raw
	}
	if err := rows.Err(); err != nil {
		return false, mapErr(ctx, err, "append to "+id)
	}
	if len(stored) == 0 {
		return false, nil
	}
	for i, eid := range ids {
		raw, ok := stored[eid]
		if !ok {
			return false, fmt.Errorf("%w: entry id %s is already in the session", session.ErrConflict, firstOf(ids, stored))
		}
		if !bytes.Equal(raw, raws[i]) {
			return false, fmt.Errorf("%w: the ids of the appended entries are in the session with other content", session.ErrConflict)
		}
	}
	return true, nil
}

// firstOf returns the first of ids that stored holds.
func firstOf(ids []string, stored map[string][]byte) string {
	for _, id := range ids {
		if _, ok := stored[id]; ok {
			return id
		}
	}
	return ""
}

// limitError turns the detail of agentsession_append's answer
// "toolarge:<what>:<size>" into the error it stands for (nil if it is not
// one of them).
func (s *Store) limitError(arg string) *session.LimitError {
	what, num, _ := strings.Cut(arg, ":")
	size, err := strconv.ParseInt(num, 10, 64)
	if err != nil {
		return nil
	}
	switch what {
	case "entries":
		return &session.LimitError{What: "entries", Size: size, Limit: int64(s.lim.MaxEntries)}
	case "bytes":
		return &session.LimitError{What: "log", Size: size, Limit: s.lim.MaxLogBytes}
	}
	return nil
}

// Load implements session.Store. The header and the entries are read in
// one read-only snapshot, joined into a seed-format log and decoded the
// way a file is, so entries keep their bytes. A row that no longer
// parses is reported (session.ErrCorrupt with its line: seq + 1), never
// skipped.
func (s *Store) Load(ctx context.Context, id string) (*session.Log, error) {
	if err := session.ValidateID(id); err != nil {
		return nil, err
	}
	var data []byte
	bad := int64(0) // seq of a row that holds a newline, which no Entry has
	err := pgx.BeginTxFunc(ctx, s.pool, readOnly, func(tx pgx.Tx) error {
		var size int64
		var count int
		if err := tx.QueryRow(ctx, `SELECT header, size, entry_count FROM agentsession_sessions WHERE id = $1`, id).Scan(&data, &size, &count); err != nil {
			if errors.Is(err, pgx.ErrNoRows) {
				return fmt.Errorf("%w: session %s", session.ErrNotFound, id)
			}
			return err
		}
		// A session over the limits (written with others) is refused
		// before it is read.
		if err := s.overLimits(id, size, count); err != nil {
			return err
		}
		data = append(append(make([]byte, 0, max(size, int64(len(data))+1)), data...), '\n')
		var err error
		data, bad, err = readEntries(ctx, tx, id, 0, -1, data)
		return err
	})
	if err != nil {
		return nil, mapErr(ctx, err, "load "+id)
	}
	return decode(id, data, 0, bad, s.limits)
}

// overLimits refuses a session whose row says it is over the store's
// limits for a whole log.
func (s *Store) overLimits(id string, size int64, count int) error {
	switch {
	case size > s.lim.MaxLogBytes:
		return fmt.Errorf("pgstore: session %s: %w", id, &session.LimitError{What: "log", Size: size, Limit: s.lim.MaxLogBytes})
	case count > s.lim.MaxEntries:
		return fmt.Errorf("pgstore: session %s: %w", id, &session.LimitError{What: "entries", Size: int64(count), Limit: int64(s.lim.MaxEntries)})
	}
	return nil
}

// readOnly is the transaction of Load and LoadTail: one snapshot.
var readOnly = pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}

// readEntries appends to data, one line each, the entries of the session
// after the first n, in the order of the (session_id, seq) index: all of
// them, or up to seq upTo when it is not negative. bad is the seq of the
// first row that holds a newline, 0 if none does.
func readEntries(ctx context.Context, tx pgx.Tx, id string, n, upTo int64, data []byte) (_ []byte, bad int64, _ error) {
	var rows pgx.Rows
	var err error
	if upTo < 0 {
		rows, err = tx.Query(ctx, `SELECT raw FROM agentsession_entries WHERE session_id = $1 AND seq > $2 ORDER BY seq`, id, n)
	} else {
		// Both bounds: even a generic plan, which knows neither value,
		// expects few rows and walks the index in order.
		rows, err = tx.Query(ctx, `SELECT raw FROM agentsession_entries WHERE session_id = $1 AND seq > $2 AND seq <= $3 ORDER BY seq`, id, n, upTo)
	}
	if err != nil {
		return nil, 0, err
	}
	defer rows.Close()
	// The columns are known once a row has come: a query that failed
	// (the connection broke, say) has none, and Next says so.
	binary := false
	for seq := n + 1; rows.Next(); seq++ {
		vals := rows.RawValues()
		if fds := rows.FieldDescriptions(); len(vals) != 1 || len(fds) != 1 {
			return nil, 0, fmt.Errorf("pgstore: %d values for %d columns where one raw entry was due", len(vals), len(fds))
		} else if seq == n+1 {
			binary = fds[0].Format == pgx.BinaryFormatCode
		}
		raw := vals[0]
		if !binary {
			// A text-protocol pool (simple protocol, as behind
			// PgBouncer): let pgx decode the hex form.
			raw = nil
			if err := rows.Scan(&raw); err != nil {
				return nil, 0, err
			}
		}
		if bad == 0 && bytes.IndexByte(raw, '\n') >= 0 {
			bad = seq
		}
		data = append(append(data, raw...), '\n')
	}
	return data, bad, rows.Err()
}

// decode decodes the seed-format log data: a header and the entries
// after the first n of the session, whose line numbers in errors are
// those of the whole log. bad is readEntries'. It applies lim, as every
// reader does: a log over them is refused (session.ErrTooLarge).
func decode(id string, data []byte, n, bad int64, lim session.Limits) (*session.Log, error) {
	if bad > 0 {
		// Only a row written around this package can hold one.
		return nil, &session.CorruptError{Line: int(bad) + 1, Err: fmt.Errorf("pgstore: session %s: entry %d spans several lines", id, bad)}
	}
	log, err := session.DecodeLog(data, &session.ReadOptions{Strict: true, Limits: lim})
	if err != nil {
		var ce *session.CorruptError
		if n > 0 && errors.As(err, &ce) && ce.Line > 1 {
			ce.Line += int(n) // the tail's lines, numbered in the whole log
		}
		return nil, fmt.Errorf("pgstore: session %s: %w", id, err)
	}
	return log, nil
}

// LoadTail implements session.TailLoader: the header and the entries
// after the first n, in one read-only snapshot, provided the n-th entry
// is still last (session.ErrConflict otherwise). It reads the session
// row, the n-th entry and the entries after it through the primary key
// index of agentsession_entries, so its cost does not depend on how long
// the log is.
func (s *Store) LoadTail(ctx context.Context, id string, n int, last string) (*session.Log, error) {
	if err := session.ValidateID(id); err != nil {
		return nil, err
	}
	if n < 0 || (n == 0) != (last == "") {
		return nil, fmt.Errorf("%w: no entry %d with id %q to load after", session.ErrConflict, n, last)
	}
	var data []byte
	var bad int64
	whole := false // a log of an older format: migrated whole, as Load does
	err := pgx.BeginTxFunc(ctx, s.pool, readOnly, func(tx pgx.Tx) error {
		var size int64
		var count int
		var nth *string
		err := tx.QueryRow(ctx, `SELECT s.header, s.size, s.entry_count, e.entry_id
			FROM agentsession_sessions s
			LEFT JOIN agentsession_entries e ON e.session_id = s.id AND e.seq = $2
			WHERE s.id = $1`, id, n).Scan(&data, &size, &count, &nth)
		if err != nil {
			if errors.Is(err, pgx.ErrNoRows) {
				return fmt.Errorf("%w: session %s", session.ErrNotFound, id)
			}
			return err
		}
		// The tail of a session Load would refuse is refused too.
		if err := s.overLimits(id, size, count); err != nil {
			return err
		}
		data = append(slices.Clip(data), '\n')
		h, err := session.DecodeLog(data, &session.ReadOptions{Strict: true, Limits: s.limits})
		if err != nil {
			return fmt.Errorf("pgstore: session %s: %w", id, err)
		}
		if h.MigratedFrom != 0 {
			// Migration may give entries new ids (version 1 has none),
			// which only a read of the whole log knows.
			whole = true
			data, bad, err = readEntries(ctx, tx, id, 0, -1, slices.Grow(data, int(size)))
			return err
		}
		if err := tailStarts(id, count, n, last, nth); err != nil {
			return err
		}
		// entry_count is the last seq in this snapshot.
		data, bad, err = readEntries(ctx, tx, id, int64(n), int64(count), data)
		return err
	})
	if err != nil {
		return nil, mapErr(ctx, err, "load "+id)
	}
	if !whole {
		return decode(id, data, int64(n), bad, s.limits)
	}
	log, err := decode(id, data, 0, bad, s.limits)
	if err != nil {
		return nil, err
	}
	switch {
	case n > len(log.Entries):
		return nil, fmt.Errorf("%w: session %s holds %d entries, not the %d read", session.ErrConflict, id, len(log.Entries), n)
	case n > 0 && log.Entries[n-1].ID() != last:
		return nil, fmt.Errorf("%w: entry %d of session %s is no longer %s (the log was rewritten)", session.ErrConflict, n, id, last)
	}
	log.Entries = log.Entries[n:]
	return log, nil
}

// tailStarts checks that a log of count entries whose n-th has the id nth
// (nil if there is none) starts the way a LoadTail caller read it.
func tailStarts(id string, count, n int, last string, nth *string) error {
	switch {
	case n > count || (n > 0 && nth == nil):
		return fmt.Errorf("%w: session %s holds %d entries, not the %d read", session.ErrConflict, id, count, n)
	case n > 0 && *nth != last:
		return fmt.Errorf("%w: entry %d of session %s is no longer %s (the log was rewritten)", session.ErrConflict, n, id, last)
	}
	return nil
}

// Rewrite implements session.Store: the header and all entries replaced
// in one transaction, under the session row's lock, if the stored log
// still meets opts (session.ErrConflict otherwise, and nothing changes).
// The store keeps no unreadable lines, so opts.DropUnreadable changes
// nothing here. A log over the store's Limits is refused
// (*session.LimitError), and nothing changes.
func (s *Store) Rewrite(ctx context.Context, id string, opts session.RewriteOptions, h session.Header, entries []session.Entry) (err error) {
	defer func() {
		if err == nil {
			s.releaseIn(entries) // the pins of the blobs the entries refer to
		}
	}()
	if err := session.ValidateID(id); err != nil {
		return err
	}
	if h.ID != id {
		return fmt.Errorf("pgstore: rewrite of %s with a header for %s", id, h.ID)
	}
	hb, err := h.MarshalJSON()
	if err != nil {
		return err
	}
	size := len(hb) + 1
	for i, e := range entries {
		if e.IsZero() {
			return fmt.Errorf("pgstore: rewrite with zero Entry at %d", i)
		}
		size += e.Len() + 1
	}
	if err := s.lim.CheckLog(h, entries); err != nil {
		return fmt.Errorf("pgstore: rewrite %s: %w", id, err)
	}
	cwd, title, parent := headerStrings(h)
	if t, ok := titleOf(entries); ok {
		title = t
	}
	last := ""
	if len(entries) > 0 {
		last = entries[len(entries)-1].ID()
	}
	var f session.InfoFold
	for _, e := range entries {
		f.Add(e)
	}
	m := metaOf(h, &f)
	places := placesOfLog(entries)
	err = pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{IsoLevel: pgx.ReadCommitted}, func(tx pgx.Tx) error {
		var count int
		var stored string
		if err := tx.QueryRow(ctx, `SELECT entry_count, last_entry FROM agentsession_sessions WHERE id = $1 FOR UPDATE`, id).Scan(&count, &stored); err != nil {
			if errors.Is(err, pgx.ErrNoRows) {
				return fmt.Errorf("%w: session %s", session.ErrNotFound, id)
			}
			return err
		}
		// Under the lock, and read committed: the row as the last writer
		// left it.
		if err := opts.Check(stored, count); err != nil {
			return fmt.Errorf("pgstore: rewrite of %s: %w", id, err)
		}
		// The longest line (schema version 10) is the new rows' alone:
		// the trigger raises it from 0 as they come in.
		if _, err := tx.Exec(ctx, `DELETE FROM agentsession_entries WHERE session_id = $1`, id); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `UPDATE agentsession_sessions SET longest = 0 WHERE id = $1`, id); err != nil {
			return err
		}
		_, err := tx.CopyFrom(ctx, pgx.Identifier{"agentsession_entries"}, []string{"session_id", "seq", "entry_id", "raw",
			"parent_seq", "depth", "flags", "set_seq", "asst_seq", "comp_seq", "run_seq", "kept_id"},
			pgx.CopyFromSlice(len(entries), func(i int) ([]any, error) {
				return append([]any{id, int32(i + 1), entries[i].ID(), entries[i].AppendJSON(nil)}, places[i].row()...), nil
			}))
		if err != nil {
			return err
		}
		var gen int64
		err = tx.QueryRow(ctx, `UPDATE agentsession_sessions SET
			header = $2, cwd_utf8 = $3, title_utf8 = $4, parent_session_utf8 = $5, parent_id = $6, created_at = $7,
			entry_count = $8, last_entry = $9, size = $10, generation = generation + 1,
			updated_at = greatest(clock_timestamp(), updated_at + interval '1 microsecond'),
			fold = $11, first_user = $12, meta = $13, project_id = $14, user_id = $15, app = $16, metadata_pairs = $17
			WHERE id = $1 RETURNING generation`,
			id, hb, utf8Bytes(cwd), utf8Bytes(title), utf8Bytes(parent), parentID(parent), created(h),
			len(entries), last, size, foldJSON(&f), utf8Bytes(f.FirstUser), m.meta, m.projectID, m.user, m.app, m.pairs).Scan(&gen)
		if err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `SELECT agentsession_notify($1, 'rewritten', $2, $3, $4, $5)`, id, count, len(entries), gen, s.origin)
		return err
	})
	return mapErr(ctx, err, "rewrite "+id)
}

// Delete implements session.Store; the entries go with the session. A
// Session handle on it gets session.ErrNotFound from then on: an append
// finds no row to lock, and never creates one.
func (s *Store) Delete(ctx context.Context, id string) error {
	if err := session.ValidateID(id); err != nil {
		return err
	}
	s.settle(ctx, id) // let this Store's subscribers read what it deletes
	var got string
	err := s.pool.QueryRow(ctx, `WITH d AS (DELETE FROM agentsession_sessions WHERE id = $1
			RETURNING id, entry_count, generation)
		SELECT agentsession_notify(id, 'deleted', entry_count, entry_count, generation, $2) FROM d`, id, s.origin).Scan(&got)
	if errors.Is(err, pgx.ErrNoRows) {
		return fmt.Errorf("%w: session %s", session.ErrNotFound, id)
	}
	return mapErr(ctx, err, "delete "+id)
}

// List implements session.Store. It reads session rows only, in the
// order of the (updated_at, id) index, a page at a time.
func (s *Store) List(ctx context.Context, opts session.ListOptions) (*session.ListPage, error) {
	limit := opts.Limit
	if limit <= 0 {
		limit = session.DefaultListLimit
	}
	var where []string
	var args []any
	arg := func(v any) string {
		args = append(args, v)
		return "$" + strconv.Itoa(len(args))
	}
	if opts.Cwd != "" {
		// As the stores keep it: "\xff" finds what was created with it.
		where = append(where, "cwd_utf8 = "+arg(utf8Bytes(storekit.StoredString(opts.Cwd))))
	}
	if opts.ParentSession != "" {
		// A session id, matched exactly; a value no id has matches
		// nothing (its ParentID could be "", every session without a
		// parent).
		if session.ValidateID(opts.ParentSession) != nil {
			return &session.ListPage{}, nil
		}
		where = append(where, "parent_id = "+arg(opts.ParentSession))
	}
	// The database keeps microseconds: "after t" is "after t rounded
	// down", "before t" is "before t rounded up".
	if !opts.UpdatedAfter.IsZero() {
		where = append(where, "updated_at > "+arg(opts.UpdatedAfter.Truncate(time.Microsecond)))
	}
	if !opts.UpdatedBefore.IsZero() {
		where = append(where, "updated_at < "+arg(ceilMicro(opts.UpdatedBefore)))
	}
	switch {
	case opts.OnlyArchived:
		where = append(where, "archived_at IS NOT NULL")
	case !opts.Archived:
		where = append(where, "archived_at IS NULL")
	}
	for _, f := range []struct{ col, v string }{{"project_id", opts.ProjectID}, {"user_id", opts.User}, {"app", opts.App}} {
		if f.v != "" {
			where = append(where, f.col+" = "+arg(utf8Bytes(f.v)))
		}
	}
	if len(opts.Metadata) > 0 {
		// Every key with its value: containment, which the GIN index
		// on metadata_pairs answers.
		where = append(where, "metadata_pairs @> "+arg(pairsOf(opts.Metadata))+"::bytea[]")
	}
	if opts.Cursor != "" {
		t, id, err := storekit.ParseCursor(opts.Cursor)
		if err != nil {
			return nil, err
		}
		where = append(where, fmt.Sprintf("(updated_at, id) < (%s, %s)", arg(ceilMicro(t)), arg(id)))
	}
	q := `SELECT id, title_utf8, cwd_utf8, created_at, updated_at, parent_session_utf8, entry_count, size, archived_at,
		fold, first_user, meta, compacting_at
		FROM agentsession_sessions`
	if len(where) > 0 {
		q += " WHERE " + strings.Join(where, " AND ")
	}
	q += " ORDER BY updated_at DESC, id DESC LIMIT " + arg(limit+1)
	rows, err := s.pool.Query(ctx, q, args...)
	if err != nil {
		return nil, mapErr(ctx, err, "list")
	}
	infos, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (session.SessionInfo, error) {
		var in session.SessionInfo
		var created, archived, compacting *time.Time
		var title, cwd, parent, fold, first, meta []byte
		err := r.Scan(&in.ID, &title, &cwd, &created, &in.Updated, &parent, &in.Entries, &in.Size, &archived,
			&fold, &first, &meta, &compacting)
		in.Title, in.Cwd, in.ParentSession = string(title), string(cwd), string(parent)
		if created != nil {
			in.Created = *created
		}
		if archived != nil {
			in.Archived, in.ArchivedAt = true, *archived
		}
		// As session.InfoFold.Fill: title_utf8 holds the latest
		// session_info name, else the header's title; without either,
		// the title derived from the first user message.
		f := readFold(fold)
		if len(first) > 0 {
			f.FirstUser = string(first)
		}
		if in.Title == "" && f.FirstUser != "" {
			in.Title, in.TitleDerived = f.FirstUser, true
		}
		if compacting != nil {
			in.Compacting = *compacting
		}
		var m session.Meta
		_ = json.Unmarshal(meta, &m) // the package wrote it
		in.ProjectID, in.AppVersion, in.User, in.App = m.ProjectID, m.AppVersion, m.User, m.App
		if len(m.Metadata) > 0 {
			in.Metadata = m.Metadata
		}
		return in, err
	})
	if err != nil {
		return nil, mapErr(ctx, err, "list")
	}
	p := &session.ListPage{Sessions: infos}
	if len(infos) > limit {
		p.Sessions = infos[:limit:limit]
		p.Next = storekit.Cursor(infos[limit-1])
	}
	return p, nil
}

// ceilMicro rounds t up to the microsecond.
func ceilMicro(t time.Time) time.Time {
	if u := t.Truncate(time.Microsecond); !u.Equal(t) {
		return u.Add(time.Microsecond)
	}
	return t
}
