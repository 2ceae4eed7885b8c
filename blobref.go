package session

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/agentsession/session/internal/jsonx"
)

// Resolving blob references.
//
// A log may refer to one blob many times (a screenshot sent again and
// again), and a blob may be hostile (a small file that decodes to a lot).
// So a log's references are resolved with one read of each distinct
// blob, a failure remembered as well as a success, and the bytes of the
// distinct blobs it resolves are bounded (Limits.MaxResolvedBytes). The
// data of a message's images is shared, not copied: a message entry whose
// references are resolved keeps its line as a template with the image
// data cut out, and every image of one blob is the same string.

// scanRefs calls fn with every blob reference spelled out in b:
// "blob:sha256:" and 64 lowercase hex digits, wherever they stand (a
// JSON string that spells one with escapes is not seen).
func scanRefs(b []byte, fn func(ref string)) {
	for {
		i := bytes.Index(b, []byte(BlobPrefix))
		if i < 0 {
			return
		}
		b = b[i+len(BlobPrefix):]
		n := 0
		for n < len(b) && n < 64 && (b[n] >= '0' && b[n] <= '9' || b[n] >= 'a' && b[n] <= 'f') {
			n++
		}
		if n == 64 {
			fn(BlobPrefix + string(b[:64]))
			b = b[64:]
		}
	}
}

// ResolveBlobs puts the content of blob references back into the image
// blocks of log's entries, as base64, using blobs, within the default
// Limits, and lists the references they held in log.BlobRefs. A
// reference blobs cannot give back stays in place (the image is
// then unresolved: see Block.Unresolved) and is reported, one *BlobError
// per reference (wrapping ErrNotFound, ErrCorrupt, ErrTooLarge), in
// log.Unresolved and in the result; Verify reports such references too.
// The error is the context's, if it ends first.
func ResolveBlobs(ctx context.Context, log *Log, blobs BlobStore) (unresolved []error, err error) {
	if err := resolveBlobs(ctx, log, blobs, Limits{}.withDefaults()); err != nil {
		return nil, err
	}
	for _, u := range log.Unresolved {
		unresolved = append(unresolved, u)
	}
	return unresolved, nil
}

// ExternalizeImages returns entries with the base64 data of their
// images of minBytes or more (DefaultMinBlobBytes for 0) moved to blobs,
// each replaced by its reference, as a FileStore stores them: what a
// store other than FileStore calls on the way in, with ResolveBlobs on
// the way out. An entry with no such image is returned as it is (the
// slice too, when none has one). The result is the same for the same
// entries, so a retried append stays a retry.
func ExternalizeImages(ctx context.Context, entries []Entry, blobs BlobStore, minBytes int) ([]Entry, error) {
	if minBytes == 0 {
		minBytes = DefaultMinBlobBytes
	}
	z := sizeLimits{maxChars: -1, minBlob: minBytes, blobs: blobs}
	var out []Entry
	for i, e := range entries {
		if z.small(e.bytes(), e.noImage) {
			continue
		}
		line, _, err := z.limit(ctx, e.bytes())
		if err != nil {
			return nil, err
		}
		if bytes.Equal(line, e.bytes()) {
			continue
		}
		x, err := ParseEntry(line)
		if err != nil {
			return nil, err
		}
		if out == nil {
			out = slices.Clone(entries)
		}
		out[i] = x
	}
	if out == nil {
		return entries, nil
	}
	return out, nil
}

// BlobError is an image's blob reference that a store could not resolve
// when it read the log: the blob is missing (ErrNotFound), does not match
// its name (ErrCorrupt), or is over the limits (ErrTooLarge). The image
// keeps the reference as its data, and is sent to no model (see
// Block.Unresolved).
type BlobError struct {
	EntryID string // the entry holding the image
	Ref     string // "blob:sha256:<hex>"
	Err     error
}

func (e *BlobError) Error() string {
	return fmt.Sprintf("session: entry %s: image %s: %v", e.EntryID, e.Ref, e.Err)
}

func (e *BlobError) Unwrap() error { return e.Err }

// resolveBlobs is ResolveBlobs within lim; what it could not resolve it
// adds to log.Unresolved.
// The references of the entries are noted in log.BlobRefs first.
func resolveBlobs(ctx context.Context, log *Log, blobs BlobStore, lim Limits) error {
	r := &resolver{blobs: blobs, left: lim.MaxResolvedBytes, got: map[string]resolved{}, limit: lim.MaxResolvedBytes}
	var refs map[string]struct{}
	defer func() {
		if refs != nil {
			for _, ref := range log.BlobRefs {
				refs[ref] = struct{}{}
			}
			log.BlobRefs = slices.Sorted(maps.Keys(refs))
		}
	}()
	for i, e := range log.Entries {
		if !bytes.Contains(e.raw, []byte(BlobPrefix)) {
			continue // no reference (a compact entry's holes never hold one)
		}
		if refs == nil {
			refs = map[string]struct{}{}
		}
		scanRefs(e.raw, func(ref string) { refs[ref] = struct{}{} })
		ne, missing, err := r.entry(ctx, e)
		if err != nil {
			return err
		}
		log.Unresolved = append(log.Unresolved, missing...)
		log.Entries[i] = ne
	}
	return nil
}

// resolver resolves the references of one log.
type resolver struct {
	blobs       BlobStore
	left, limit int64 // bytes of distinct blobs still allowed, of limit
	got         map[string]resolved
}

// resolved is what became of one reference: its data as base64, or why
// not.
type resolved struct {
	b64 string
	err error
}

// get returns the base64 data of ref, reading the blob the first time.
func (r *resolver) get(ctx context.Context, ref string) (string, error) {
	if v, ok := r.got[ref]; ok {
		return v.b64, v.err
	}
	data, err := r.blobs.GetBlob(ctx, ref)
	if err != nil && ctx.Err() != nil {
		return "", ctx.Err() // not the blob's fault: not remembered
	}
	var v resolved
	switch {
	case err != nil:
		v.err = err
	case int64(len(data)) > r.left:
		v.err = fmt.Errorf("blob %s: %w", ref, &LimitError{What: "blobs", Size: r.limit - r.left + int64(len(data)), Limit: r.limit})
	default:
		r.left -= int64(len(data))
		v.b64 = base64.StdEncoding.EncodeToString(data)
	}
	r.got[ref] = v
	return v.b64, v.err
}

// refAt is a reference in an entry's bytes: the span of its token.
type refAt struct {
	start, end int
	b64        string
}

// entry resolves the references of e. A message entry comes back compact,
// its image data shared; another keeps its data inline.
func (r *resolver) entry(ctx context.Context, e Entry) (Entry, []*BlobError, error) {
	raw := e.bytes()
	var refs []refAt
	var missing []*BlobError
	var err error
	walkObjects(raw, func(obj *jsonObject) {
		if err != nil || !obj.image {
			return
		}
		for _, m := range obj.strings {
			if m.key != "data" {
				continue
			}
			ref, uerr := jsonx.Unquote(raw[m.start:m.end])
			if uerr != nil || !isBlobRef([]byte(ref)) {
				continue
			}
			b64, gerr := r.get(ctx, ref)
			if cerr := ctx.Err(); cerr != nil {
				err = cerr
				return
			}
			if gerr != nil {
				missing = append(missing, &BlobError{EntryID: e.id, Ref: ref, Err: gerr})
				continue
			}
			refs = append(refs, refAt{m.start, m.end, b64})
		}
	})
	if err != nil || len(refs) == 0 {
		return e, missing, err
	}
	slices.SortFunc(refs, func(a, b refAt) int { return a.start - b.start })
	if e.kind == kindMessage {
		if ne, ok := sharedImages(e, raw, refs); ok {
			return ne, missing, nil
		}
	}
	edits := make([]edit, len(refs))
	for k, ref := range refs {
		edits[k] = edit{ref.start, ref.end, jsonx.AppendString(nil, ref.b64), 0}
	}
	ne, perr := parseEntry(applyEdits(raw, edits))
	if perr != nil {
		return e, missing, fmt.Errorf("session: entry %s after resolving blobs: %w", e.id, perr)
	}
	return ne, missing, nil
}

// sharedImages returns the message entry e, whose bytes are raw, with the
// references at refs resolved, as a compact entry: a template of raw
// without the references' tokens, the data of each as a hole, and the
// message decoded with the data of its image blocks set, all sharing the
// same strings.
func sharedImages(e Entry, raw []byte, refs []refAt) (Entry, bool) {
	m, err := e.message(false)
	if err != nil {
		return Entry{}, false
	}
	data := make(map[string]string, len(refs))
	for _, ref := range refs {
		s, _ := jsonx.Unquote(raw[ref.start:ref.end])
		data[s] = ref.b64
	}
	for i := range m.Content {
		if b := &m.Content[i]; b.Type == BlockImage {
			if b64, ok := data[b.Data]; ok {
				b.Data = b64
			}
		}
	}
	h := &holes{n: len(raw), msg: m, cut: make([]hole, len(refs))}
	tmpl := make([]byte, 0, len(raw))
	prev := 0
	for k, ref := range refs {
		tmpl = append(tmpl, raw[prev:ref.start]...)
		h.cut[k] = hole{at: int32(len(tmpl)), s: ref.b64}
		h.n += len(ref.b64) + 2 - (ref.end - ref.start)
		prev = ref.end
	}
	tmpl = append(tmpl, raw[prev:]...)
	ne := e
	ne.raw, ne.h = tmpl, h
	// The envelope's strings may be views of the old line: copies keep it
	// from staying in memory beside the template.
	ne.typ, ne.id, ne.parent, ne.ts = strings.Clone(e.typ), strings.Clone(e.id), strings.Clone(e.parent), strings.Clone(e.ts)
	return ne, true
}
