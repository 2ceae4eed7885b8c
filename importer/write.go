package importer

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"time"

	session "github.com/agentsession/session"
)

// The write path: a parsed session into a store, never overwriting,
// resuming an import that stopped half way.

// appendBatch bounds the entries of one Append, so that a long session
// is not one huge write.
const appendBatch = 1000

// ConflictError is a session of the import whose id the store holds
// with other content: it is never overwritten. It matches
// session.ErrConflict.
type ConflictError struct {
	ID     string
	Reason string
}

func (e *ConflictError) Error() string {
	return fmt.Sprintf("importer: session %s is in the store with other content (%s): not overwritten", e.ID, e.Reason)
}

func (e *ConflictError) Is(target error) bool { return target == session.ErrConflict }

// PartialError is a session whose entries could not all be written:
// Stored of Total are in the store. Importing the same file again
// resumes after them.
type PartialError struct {
	ID            string
	Stored, Total int
	Err           error
}

func (e *PartialError) Error() string {
	advice := "import again to complete it"
	if errors.Is(e.Err, session.ErrTooLarge) {
		// The store's limit: another import would stop at the same place.
		advice = "the rest is over the store's limits: importing again will not complete it"
	}
	return fmt.Sprintf("importer: session %s: %d of %d entries stored, then: %v (%s)", e.ID, e.Stored, e.Total, e.Err, advice)
}

func (e *PartialError) Unwrap() error { return e.Err }

// write stores p, then its children (a child that fails is noted in
// rep.Errors; the others are still written).
func write(ctx context.Context, store session.Store, p *Parsed, parent string, opts *Options, rep *Report) error {
	h := p.Header
	if parent != "" {
		h.ParentSession = parent
	}
	s := Session{
		ID: h.ID, ParentSession: h.ParentSession, Format: p.Format, Source: p.Source,
		Entries: len(p.Entries), Unknown: p.Unknown, Malformed: p.Malformed,
	}
	if err := session.ValidateID(h.ID); err != nil {
		return fmt.Errorf("importer: %s: %w", p.Source, err)
	}
	var skipped bool
	var err error
	if opts.DryRun {
		skipped, err = check(ctx, store, h.ID, p, &s)
	} else {
		skipped, err = store1(ctx, store, h, p, &s)
	}
	if err != nil {
		return err
	}
	if !opts.DryRun {
		keepTimes(ctx, store, p, &s)
	}
	if skipped {
		rep.Skipped = append(rep.Skipped, s)
	} else {
		rep.Imported = append(rep.Imported, s)
	}
	for _, c := range p.Children {
		if err := write(ctx, store, c, h.ID, opts, rep); err != nil {
			src := c.Source
			if src == "" {
				src = p.Source
			}
			rep.Errors = append(rep.Errors, LineError{Path: src, Err: err})
		}
	}
	return nil
}

// store1 writes one session: its blobs, then its entries after those
// already stored. skipped is true when the store held them all.
func store1(ctx context.Context, store session.Store, h session.Header, p *Parsed, s *Session) (skipped bool, err error) {
	if err := putBlobs(ctx, store, p, s); err != nil {
		return false, err
	}
	var stored []session.Entry
	switch err := store.Create(ctx, h); {
	case errors.Is(err, session.ErrExists):
		log, err := store.Load(ctx, h.ID)
		if err != nil {
			return false, fmt.Errorf("importer: session %s exists and cannot be read: %w", h.ID, err)
		}
		stored = log.Entries
		if skipped, err := compare(ctx, store, h.ID, stored, p, s); err != nil || skipped {
			return skipped, err
		}
	case err != nil:
		return false, err
	}
	return false, appendRest(ctx, store, h, stored, p.Entries)
}

// check is store1 with nothing written (Options.DryRun): what the
// import would do, skip, resume or refuse, as the store stands.
func check(ctx context.Context, store session.Store, id string, p *Parsed, s *Session) (skipped bool, err error) {
	log, err := store.Load(ctx, id)
	switch {
	case errors.Is(err, session.ErrNotFound):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("importer: session %s exists and cannot be read: %w", id, err)
	}
	return compare(ctx, store, id, log.Entries, p, s)
}

// compare decides about a session the store holds already: skipped when
// it holds every entry of the import, a conflict when what it holds is
// not the import's first entries, else resumed after them.
func compare(ctx context.Context, store session.Store, id string, stored []session.Entry, p *Parsed, s *Session) (skipped bool, err error) {
	if err := samePrefix(ctx, store, id, stored, p.Entries); err != nil {
		return false, err
	}
	if len(stored) == len(p.Entries) {
		return true, nil
	}
	s.Resumed = len(stored)
	return false, nil
}

// samePrefix checks that the stored entries are the first ones of the
// import, byte for byte (an image's blob reference and its data count
// as the same).
func samePrefix(ctx context.Context, store session.Store, id string, stored, entries []session.Entry) error {
	if len(stored) > len(entries) {
		return &ConflictError{ID: id, Reason: fmt.Sprintf("it has %d entries, the import %d", len(stored), len(entries))}
	}
	blobs, _ := session.BlobsOf(store)
	for i, e := range stored {
		if !sameEntry(ctx, blobs, e, entries[i]) {
			reason := fmt.Sprintf("entry %d is %s there, %s here", i+1, e.ID(), entries[i].ID())
			if e.ID() == entries[i].ID() {
				reason = fmt.Sprintf("entry %d (%s) differs: an export of the same session redacted, or edited?", i+1, e.ID())
			}
			return &ConflictError{ID: id, Reason: reason}
		}
	}
	return nil
}

// cutNotices end, as they stand in an entry's JSON, a string a store cut
// to its size limit (see session.FileStoreOptions.MaxStringChars): its
// notice, session.TruncationNotice, and the one versions before wrote
// ("\n\n[agentsession: N characters truncated]").
var cutNotices = [][]byte{
	bytes.TrimPrefix(mustJSON(session.TruncationNotice), []byte(`"`)),
	[]byte(` characters truncated]"`),
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

// holdsCut reports whether the JSON of an entry holds a string a store cut.
func holdsCut(raw []byte) bool {
	for _, n := range cutNotices {
		if bytes.Contains(raw, n) {
			return true
		}
	}
	return false
}

// sameEntry reports whether a stored entry a is the imported entry b:
// the same bytes; or the same entry with strings the store cut to its
// limit; or with an image's data where the other has its blob reference.
func sameEntry(ctx context.Context, blobs session.BlobStore, a, b session.Entry) bool {
	ab, bb := a.JSON(), b.JSON()
	if bytes.Equal(ab, bb) {
		return true
	}
	if a.ID() != b.ID() {
		return false
	}
	if sameJSON(ab, bb) {
		// The same values, members in another order: a record kept
		// whole as a custom entry, read from two sources that order it
		// differently (OpenCode's storage tree, its database).
		return true
	}
	if a.Type() == b.Type() && a.ParentID() == b.ParentID() && a.Timestamp() == b.Timestamp() &&
		holdsCut(ab) {
		// The store cut a long string of it (FileStoreOptions.
		// MaxStringChars): what it keeps of this entry is all it can.
		return true
	}
	if blobs == nil {
		return false
	}
	// One side may hold an image's reference where the other holds its
	// data: compare them both resolved.
	l := &session.Log{Entries: []session.Entry{a, b}}
	if _, err := session.ResolveBlobs(ctx, l, blobs); err != nil {
		return false
	}
	return bytes.Equal(l.Entries[0].JSON(), l.Entries[1].JSON())
}

// sameJSON reports whether a and b are the same JSON value, whatever the
// order of their objects' members (numbers compared as written).
func sameJSON(a, b []byte) bool {
	var x, y any
	da, db := json.NewDecoder(bytes.NewReader(a)), json.NewDecoder(bytes.NewReader(b))
	da.UseNumber()
	db.UseNumber()
	return da.Decode(&x) == nil && db.Decode(&y) == nil && reflect.DeepEqual(x, y)
}

// appendRest appends entries after the stored ones, in batches; a log
// that repeats an entry id (files may) goes in one Rewrite instead.
func appendRest(ctx context.Context, store session.Store, h session.Header, stored, entries []session.Entry) error {
	n := len(stored)
	if n == len(entries) {
		return nil
	}
	last := ""
	if n > 0 {
		last = stored[n-1].ID()
	}
	if repeats(entries) {
		o := session.RewriteOptions{IfEmpty: n == 0, IfLast: last}
		if n > 0 {
			o.IfEntries = n
		}
		if err := store.Rewrite(ctx, h.ID, o, h, entries); err != nil {
			return &PartialError{ID: h.ID, Stored: n, Total: len(entries), Err: err}
		}
		return nil
	}
	for i := n; i < len(entries); i += appendBatch {
		batch := entries[i:min(i+appendBatch, len(entries))]
		o := session.AppendOptions{IfLast: last, IfEmpty: last == ""}
		if err := store.Append(ctx, h.ID, o, batch...); err != nil {
			return &PartialError{ID: h.ID, Stored: i, Total: len(entries), Err: err}
		}
		last = batch[len(batch)-1].ID()
	}
	return nil
}

// repeats reports whether an entry id appears twice.
func repeats(entries []session.Entry) bool {
	ids := make(map[string]bool, len(entries))
	for _, e := range entries {
		if ids[e.ID()] {
			return true
		}
		ids[e.ID()] = true
	}
	return false
}

// putBlobs puts the blobs of p into the store, before the entries that
// refer to them.
func putBlobs(ctx context.Context, store session.Store, p *Parsed, s *Session) error {
	if len(p.Blobs) == 0 {
		return nil
	}
	blobs, ok := session.BlobsOf(store)
	if !ok {
		s.Warnings = append(s.Warnings, fmt.Sprintf("the store keeps no blobs: %d images stay unresolved references", len(p.Blobs)))
		return nil
	}
	refs := make([]string, 0, len(p.Blobs))
	for ref := range p.Blobs {
		refs = append(refs, ref)
	}
	sort.Strings(refs)
	for _, ref := range refs {
		got, err := blobs.PutBlob(ctx, p.Blobs[ref])
		if err != nil {
			return fmt.Errorf("importer: session %s: blob %s: %w", p.Header.ID, ref, err)
		}
		if got != ref {
			return fmt.Errorf("importer: session %s: blob %s holds the data of %s: %w", p.Header.ID, ref, got, session.ErrCorrupt)
		}
		s.Blobs++
	}
	return nil
}

// keepTimes sets when the stored session was last updated to the
// source's last activity (its latest entry, or its header's time), not
// the time of the import, so that listings and sweeps by age see an old
// session as old (session.SetUpdated). The session must be the one the
// import wrote, entry for entry: one skipped because the store held it
// all (imported before) gets its time too, one written to since does
// not. A store that cannot set the time keeps the import's, with a
// warning.
func keepTimes(ctx context.Context, store session.Store, p *Parsed, s *Session) {
	if len(p.Entries) == 0 {
		return
	}
	last := lastActivity(p)
	if now := time.Now(); last.After(now) {
		last = now // a source's clock ahead: no later than the import
	}
	if last.IsZero() {
		return // a source without times: the import's stays
	}
	seen := session.LogMark{Last: p.Entries[len(p.Entries)-1].ID(), Entries: len(p.Entries)}
	err := session.SetUpdated(ctx, store, p.Header.ID, seen, last)
	switch {
	case err == nil:
	case errors.Is(err, errors.ErrUnsupported):
		s.Warnings = append(s.Warnings, fmt.Sprintf("the store cannot keep the source's time: the session is listed as updated at the import, not at %s", last.UTC().Format(time.RFC3339)))
	default:
		s.Warnings = append(s.Warnings, fmt.Sprintf("the session is listed as updated at the import, not at the source's last activity (%s): %v", last.UTC().Format(time.RFC3339), err))
	}
}

// lastActivity is the time of the latest entry of p, or of its header
// when that is later.
func lastActivity(p *Parsed) time.Time {
	last := p.Header.Timestamp
	for _, e := range p.Entries {
		if t := e.Time(); t.After(last) {
			last = t
		}
	}
	return last
}
