package s3store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	session "github.com/agentsession/session"
	"github.com/agentsession/session/s3store/internal/format"
)

// Generations: a rewrite's or a fold's new descriptor and segments,
// committed by a marker at the old generation's next part; what they
// replace, removed after the grace; the head moved after a write.

// newGeneration writes a generation after st's holding hdr and entries
// (in new segments, or, for a fold, st's segments and one more), then
// its marker at st's next seq. It reports false when another writer
// took that seq first (what it wrote is removed, st is behind). On
// success st is in the new generation.
//
// read is the new log as a reader will read it (a rewrite's, checked
// before anything is written); nil for a fold.
func (s *Store) newGeneration(ctx context.Context, st *state, hdr []byte, entries []session.Entry, now time.Time, read *session.Log) (bool, error) {
	fold := read == nil
	next := format.GenOrdinal(st.gen) + 1
	if next > format.MaxGenOrdinal {
		return false, s.corrupt(format.GenDir(st.id, st.inc, st.gen), fmt.Errorf("generation %s is the last one a name can hold: the session cannot be folded or rewritten", st.gen))
	}
	gen := format.NewGen(next)
	d := format.Descriptor{V: 1, Header: hdr, Entries: len(entries), Fold: fold, Updated: now,
		Archived: st.archived, ArchivedAt: st.archAt, Compacting: st.compact, Epoch: st.desc.Epoch}
	if !fold {
		d.Epoch++
	}
	if fold {
		d.Updated = st.updated
	}
	var written []string
	segs, err := s.segmentsFor(ctx, st, entries, fold, &written)
	if err != nil {
		s.removeAll(written)
		return false, err
	}
	d.Segments = segs
	// What the old generation leaves: its objects, and its segments the
	// new one does not keep; removed after the grace.
	keep := map[string]bool{}
	for _, sg := range segs {
		keep[sg.Key] = true
	}
	gone := format.Retired{Gen: st.gen, At: now}
	for _, sg := range st.desc.Segments {
		if !keep[sg.Key] {
			gone.Segments = append(gone.Segments, sg.Key)
		}
	}
	var due []format.Retired
	for _, r := range st.desc.Retired {
		if now.Sub(r.At) > s.opts.Grace {
			due = append(due, r)
		} else {
			d.Retired = append(d.Retired, r)
		}
	}
	d.Retired = append(d.Retired, gone)
	raw, _ := json.Marshal(d)
	dkey := format.PartKey(st.id, st.inc, gen, 0)
	if _, err := s.b.put(ctx, dkey, raw, writeCond{absent: true}); err != nil {
		s.removeAll(written)
		return false, err
	}
	written = append(written, dkey)
	pre := toldOf(st, "")
	st.pre = &pre
	marker := format.EncodePart(format.PartHead{K: format.PartNext, T: now, Gen: gen}, nil)
	_, err = s.b.put(ctx, format.PartKey(st.id, st.inc, st.gen, st.seq+1), marker, writeCond{absent: true})
	if errors.Is(err, errPrecondition) {
		s.removeAll(written)
		return false, nil
	}
	if err != nil {
		s.removeAll(written) // if the marker did land, readers find no descriptor: an error, not a loss
		return false, err
	}
	if !fold {
		log := read
		st.header, st.hdrRaw = log.Header, hdr
		st.entries, st.ids, st.size, st.fold = nil, map[string]int{}, int64(len(hdr))+1, session.InfoFold{}
		st.add(log.Entries)
		st.updated = now
	}
	st.gen, st.seq, st.parts, st.desc = gen, 0, 0, d
	s.purge(st, due)
	return true, nil
}

func joinLines(entries []session.Entry) []byte {
	var buf []byte
	for _, e := range entries {
		buf = e.AppendJSON(buf)
		buf = append(buf, '\n')
	}
	return buf
}

// segmentsFor returns the segments of a new generation: for a rewrite,
// one new segment of entries; for a fold, st's segments and one of the
// entries of its parts, merged with the ones before it while they are
// no more than twice its size (so that a long session has few segments
// and each entry is copied a logarithmic number of times).
func (s *Store) segmentsFor(ctx context.Context, st *state, entries []session.Entry, fold bool, written *[]string) ([]format.Segment, error) {
	if !fold {
		if len(entries) == 0 {
			return nil, nil
		}
		sg, err := s.putSegment(ctx, st, entries)
		if err != nil {
			return nil, err
		}
		*written = append(*written, format.LogDir(st.id, st.inc)+sg.Key)
		return []format.Segment{sg}, nil
	}
	segs := append([]format.Segment(nil), st.desc.Segments...)
	start := 0 // where the entries the segments do not hold begin
	for _, sg := range segs {
		start += sg.Entries
	}
	var size int64
	for _, e := range st.entries[start:] {
		size += int64(e.Len()) + 1
	}
	for len(segs) > 0 && segs[len(segs)-1].Bytes <= 2*size {
		last := segs[len(segs)-1]
		segs = segs[:len(segs)-1]
		start -= last.Entries
		size += last.Bytes
	}
	tail := st.entries[start:]
	if len(tail) == 0 {
		return segs, nil
	}
	sg, err := s.putSegment(ctx, st, tail)
	if err != nil {
		return nil, err
	}
	*written = append(*written, format.LogDir(st.id, st.inc)+sg.Key)
	return append(segs, sg), nil
}

// fold folds the appends of st's generation into a segment, in a new
// generation. Losing the race to another writer leaves things as they
// were; the next writer folds.
func (s *Store) fold(ctx context.Context, st *state) {
	_, _ = s.newGeneration(ctx, st, st.hdrRaw, st.entries, time.Now().UTC(), nil)
}

// purge removes what generations retired more than the grace ago left.
func (s *Store) purge(st *state, due []format.Retired) {
	if len(due) == 0 {
		return
	}
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		for _, r := range due {
			if r.Gen != "" && format.GenOrdinal(r.Gen) >= 0 {
				_ = s.b.list(ctx, format.GenDir(st.id, st.inc, r.Gen), func(o listed) error { return s.b.del(ctx, o.rel) })
			}
			for _, k := range r.Segments {
				if format.CheckRel(k) == nil {
					_ = s.b.del(ctx, format.LogDir(st.id, st.inc)+k)
				}
			}
		}
	}()
}

// refreshHead writes st's position and listing to the head, if the head
// is behind: a conditional put on the head as the store read it. A
// failure leaves the head behind, which readers go past (and the next
// write or load brings it up); the listing lags until then.
func (s *Store) refreshHead(ctx context.Context, st *state) {
	for range 3 {
		if st.head.Gen == st.gen && st.head.Seq == st.seq && st.headETag != "" {
			return
		}
		if format.GenOrdinal(st.head.Gen) > format.GenOrdinal(st.gen) || (st.head.Gen == st.gen && st.head.Seq > st.seq) {
			return // a writer ahead of this state wrote it
		}
		h := format.Head{V: 1, Inc: st.inc, Gen: st.gen, Seq: st.seq, Epoch: st.desc.Epoch, Info: st.info()}
		raw, _ := json.Marshal(h)
		etag, err := s.b.put(ctx, format.HeadKey(st.id), raw, writeCond{match: st.headETag})
		if err == nil {
			st.head, st.headETag = h, etag
			return
		}
		if !errors.Is(err, errPrecondition) {
			return
		}
		cur, etag, err := s.readHead(ctx, st.id)
		if err != nil || cur.Inc != st.inc {
			return
		}
		st.head, st.headETag, st.checked = cur, etag, time.Now()
	}
}
