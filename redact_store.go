package session

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"
	"unsafe"

	"github.com/agentsession/session/internal/jsonx"
	"github.com/agentsession/session/redact"
)

// RedactStore is a Store middleware that keeps secrets from ever
// reaching the store beneath it: what Redact returns.
//
// Every entry appended or rewritten through it has each of its strings
// passed through the redactor (Redactor.String, as Redactor.JSON does)
// before the store beneath sees it, except:
//
//   - the envelope (type, id, parentId, timestamp), which stores index;
//   - base64 data of binary content (an image, a PDF, audio, an
//     archive), which a rule could only damage.
//
// Whether base64 data is binary is decided by what it decodes to, not by
// the media type it claims: data that holds text (a document block's,
// an image's that is SVG, an Anthropic base64 source, a .env sent as
// application/octet-stream or as a PDF; UTF-8, UTF-16 or Latin-1) is
// decoded, redacted and encoded again (redact.Redactor.Base64Text);
// binary (by its magic number or its bytes) is left alone, and an
// image's "data" that is no base64 at all is redacted as a string. The
// names of members are redacted too (a map keyed by tokens holds them
// there), and every member of an object, a duplicated one included.
//
// The entry's other bytes are kept as they are (no re-encoding), and an
// entry with nothing to redact is passed on unchanged, so a log without
// secrets is stored byte for byte, and a retried append stays a retry.
//
// Of the header, the title and the members this package does not model
// (Header.Extra) are redacted as entries are; the metadata given at
// creation (Meta: project, user, app, version and the free pairs, keys
// and values) and the working directory are redacted by every rule but
// those of home directories (redact.Redactor.WithoutHomePaths): they are
// what listings filter on (ListOptions.Cwd, Continue, the metadata), and
// replacing a home directory in them would hide the sessions from a
// listing by their directory; a secret in them is replaced all the same.
// The id, timestamp, version and parent session are kept.
//
// The default rules replace home directories too ("/home/ada/app/x.go"
// becomes "~/app/x.go"), in tool arguments and results as anywhere: a
// host that needs its stored paths whole passes a Redactor without them
// (redact.Options.Home empty and the "home-path" rule left out of
// Rules).
//
// What is read back is what was stored: redacted. A Session writing
// through a RedactStore keeps its own entries as it made them until it
// is opened again.
//
// Blobs pass through unchanged (PutBlob, GetBlob, and collection when
// the store beneath keeps them): they are binary, images that FileStore
// moves out of entries after redaction, or what a host puts there itself
// (workspace snapshots: file contents, which are not redacted). Events
// are those of the store beneath, about what it stored. Shared state
// (SharedStateStore) is redacted like entries on its way in.
//
// It keeps a running Report of what it replaced (Report).
type RedactStore struct {
	*WrappedStore
	r *redact.Redactor

	mu  sync.Mutex
	rep redact.Report
}

var (
	_ Store            = (*RedactStore)(nil)
	_ TailLoader       = (*RedactStore)(nil)
	_ Archiver         = (*RedactStore)(nil)
	_ CompactionMarker = (*RedactStore)(nil)
	_ Flusher          = (*RedactStore)(nil)
	_ SessionCloser    = (*RedactStore)(nil)
	_ Subscriber       = (*RedactStore)(nil)
	_ SharedStateStore = (*RedactStore)(nil)
	_ BlobStore        = (*RedactStore)(nil)
	_ BlobCollector    = (*RedactStore)(nil)
	_ BlobSweeper      = (*RedactStore)(nil)
)

// Redact returns store behind a middleware that redacts with r every
// entry and header written to it (see RedactStore). r nil means
// redact.New(nil): the default rules.
func Redact(store Store, r *redact.Redactor) *RedactStore {
	if r == nil {
		r = redact.New(nil)
	}
	rs := &RedactStore{r: r}
	rs.WrappedStore = WrapStore(store, redactCodec{rs})
	return rs
}

// Report returns what the store has redacted so far, counted per rule.
func (rs *RedactStore) Report() redact.Report {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	var out redact.Report
	out.Add(rs.rep)
	return out
}

func (rs *RedactStore) note(rep redact.Report) {
	if rep.Total() == 0 {
		return
	}
	rs.mu.Lock()
	rs.rep.Add(rep)
	rs.mu.Unlock()
}

// redactCodec is the StoreCodec of a RedactStore: it redacts on the way
// in and changes nothing on the way out.
type redactCodec struct{ rs *RedactStore }

func (c redactCodec) EncodeHeader(_ context.Context, h Header) (Header, error) {
	h, rep, err := redactHeader(c.rs.r, h)
	c.rs.note(rep)
	return h, err
}

func (redactCodec) DecodeHeader(_ context.Context, h Header) (Header, error) { return h, nil }

func (c redactCodec) EncodeEntry(_ context.Context, _ string, e Entry) (Entry, error) {
	e, rep, err := RedactEntry(c.rs.r, e)
	c.rs.note(rep)
	return e, err
}

func (redactCodec) DecodeEntry(_ context.Context, _ string, e Entry) (Entry, error) { return e, nil }

func (redactCodec) DecodeInfo(context.Context, *SessionInfo) error { return nil }

// redactHeader returns h with its title and the members of Extra
// redacted by r, its working directory and metadata by r without its
// rules of home directories (see RedactStore: listings filter by them),
// and what r replaced. RedactStore redacts headers with it.
func redactHeader(r *redact.Redactor, h Header) (Header, redact.Report, error) {
	var rep redact.Report
	out, n := r.String(h.Title)
	rep.Add(n)
	h.Title = out
	keep := r.WithoutHomePaths()
	out, n = keep.String(h.Cwd)
	rep.Add(n)
	h.Cwd = out
	if len(h.Extra) > 0 {
		h.Extra = slices.Clone(h.Extra) // the caller's header is not changed
	}
	for i, f := range h.Extra {
		r := r
		if f.Key == headerMetaKey {
			r = keep
		}
		v, _, err := redactValue(r, f.Value, false, &rep)
		if err != nil {
			return h, rep, fmt.Errorf("session: header member %q: %w", f.Key, err)
		}
		h.Extra[i].Value = v
		k, kr := r.String(f.Key)
		rep.Add(kr)
		h.Extra[i].Key = k
	}
	return h, rep, nil
}

// RedactWholeHeader returns h with every member redacted by r but its
// id and version: the title, the working directory, the parent session
// and every member of Extra, the metadata given at creation (Meta:
// project, user, app, version, the free pairs) included. Exports, which
// leave the machine, redact the header with it; a store keeps what it
// lists and filters by (see redactHeader).
func RedactWholeHeader(r *redact.Redactor, h Header) (Header, redact.Report, error) {
	var rep redact.Report
	h.Extra = slices.Clone(h.Extra) // the caller's header is not changed
	for _, f := range []*string{&h.Title, &h.Cwd, &h.ParentSession} {
		out, n := r.String(*f)
		rep.Add(n)
		*f = out
	}
	for i, f := range h.Extra {
		v, _, err := redactValue(r, f.Value, false, &rep)
		if err != nil {
			return h, rep, fmt.Errorf("session: header member %q: %w", f.Key, err)
		}
		h.Extra[i].Value = v
		k, kr := r.String(f.Key)
		rep.Add(kr)
		h.Extra[i].Key = k
	}
	return h, rep, nil
}

// RedactEntry returns e with every string of its payload redacted by r,
// its type, id, parent and timestamp kept, and an image's data left
// alone (binary, which a rule could only damage); e itself, byte for
// byte, when nothing was replaced.
func RedactEntry(r *redact.Redactor, e Entry) (Entry, redact.Report, error) {
	var rep redact.Report
	out, changed, err := redactValue(r, e.bytes(), true, &rep)
	if err != nil {
		return Entry{}, rep, fmt.Errorf("session: redacting entry %s: %w", e.id, err)
	}
	if !changed {
		return e, rep, nil
	}
	ne, err := parseEntry(out)
	if err != nil {
		return Entry{}, rep, fmt.Errorf("session: redacting entry %s: %w", e.id, err)
	}
	return ne, rep, nil
}

// redactValue returns the JSON value v with its strings redacted (see
// RedactStore), in a new slice, or v itself when nothing changed
// (changed false). With entry, v is an entry and its envelope members
// are kept.
func redactValue(r *redact.Redactor, v []byte, entry bool, rep *redact.Report) (out []byte, changed bool, err error) {
	w := redactWalk{r: r, raw: v, rep: rep}
	var c jsonx.Cursor
	c.Reset(v)
	w.walk(&c, entry)
	if err := c.Err(); err != nil {
		return nil, false, err
	}
	return applyEdits(v, w.edits), len(w.edits) > 0, nil
}

type redactWalk struct {
	r     *redact.Redactor
	raw   []byte
	rep   *redact.Report
	edits []edit
}

// str redacts the string token at start, the value of the member key
// ("" when it is no member's: the key judges the value too, see
// redact.Redactor.Member).
func (w *redactWalk) str(key string, start int, tok []byte) {
	s, err := jsonx.Unquote(tok)
	if err != nil {
		return // the cursor has already met it: Err reports it
	}
	out, r := w.r.Member(key, s)
	w.rep.Add(r)
	if out != s {
		w.edits = append(w.edits, edit{start, start + len(tok), jsonx.AppendString(nil, out), 0})
	}
}

// args redacts the array at c when its elements are all strings, two or
// more: a command's arguments one a string (an exec-style tool call),
// whose credentials ("-p", "X") no string shows alone
// (redact.Redactor.Args), then each string as any. It reads nothing and
// returns false for another array.
func (w *redactWalk) args(c *jsonx.Cursor) bool {
	mark := c.Mark()
	as, _ := c.Array()
	var starts []int
	var toks [][]byte
	for as.Next() {
		if c.Kind() != jsonx.KindString || len(toks) == 4096 {
			c.Restore(mark)
			return false
		}
		starts = append(starts, c.Pos())
		toks = append(toks, c.Skip())
	}
	if c.Err() != nil || len(toks) < 2 {
		if c.Err() == nil {
			for i, tok := range toks {
				w.str("", starts[i], tok)
			}
		}
		return c.Err() == nil
	}
	argv := make([]string, len(toks))
	for i, tok := range toks {
		s, err := jsonx.Unquote(tok)
		if err != nil {
			return true // the cursor has met it: Err reports it
		}
		argv[i] = s
	}
	out, rep := w.r.Args(argv)
	w.rep.Add(rep)
	for i, tok := range toks {
		v, r := w.r.Member("", out[i])
		w.rep.Add(r)
		if v != argv[i] {
			w.edits = append(w.edits, edit{starts[i], starts[i] + len(tok), jsonx.AppendString(nil, v), 0})
		}
	}
	return true
}

// key redacts a member's name (kb, a view of raw between the quotes): a
// name is seldom a secret, but a map keyed by tokens holds them there.
func (w *redactWalk) key(kb []byte, key string) {
	out, rep := w.r.String(key)
	if out == key {
		return
	}
	w.rep.Add(rep)
	start := cap(w.raw) - cap(kb) - 1 // the opening quote: kb is a view of raw
	if start < 0 || start+len(kb)+2 > len(w.raw) {
		return
	}
	w.edits = append(w.edits, edit{start, start + len(kb) + 2, jsonx.AppendString(nil, out), 0})
}

// data redacts the "data" string token at start (of an image, a
// document, any object): base64 is decoded when it holds text, redacted
// and encoded again (redact.Redactor.Base64Text: the bytes decide, not
// the media type), and left alone when binary; any other string (an
// image's data that is text, not base64) is redacted as a string. A blob
// reference is kept.
func (w *redactWalk) data(start int, tok []byte, mediaType string) {
	body := tok[1 : len(tok)-1]
	var s string
	if bytes.IndexByte(body, '\\') < 0 {
		if len(body) > 0 {
			s = unsafe.String(&body[0], len(body)) // read only: raw is not changed
		}
	} else {
		var err error
		if s, err = jsonx.Unquote(tok); err != nil {
			return
		}
	}
	if strings.HasPrefix(s, BlobPrefix) {
		return
	}
	if base64Chars(s) {
		out, rep := w.r.Base64Text(s, mediaType)
		w.rep.Add(rep)
		if out != s {
			w.edits = append(w.edits, edit{start, start + len(tok), jsonx.AppendString(nil, out), 0})
		}
		if out != s || len(s) >= 16 {
			return // base64 of binary, or of text with nothing to replace
		}
	}
	w.str("data", start, tok)
}

// base64Chars reports a string of base64 characters (either alphabet,
// padded or not).
func base64Chars(s string) bool {
	if s == "" {
		return false
	}
	t := strings.TrimRight(s, "=")
	if len(s)-len(t) > 2 {
		return false
	}
	for i := 0; i < len(t); i++ {
		c := t[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '+' || c == '/' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

// walk redacts the value at c; top says it is an entry, whose envelope
// is kept.
func (w *redactWalk) walk(c *jsonx.Cursor, top bool) {
	switch c.Kind() {
	case jsonx.KindString:
		start := c.Pos()
		w.str("", start, c.Skip())
	case jsonx.KindArray:
		if w.args(c) {
			return
		}
		as, _ := c.Array()
		for as.Next() {
			w.walk(c, false)
		}
	case jsonx.KindObject:
		ms, _ := c.Object()
		var datas []dataMember
		var pair namedPair
		mediaType := ""
		for {
			kb, esc, more := ms.Next()
			if !more {
				break
			}
			key := string(kb)
			if esc {
				key = ms.Key()
			}
			if top && (key == "type" || key == "id" || key == "parentId" || key == "timestamp") {
				continue // Next skips the value
			}
			w.key(kb, key)
			if c.Kind() != jsonx.KindString {
				w.walk(c, false)
				continue
			}
			start := c.Pos()
			tok := c.Skip()
			switch key {
			case "data":
				datas = append(datas, dataMember{start, tok}) // judged once the media type is known
				continue
			case "mimeType", "media_type", "mediaType", "mime_type", "contentType", "content_type":
				mediaType, _ = jsonx.Unquote(tok)
			}
			if pair.note(key, start, tok) {
				continue // judged with its name
			}
			w.str(key, start, tok)
		}
		for _, d := range datas {
			w.data(d.start, d.tok, mediaType)
		}
		pair.redact(w)
	default:
		c.Skip()
	}
}

// dataMember is a "data" member's string token and where it starts.
type dataMember struct {
	start int
	tok   []byte
}

// namedPair follows the members of an object that names its value in
// another member: {"name": "DB_PASSWORD", "value": "..."}, an AWS SSM
// parameter ({"Name": ..., "Type": "SecureString", "Value": ...}), a
// browser's cookie (redact.Redactor.NamedValue).
type namedPair struct {
	name    string
	hasName bool
	secure  bool
	values  []dataMember // the "value" members
}

// note takes the member key's string token, and reports whether it is
// a value judged by redact with its name.
func (p *namedPair) note(key string, start int, tok []byte) bool {
	switch key {
	case "name", "Name", "key", "Key", "label", "Label":
		p.name, _ = jsonx.Unquote(tok)
		p.hasName = true
	case "type", "Type":
		p.secure = p.secure || string(tok) == `"SecureString"` || string(tok) == `"CONCEALED"`
	case "value", "Value":
		p.values = append(p.values, dataMember{start, tok})
		return true
	}
	return false
}

// redact redacts the value members noted, with the object's name.
func (p *namedPair) redact(w *redactWalk) {
	for _, v := range p.values {
		if !p.hasName && !p.secure {
			w.str("value", v.start, v.tok)
			continue
		}
		s, err := jsonx.Unquote(v.tok)
		if err != nil {
			continue
		}
		out, rep := w.r.NamedValue(p.name, s, p.secure)
		w.rep.Add(rep)
		if out != s {
			w.edits = append(w.edits, edit{v.start, v.start + len(v.tok), jsonx.AppendString(nil, out), 0})
		}
	}
}

// Subscribe implements Subscriber with the store's: its changes are
// about what it stored, redacted.
func (rs *RedactStore) Subscribe(ctx context.Context, opts SubscribeOptions) (*Subscription, error) {
	return Subscribe(ctx, rs.inner, opts)
}

// LoadState implements SharedStateStore with the store's
// (ErrNoSharedState when it keeps none).
func (rs *RedactStore) LoadState(ctx context.Context, scope StateScope, owner string) (State, error) {
	ss, err := rs.shared()
	if err != nil {
		return nil, err
	}
	return ss.LoadState(ctx, scope, owner)
}

// UpdateState implements SharedStateStore: the values of delta are
// redacted before the store's sees them.
func (rs *RedactStore) UpdateState(ctx context.Context, scope StateScope, owner string, delta State) error {
	ss, err := rs.shared()
	if err != nil {
		return err
	}
	var rep redact.Report
	out := make(State, len(delta))
	for k, v := range delta {
		if out[k], _, err = redactValue(rs.r, v, false, &rep); err != nil {
			return fmt.Errorf("session: state %q: %w", k, err)
		}
	}
	if err := ss.UpdateState(ctx, scope, owner, out); err != nil {
		return err
	}
	rs.note(rep)
	return nil
}

func (rs *RedactStore) shared() (SharedStateStore, error) { return sharedStateOf(rs.inner) }

// PutBlob implements BlobStore with the store's (errors.ErrUnsupported
// when it keeps none). The bytes are not redacted.
func (rs *RedactStore) PutBlob(ctx context.Context, data []byte) (string, error) {
	b, err := rs.blobs()
	if err != nil {
		return "", err
	}
	return b.PutBlob(ctx, data)
}

// GetBlob implements BlobStore like PutBlob.
func (rs *RedactStore) GetBlob(ctx context.Context, ref string) ([]byte, error) {
	b, err := rs.blobs()
	if err != nil {
		return nil, err
	}
	return b.GetBlob(ctx, ref)
}

// ListBlobs implements BlobCollector with the store's, so that
// CollectBlobs runs through the middleware.
func (rs *RedactStore) ListBlobs(ctx context.Context, fn func(BlobInfo) error) error {
	c, err := rs.collector()
	if err != nil {
		return err
	}
	return c.ListBlobs(ctx, fn)
}

// DeleteBlob implements BlobCollector like ListBlobs.
func (rs *RedactStore) DeleteBlob(ctx context.Context, ref string) error {
	c, err := rs.collector()
	if err != nil {
		return err
	}
	return c.DeleteBlob(ctx, ref)
}

// DeleteBlobIfOlder implements BlobSweeper with the store's, or, on a
// collector without it, fails with errors.ErrUnsupported.
func (rs *RedactStore) DeleteBlobIfOlder(ctx context.Context, ref string, cutoff time.Time) (bool, error) {
	c, err := rs.collector()
	if err != nil {
		return false, err
	}
	s, ok := c.(BlobSweeper)
	if !ok {
		return false, fmt.Errorf("session: %T: %w", c, errors.ErrUnsupported)
	}
	return s.DeleteBlobIfOlder(ctx, ref, cutoff)
}

func (rs *RedactStore) blobs() (BlobStore, error) { return blobStoreOf(rs.inner) }

func (rs *RedactStore) collector() (BlobCollector, error) {
	c, ok := blobCollectorOf(rs.inner)
	if !ok {
		return nil, fmt.Errorf("session: %T cannot collect blobs: %w", rs.inner, errors.ErrUnsupported)
	}
	return c, nil
}
