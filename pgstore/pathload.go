package pgstore

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5"

	session "github.com/agentsession/session"
)

// A Store opens a session by its path (session.PathLoader): one query
// walks the places of schema version 9 (pathplace.go) from the default
// leaf back to the start of its context and reads those entries only,
// by ranges of the primary key (a path is a few runs of consecutive
// rows). A session whose leaf has no known place (rows written before
// version 9, or by an older package, or a tree the places cannot
// describe) is read whole, as Load does, and its places are then filled
// in the background, so that the next open goes by its path.

var _ session.PathLoader = (*Store)(nil)

// pathQuery reads the path of session $1 for a store whose limits are
// $2 (bytes), $3 (entries) and $4 (line bytes). Its first row (seq 0)
// holds the header, the session's size, entry count and last entry, and
// what to do: mode 'path' (the rows after it are the path's entries, in
// no order), 'whole' (read the whole log: no compaction on the path, or
// none that saves anything, or a line over $4 somewhere, which Load
// reports), 'over' (over the limits: nothing more is read); and whether
// the leaf's place is known. Each look-up of a row is a LATERAL subquery
// with LIMIT 1 (a range, with OFFSET 0): an index probe whatever the
// planner guesses of the CTEs (joins to them were hashed over the
// session's every row, or scanned it).
const pathQuery = `WITH RECURSIVE
s AS (SELECT header, size, entry_count, last_entry, (size > $2 OR entry_count > $3) AS over,
		(longest > $4 OR octet_length(header) > $4) AS long
	FROM agentsession_sessions WHERE id = $1),
lst AS (SELECT e.* FROM s, LATERAL (SELECT e.seq, e.parent_seq, e.flags FROM agentsession_entries e
	WHERE e.session_id = $1 AND e.seq = s.entry_count LIMIT 1) e WHERE NOT s.over),
leaf AS (SELECT e.* FROM lst, LATERAL (SELECT e.seq, e.depth, e.comp_seq, e.run_seq FROM agentsession_entries e
	WHERE e.session_id = $1 AND e.seq = CASE WHEN lst.flags & 8 <> 0 THEN lst.parent_seq ELSE lst.seq END LIMIT 1) e),
comp AS (SELECT e.* FROM leaf, LATERAL (SELECT e.seq, e.depth, e.kept_id FROM agentsession_entries e
	WHERE e.session_id = $1 AND e.seq = leaf.comp_seq LIMIT 1) e),
kept AS (SELECT k.seq, k.depth FROM comp, LATERAL (SELECT e.seq, e.depth FROM agentsession_entries e
		WHERE e.session_id = $1 AND e.entry_id = comp.kept_id ORDER BY e.seq DESC LIMIT 1) k
	WHERE k.depth < comp.depth),
target AS (SELECT coalesce((SELECT depth FROM kept), (SELECT depth FROM comp)) AS depth),
runs AS (SELECT leaf.run_seq AS lo, leaf.seq AS hi, leaf.depth AS hd FROM leaf, comp
	UNION ALL
	SELECT p.run_seq, p.seq, p.depth FROM runs, LATERAL (SELECT p.run_seq, p.seq, p.depth FROM agentsession_entries p
		WHERE p.session_id = $1 AND p.seq = (SELECT r.parent_seq FROM agentsession_entries r
			WHERE r.session_id = $1 AND r.seq = runs.lo LIMIT 1) LIMIT 1) p
	WHERE runs.hd - (runs.hi - runs.lo) > (SELECT depth FROM target)),
start AS (SELECT e.* FROM LATERAL (SELECT e.seq, e.depth, e.set_seq, e.asst_seq FROM agentsession_entries e
	WHERE e.session_id = $1 AND e.seq = coalesce(
		(SELECT kept.seq FROM kept, runs WHERE kept.seq BETWEEN runs.lo AND runs.hi LIMIT 1),
		(SELECT seq FROM comp)) LIMIT 1) e),
sets AS (SELECT start.set_seq AS seq FROM start WHERE start.set_seq > 0
	UNION ALL
	SELECT e.set_seq FROM sets, LATERAL (SELECT e.set_seq FROM agentsession_entries e
		WHERE e.session_id = $1 AND e.seq = sets.seq LIMIT 1) e WHERE e.set_seq > 0),
asst AS (SELECT e.* FROM start, LATERAL (SELECT e.seq, e.flags FROM agentsession_entries e
	WHERE e.session_id = $1 AND e.seq = start.asst_seq LIMIT 1) e),
ranges AS MATERIALIZED (SELECT greatest(runs.lo, runs.hi - (runs.hd - start.depth)) AS a, runs.hi AS b
	FROM runs, start WHERE runs.hd >= start.depth),
mode AS (SELECT CASE
	WHEN (SELECT over FROM s) THEN 'over'
	WHEN (SELECT long FROM s) THEN 'whole'
	WHEN (SELECT depth FROM start) > 0 AND NOT coalesce((SELECT flags & 16 <> 0 FROM asst), false) THEN 'path'
	ELSE 'whole' END AS m)
SELECT 0, s.header, s.size, s.entry_count, s.last_entry, (SELECT m FROM mode),
	coalesce((SELECT parent_seq IS NOT NULL FROM lst), false)
FROM s
UNION ALL
SELECT e.seq, e.raw, NULL, NULL, NULL, NULL, NULL
FROM ranges, LATERAL (SELECT e.seq, e.raw FROM agentsession_entries e WHERE e.session_id = $1
	AND e.seq BETWEEN ranges.a AND ranges.b OFFSET 0) e
WHERE (SELECT m FROM mode) = 'path'
UNION ALL
SELECT e.seq, e.raw, NULL, NULL, NULL, NULL, NULL
FROM (SELECT seq FROM sets UNION ALL SELECT seq FROM asst) c, LATERAL (SELECT e.seq, e.raw FROM agentsession_entries e
	WHERE e.session_id = $1 AND e.seq = c.seq LIMIT 1) e
WHERE (SELECT m FROM mode) = 'path'`

// LoadPath implements session.PathLoader: the entries the context at
// the session's default leaf reads, in one query (one snapshot), when
// the places of its rows are known (schema version 9); else the whole
// log, read as Load does, with Complete set. The store's limits hold as
// for Load: a session over MaxLogBytes or MaxEntries is refused, and
// one that has held a line over MaxLineBytes since its last Rewrite
// (schema version 10 keeps the longest) is read whole, which reports the
// line if it is still there.
func (s *Store) LoadPath(ctx context.Context, id string) (*session.PathLog, error) {
	if err := session.ValidateID(id); err != nil {
		return nil, err
	}
	// One round trip: the query in a transaction of its own, without
	// JIT compilation, which the planner's guesses at the recursive
	// parts would turn on, and which costs the query many times what it
	// saves.
	b := &pgx.Batch{}
	b.Queue(`BEGIN READ ONLY`)
	b.Queue(`SET LOCAL jit = off`)
	b.Queue(pathQuery, id, s.lim.MaxLogBytes, int64(s.lim.MaxEntries), s.lim.MaxLineBytes)
	b.Queue(`COMMIT`)
	br := s.pool.SendBatch(ctx, b)
	defer br.Close()
	for range 2 {
		if _, err := br.Exec(); err != nil {
			return nil, mapErr(ctx, err, "load "+id)
		}
	}
	rows, err := br.Query()
	if err != nil {
		return nil, mapErr(ctx, err, "load "+id)
	}
	// The lines go into one buffer as they come (by ranges, in no
	// order), and are put in order once all are in.
	type line struct {
		seq      int64
		off, end int
	}
	var (
		header, buf []byte
		size        int64
		count       int
		last, mode  string
		known, got  bool
		lines       []line
	)
	for rows.Next() {
		vals, fds := rows.RawValues(), rows.FieldDescriptions()
		fast := len(vals) == 7 && len(fds) == 7 && len(vals[0]) == 4 && fds[0].Format == pgx.BinaryFormatCode && fds[1].Format == pgx.BinaryFormatCode
		if !fast || binary.BigEndian.Uint32(vals[0]) == 0 {
			// The first row, or a pool of the simple protocol (text):
			// let pgx decode the values.
			var seq int64
			var raw []byte
			var sz *int64
			var cnt *int32
			var lst, md *string
			var kn *bool
			if err := rows.Scan(&seq, &raw, &sz, &cnt, &lst, &md, &kn); err != nil {
				rows.Close()
				return nil, mapErr(ctx, err, "load "+id)
			}
			if seq != 0 {
				lines = append(lines, line{seq, len(buf), len(buf) + len(raw)})
				buf = appendDoubling(buf, raw)
				continue
			}
			if got || sz == nil || cnt == nil || lst == nil || md == nil || kn == nil {
				rows.Close()
				return nil, fmt.Errorf("pgstore: load %s: an unexpected first row", id)
			}
			got, header, size, count, last, mode, known = true, raw, *sz, int(*cnt), *lst, *md, *kn
			continue
		}
		seq := int64(int32(binary.BigEndian.Uint32(vals[0])))
		lines = append(lines, line{seq, len(buf), len(buf) + len(vals[1])})
		buf = appendDoubling(buf, vals[1])
	}
	if err := rows.Err(); err != nil {
		return nil, mapErr(ctx, err, "load "+id)
	}
	if _, err := br.Exec(); err != nil {
		return nil, mapErr(ctx, err, "load "+id)
	}
	if err := br.Close(); err != nil {
		return nil, mapErr(ctx, err, "load "+id)
	}
	if !got {
		return nil, fmt.Errorf("%w: session %s", session.ErrNotFound, id)
	}
	switch mode {
	case "over":
		return nil, s.overLimits(id, size, count)
	case "path":
	default:
		return s.loadWhole(ctx, id, !known)
	}
	slices.SortFunc(lines, func(a, b line) int { return int(a.seq - b.seq) })
	lines = slices.CompactFunc(lines, func(a, b line) bool { return a.seq == b.seq })
	if bytes.IndexByte(buf, '\n') >= 0 {
		return s.loadWhole(ctx, id, false) // Load reports the line that holds one
	}
	data := make([]byte, 0, len(header)+1+len(buf)+len(lines))
	data = append(append(data, header...), '\n')
	for _, l := range lines {
		data = append(append(data, buf[l.off:l.end]...), '\n')
	}
	buf = nil
	log, err := session.DecodeLog(data, &session.ReadOptions{Strict: true, Limits: s.limits, DecodeMessages: true})
	if err != nil || log.MigratedFrom != 0 || len(log.Entries) != len(lines) {
		// An older format is migrated whole (ids may change), and a
		// line that does not read is reported by Load, with its number.
		if errors.Is(err, session.ErrTooLarge) {
			return nil, fmt.Errorf("pgstore: session %s: %w", id, err)
		}
		return s.loadWhole(ctx, id, false)
	}
	return &session.PathLog{Log: log, Complete: len(lines) == count, Last: last}, nil
}

// appendDoubling is append(buf, b...) with a buffer that doubles when
// it grows (append grows a large one by a quarter: for the megabytes of a
// path, five times their size allocated on the way).
func appendDoubling(buf, b []byte) []byte {
	if len(buf)+len(b) > cap(buf) {
		nb := make([]byte, len(buf), max(2*cap(buf), len(buf)+len(b), 64<<10))
		copy(nb, buf)
		buf = nb
	}
	return append(buf, b...)
}

// loadWhole is LoadPath reading the whole log; fill fills the places of
// its rows afterwards (in the background) when the log has a compaction.
func (s *Store) loadWhole(ctx context.Context, id string, fill bool) (*session.PathLog, error) {
	log, err := s.Load(ctx, id)
	if err != nil {
		return nil, err
	}
	last := ""
	if n := len(log.Entries); n > 0 {
		last = log.Entries[n-1].ID()
	}
	if fill && log.MigratedFrom == 0 && hasCompaction(log.Entries) {
		s.fillLater(id)
	}
	return &session.PathLog{Log: log, Complete: true, Last: last}, nil
}

// hasCompaction reports whether a compaction is among entries.
func hasCompaction(entries []session.Entry) bool {
	for i := len(entries) - 1; i >= 0; i-- {
		if entries[i].Type() == session.TypeCompaction {
			return true
		}
	}
	return false
}

// fillLater fills, in the background, the places of the rows of session
// id that have none (fillPlaces), one fill per session at a time. Close
// waits for the fills in flight.
func (s *Store) fillLater(id string) {
	s.fill.mu.Lock()
	if s.fill.closed {
		s.fill.mu.Unlock()
		return
	}
	if _, inFlight := s.fill.busy[id]; inFlight {
		// The fill in flight may have read the session before rows that
		// this open found without places: it fills again when done.
		s.fill.busy[id] = true
		s.fill.mu.Unlock()
		return
	}
	if s.fill.busy == nil {
		s.fill.busy = map[string]bool{}
		s.fill.ctx, s.fill.stop = context.WithCancel(context.Background())
	}
	s.fill.busy[id] = false
	s.fill.wg.Add(1)
	s.fill.mu.Unlock()
	go func() {
		defer s.fill.wg.Done()
		for {
			_ = s.fillPlaces(s.fill.ctx, id) // best effort: the next open tries again
			s.fill.mu.Lock()
			again := s.fill.busy[id] && !s.fill.closed
			if again {
				s.fill.busy[id] = false
			} else {
				delete(s.fill.busy, id)
			}
			s.fill.mu.Unlock()
			if !again {
				return
			}
		}
	}()
}

// fillPlaces writes the places of the rows of session id that have none
// (NULL), in one repeatable-read transaction that reads the whole log
// and updates those rows: if a rewrite replaced them meanwhile, the
// update fails (a serialization failure) and nothing is written. A
// row's place depends only on the rows before it, which appends never
// change: rows appended meanwhile, not in the snapshot, are left as
// they are, and so is every row whose place is known.
func (s *Store) fillPlaces(ctx context.Context, id string) error {
	return pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead}, func(tx pgx.Tx) error {
		var data []byte
		var count int
		if err := tx.QueryRow(ctx, `SELECT header, entry_count FROM agentsession_sessions WHERE id = $1`, id).Scan(&data, &count); err != nil {
			return err
		}
		data = append(slices.Clip(data), '\n')
		data, bad, err := readEntries(ctx, tx, id, 0, int64(count), data)
		if err != nil || bad > 0 {
			return err
		}
		s.fill.reached()
		log, err := decode(id, data, 0, 0, s.limits)
		if err != nil || log.MigratedFrom != 0 || len(log.Entries) != count {
			return err
		}
		var seqs, parent, depth, set, asst, comp, run []int32
		var flags []int16
		var kept []*string
		for i, p := range placesOfLog(log.Entries) {
			if !p.known {
				continue
			}
			seqs = append(seqs, int32(i+1))
			parent, depth, set, asst = append(parent, p.parent), append(depth, p.depth), append(set, p.set), append(asst, p.asst)
			comp, run, flags, kept = append(comp, p.comp), append(run, p.run), append(flags, p.flags), append(kept, p.kept)
		}
		if len(seqs) == 0 {
			return nil
		}
		_, err = tx.Exec(ctx, `UPDATE agentsession_entries e SET parent_seq = u.parent, depth = u.depth, flags = u.flags,
				set_seq = u.sset, asst_seq = u.asst, comp_seq = u.comp, run_seq = u.run, kept_id = u.kept
			FROM unnest($2::integer[], $3::integer[], $4::integer[], $5::smallint[], $6::integer[], $7::integer[],
				$8::integer[], $9::integer[], $10::text[]) AS u (seq, parent, depth, flags, sset, asst, comp, run, kept)
			WHERE e.session_id = $1 AND e.seq = u.seq AND e.parent_seq IS NULL`,
			id, seqs, parent, depth, flags, set, asst, comp, run, kept)
		return err
	})
}
