package s3store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	session "github.com/agentsession/session"
	"github.com/agentsession/session/s3store/internal/format"
)

// Reading a session's log: from its head to the generation it names,
// that generation's descriptor and segments, then its parts in order
// until the first seq with no object, following each generation marker
// to the next generation. What was read is kept (state) so that the next
// write or read goes on from there: parts never change once written, so
// a kept state is only ever behind, never wrong.

// state is what the store knows of one session's log.
type state struct {
	id       string
	inc      string
	gen      string // the generation read
	seq      int    // its last part read
	parts    int    // append parts read since the descriptor
	headETag string
	head     format.Head
	desc     format.Descriptor
	header   session.Header
	hdrRaw   []byte
	entries  []session.Entry
	ids      map[string]int // entry id → index in entries
	size     int64          // bytes of the log in the seed format
	fold     session.InfoFold
	updated  time.Time
	archived bool
	archAt   time.Time
	compact  time.Time
	checked  time.Time // when the head was last read
	deleted  bool
	hops     int // generations followed by the read in progress (enterGen)
	// pre is what the state held before this store's last write (what
	// its subscribers are told came from others): set by the write.
	pre *told
}

func (st *state) last() string {
	if len(st.entries) == 0 {
		return ""
	}
	return st.entries[len(st.entries)-1].ID()
}

func (st *state) mark() session.LogMark {
	return session.LogMark{Last: st.last(), Entries: len(st.entries)}
}

// info is the session's listing as the state has it.
func (st *state) info() session.SessionInfo {
	info := session.SessionInfo{
		ID: st.id, Cwd: st.header.Cwd, Created: st.header.Timestamp, Updated: st.updated,
		ParentSession: st.header.ParentSession, Entries: len(st.entries), Size: st.size,
		Archived: st.archived, ArchivedAt: st.archAt, Compacting: st.compact,
	}
	st.fold.Fill(&info, st.header)
	return info
}

func (st *state) add(entries []session.Entry) {
	for _, e := range entries {
		st.ids[e.ID()] = len(st.entries)
		st.entries = append(st.entries, e)
		st.size += int64(e.Len()) + 1
		st.fold.Add(e)
	}
}

// corrupt is a *session.CorruptError for an object of the bucket.
func (s *Store) corrupt(rel string, err error) error {
	return &session.CorruptError{Path: "s3://" + s.b.name + "/" + s.b.key(rel), Err: err}
}

// maxHeadBytes bounds a head object: a listing and a place, with the
// session's metadata (a megabyte holds far more than a host sets).
const maxHeadBytes = 1 << 20

// readHead reads a session's head (ErrNotFound when there is none).
func (s *Store) readHead(ctx context.Context, id string) (format.Head, string, error) {
	o, err := s.b.getMax(ctx, format.HeadKey(id), maxHeadBytes)
	if errors.Is(err, errMissing) {
		return format.Head{}, "", fmt.Errorf("s3store: session %s: %w", id, session.ErrNotFound)
	}
	if err != nil {
		return format.Head{}, "", err
	}
	h, err := format.ParseHead(o.data)
	if err != nil {
		return h, "", s.objectError(format.HeadKey(id), err)
	}
	if h.Info.ID != id {
		return h, "", s.corrupt(format.HeadKey(id), fmt.Errorf("the head of session %q names %q", id, h.Info.ID))
	}
	return h, o.etag, nil
}

// objectError is err about object rel, with the object's place.
func (s *Store) objectError(rel string, err error) error {
	var ve *session.UnsupportedVersionError
	if errors.As(err, &ve) {
		return session.WithPath(err, "s3://"+s.b.name+"/"+s.b.key(rel))
	}
	return s.corrupt(rel, err)
}

// load reads session id's log whole, from its head.
func (s *Store) load(ctx context.Context, id string) (*state, error) {
	h, etag, err := s.readHead(ctx, id)
	if err != nil {
		return nil, err
	}
	st := &state{id: id, inc: h.Inc, headETag: etag, head: h, checked: time.Now()}
	gen, seq := h.Gen, h.Seq
	for {
		err := s.readGen(ctx, st, gen, seq)
		var next *nextGen
		if errors.As(err, &next) {
			if format.GenOrdinal(next.gen) <= format.GenOrdinal(gen) {
				return nil, s.corrupt(format.GenDir(id, st.inc, gen), fmt.Errorf("a marker from generation %s back to %s", gen, next.gen))
			}
			gen, seq = next.gen, 0
			continue
		}
		if err != nil {
			return nil, err
		}
		return st, nil
	}
}

// maxHops bounds the generations one read follows.
const maxHops = 4096

// nextGen is readGen's report of a marker: the log goes on in gen.
type nextGen struct{ gen string }

func (n *nextGen) Error() string { return "the log goes on in generation " + n.gen }

// readGen reads generation gen of st's session whole into st: the
// descriptor, the segments and the parts, knowing that parts up to
// known exist (read side by side). It returns a *nextGen when the
// generation ends with a marker.
func (s *Store) readGen(ctx context.Context, st *state, gen string, known int) error {
	dkey := format.PartKey(st.id, st.inc, gen, 0)
	o, err := s.b.get(ctx, dkey)
	if errors.Is(err, errMissing) {
		return s.corrupt(dkey, fmt.Errorf("generation %s of session %s has no descriptor (a head older than its grace?)", gen, st.id))
	}
	if err != nil {
		return err
	}
	d, err := format.ParseDescriptor(o.data)
	if err != nil {
		return s.objectError(dkey, err)
	}
	// What the descriptor says is checked before anything is read: a
	// segment named twice, or segments over the log limit, are refused
	// unread, and each is read up to the size it declares.
	budget := s.limits.MaxLogBytes - int64(len(d.Header)) - 1
	seen := make(map[string]bool, len(d.Segments))
	keys := make([]string, 0, len(d.Segments))
	for _, sg := range d.Segments {
		if seen[sg.Key] {
			return s.corrupt(dkey, fmt.Errorf("segment %s named twice", sg.Key))
		}
		seen[sg.Key] = true
		if budget -= sg.Bytes; budget < 0 {
			return session.WithPath(fmt.Errorf("s3store: the segments of generation %s are over the log limit of %d bytes: %w", gen, s.limits.MaxLogBytes, session.ErrTooLarge), "s3://"+s.b.name+"/"+s.b.key(dkey))
		}
		keys = append(keys, format.LogDir(st.id, st.inc)+sg.Key)
	}
	objs, errs := s.getEach(ctx, keys, func(i int) int64 { return d.Segments[i].Bytes })
	if err := errors.Join(errs...); err != nil {
		return err
	}
	// The log as the seed format holds it, read by the session package:
	// the header, then every entry line.
	var buf bytes.Buffer
	buf.Write(d.Header)
	buf.WriteByte('\n')
	for i, sg := range d.Segments {
		if objs[i] == nil {
			return s.corrupt(keys[i], fmt.Errorf("segment %s of session %s is missing", sg.Key, st.id))
		}
		if int64(len(objs[i].data)) != sg.Bytes {
			return s.corrupt(keys[i], fmt.Errorf("segment %s holds %d bytes, its descriptor says %d", sg.Key, len(objs[i].data), sg.Bytes))
		}
		lines, err := format.SplitLines(objs[i].data)
		if err != nil {
			return s.corrupt(keys[i], err)
		}
		if len(lines) != sg.Entries {
			// A fold copies entries by these counts: they must be right.
			return s.corrupt(keys[i], fmt.Errorf("segment %s holds %d lines, its descriptor says %d entries", sg.Key, len(lines), sg.Entries))
		}
		buf.Write(objs[i].data)
	}
	// The parts the head says there are, read side by side in rounds
	// of 8, 16, 32 ... up to the first missing one (the head's count
	// is a hint from an object anyone could have written), within what
	// is left of the log limit.
	var parts []*object
	for round := 8; len(parts) < known; round *= 2 {
		var pk []string
		for q := len(parts) + 1; q <= known && len(pk) < round; q++ {
			pk = append(pk, format.PartKey(st.id, st.inc, gen, q))
		}
		got, errs := s.getEach(ctx, pk, func(int) int64 { return max(budget, 0) })
		if err := errors.Join(errs...); err != nil {
			return err
		}
		i := 0
		for ; i < len(got) && got[i] != nil; i++ {
			budget -= int64(len(got[i].data))
		}
		parts = append(parts, got[:i]...)
		if i < len(got) {
			break
		}
	}
	if len(parts) < known {
		return s.corrupt(format.HeadKey(st.id), fmt.Errorf("the head says generation %s has %d parts; part %d is missing", gen, known, len(parts)+1))
	}
	st.gen, st.seq, st.parts, st.desc = gen, 0, 0, d
	st.updated, st.archived, st.archAt, st.compact = d.Updated, d.Archived, d.ArchivedAt, d.Compacting
	var pending []format.PartHead
	q := 1
	for ; q <= known; q++ {
		po := parts[q-1]
		ph, lines, err := format.DecodePart(po.data)
		if err != nil {
			return s.corrupt(format.PartKey(st.id, st.inc, gen, q), err)
		}
		if ph.K == format.PartNext || ph.K == format.PartDeleted {
			if err := s.decodeInto(st, &buf, dkey); err != nil {
				return err
			}
			st.seq = q
			return s.control(st, ph)
		}
		for _, l := range lines {
			buf.Write(l)
			buf.WriteByte('\n')
		}
		pending = append(pending, ph)
	}
	if err := s.decodeInto(st, &buf, dkey); err != nil {
		return err
	}
	for i, ph := range pending {
		st.seq = i + 1
		if ph.K == format.PartAppend {
			st.parts++
			st.updated = ph.T
		} else if err := s.control(st, ph); err != nil {
			return err
		}
	}
	if d.Entries != 0 && len(st.entries) < d.Entries {
		return s.corrupt(dkey, fmt.Errorf("generation %s holds %d entries, its descriptor says %d", gen, len(st.entries), d.Entries))
	}
	return s.follow(ctx, st)
}

// decodeInto reads the log in buf (header and entry lines) into st.
func (s *Store) decodeInto(st *state, buf *bytes.Buffer, dkey string) error {
	log, err := session.DecodeLog(buf.Bytes(), &session.ReadOptions{Strict: true, Limits: s.limits})
	if err != nil {
		return session.WithPath(err, "s3://"+s.b.name+"/"+s.b.key(dkey))
	}
	if log.Header.ID != st.id {
		return s.corrupt(dkey, fmt.Errorf("the header is session %s's", log.Header.ID))
	}
	st.header = log.Header
	st.hdrRaw = bytes.Clone(buf.Bytes()[:bytes.IndexByte(buf.Bytes(), '\n')])
	st.entries, st.ids, st.size, st.fold = nil, make(map[string]int, len(log.Entries)), int64(len(st.hdrRaw))+1, session.InfoFold{}
	st.add(log.Entries)
	return nil
}

// control applies a part that is not an append.
func (s *Store) control(st *state, ph format.PartHead) error {
	switch ph.K {
	case format.PartNext:
		return &nextGen{gen: ph.Gen}
	case format.PartDeleted:
		st.deleted = true
		return fmt.Errorf("s3store: session %s (deleted): %w", st.id, session.ErrNotFound)
	case format.PartArchive:
		st.archived, st.archAt = true, ph.T
	case format.PartUnarchive:
		st.archived, st.archAt = false, time.Time{}
	case format.PartCompacting:
		st.compact = ph.T
	}
	return nil
}

// catchUp reads the parts written after st.seq, in order, until the
// first seq with no object, following generation markers.
func (s *Store) catchUp(ctx context.Context, st *state) error {
	st.hops = 0
	return s.follow(ctx, st)
}

// follow is catchUp within a read that follows generations.
func (s *Store) follow(ctx context.Context, st *state) error {
	for {
		key := format.PartKey(st.id, st.inc, st.gen, st.seq+1)
		o, err := s.b.get(ctx, key)
		if errors.Is(err, errMissing) {
			return nil
		}
		if err != nil {
			return err
		}
		if err := s.applyPart(ctx, st, st.seq+1, o.data); err != nil {
			return err
		}
	}
}

// applyPart applies part seq of st's generation, read or written.
func (s *Store) applyPart(ctx context.Context, st *state, seq int, data []byte) error {
	key := format.PartKey(st.id, st.inc, st.gen, seq)
	ph, lines, err := format.DecodePart(data)
	if err != nil {
		return s.corrupt(key, err)
	}
	st.seq = seq
	switch ph.K {
	case format.PartAppend:
		entries := make([]session.Entry, 0, len(lines))
		for i, l := range lines {
			e, err := session.ParseEntry(l)
			if err != nil {
				return s.corrupt(key, fmt.Errorf("line %d: %w", i+2, err))
			}
			if _, dup := st.ids[e.ID()]; dup {
				return s.corrupt(key, fmt.Errorf("entry %s is in the log twice", e.ID()))
			}
			entries = append(entries, e)
		}
		if err := s.limits.CheckAppend(st.size, len(st.entries), entries); err != nil {
			return session.WithPath(err, "s3://"+s.b.name+"/"+s.b.key(key))
		}
		st.add(entries)
		st.parts++
		st.updated = ph.T
		return nil
	case format.PartNext:
		if format.GenOrdinal(ph.Gen) <= format.GenOrdinal(st.gen) {
			return s.corrupt(key, fmt.Errorf("a marker from generation %s back to %s", st.gen, ph.Gen))
		}
		return s.enterGen(ctx, st, ph.Gen)
	default:
		return s.control(st, ph)
	}
}

// enterGen goes on in generation gen after a marker: a fold keeps the
// entries st has; a rewrite is read whole.
func (s *Store) enterGen(ctx context.Context, st *state, gen string) error {
	// Each generation read is a call deeper (readGen, catchUp,
	// applyPart, enterGen): a chain longer than any a grace leaves is
	// refused rather than followed down the stack.
	if st.hops++; st.hops > maxHops {
		return s.corrupt(format.GenDir(st.id, st.inc, gen), fmt.Errorf("more than %d generations followed in one read", maxHops))
	}
	dkey := format.PartKey(st.id, st.inc, gen, 0)
	o, err := s.b.get(ctx, dkey)
	if err != nil {
		if errors.Is(err, errMissing) {
			return s.corrupt(dkey, fmt.Errorf("a marker names generation %s, which has no descriptor", gen))
		}
		return err
	}
	d, err := format.ParseDescriptor(o.data)
	if err != nil {
		return s.objectError(dkey, err)
	}
	if d.Fold && d.Entries == len(st.entries) {
		st.gen, st.seq, st.parts, st.desc = gen, 0, 0, d
		return nil
	}
	err = s.readGen(ctx, st, gen, 0)
	var next *nextGen
	for errors.As(err, &next) {
		if format.GenOrdinal(next.gen) <= format.GenOrdinal(gen) {
			return s.corrupt(format.GenDir(st.id, st.inc, gen), fmt.Errorf("a marker from generation %s back to %s", gen, next.gen))
		}
		gen = next.gen
		err = s.readGen(ctx, st, gen, 0)
	}
	return err
}

// getEach reads objects side by side (at most 16 at a time), each of at
// most max(i) bytes; a missing one is nil, with no error.
func (s *Store) getEach(ctx context.Context, keys []string, max func(i int) int64) ([]*object, []error) {
	out := make([]*object, len(keys))
	errs := make([]error, len(keys))
	sem := make(chan struct{}, 16)
	var wg sync.WaitGroup
	for i, k := range keys {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			o, err := s.b.getMax(ctx, k, max(i))
			if errors.Is(err, errMissing) {
				return
			}
			if errors.Is(err, session.ErrTooLarge) {
				err = session.WithPath(err, "s3://"+s.b.name+"/"+s.b.key(k))
			}
			out[i], errs[i] = o, err
		}()
	}
	wg.Wait()
	return out, errs
}
