package export

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"regexp"
	"slices"
	"sort"
	"time"

	session "github.com/agentsession/session"
	"github.com/agentsession/session/redact"
)

// Format names the envelope in its "format" member.
const Format = "agentsession.export"

// Version is the envelope version this package writes. Read accepts
// every version up to it and refuses a newer one with ErrNewerVersion.
const Version = 1

// ErrNewerVersion is returned by Read for an envelope of a later version.
var ErrNewerVersion = errors.New("export: envelope of a newer version")

// ErrUnknownBranch is returned by Build (and so JSON, Markdown, HTML) when
// Options.Branch names no entry of the session. It comes wrapped with
// session.ErrNotFound too.
var ErrUnknownBranch = errors.New("export: branch entry not in the session")

// Envelope is one exported session.
//
// JSON shape (version 1):
//
//	{
//	  "format": "agentsession.export",
//	  "version": 1,
//	  "exported": "2026-11-25T10:00:00Z",
//	  "header": {...the session's header line, as stored...},
//	  "leaf": "<the session's current leaf entry id>",
//	  "branch": "<entry id>",            // only when one branch was exported
//	  "entries": [{...each entry as stored, in log order...}],
//	  "tree": {"roots": [...], "leaves": [...], "labels": {"<id>": "label"}},
//	  "blobs": {"blob:sha256:<hex>": "<base64>"},   // only with Options.Blobs
//	  "unresolvedBlobs": ["blob:sha256:<hex>"],     // only with Options.Blobs, when some could not be read
//	  "redacted": {"counts": {"<rule>": n}}         // only when redacted
//	}
//
// With a branch, "leaf" is the branch entry and "entries" the path from
// its root to it.
type Envelope struct {
	Format   string            `json:"format"`
	Version  int               `json:"version"`
	Exported time.Time         `json:"exported"`
	Header   session.Header    `json:"header"`
	Leaf     string            `json:"leaf,omitempty"`
	Branch   string            `json:"branch,omitempty"`
	Entries  []session.Entry   `json:"entries"`
	Tree     Tree              `json:"tree"`
	Blobs    map[string][]byte `json:"blobs,omitempty"`
	// UnresolvedBlobs lists the references Options.Blobs found that the
	// store could not give back (missing or corrupt blobs): the entries
	// keep them, the envelope has no data for them.
	UnresolvedBlobs []string `json:"unresolvedBlobs,omitempty"`
	// WithheldBlobs lists the blobs of an export with a Redactor whose
	// data is text that holds secrets (a workspace snapshot's file, say):
	// a blob's reference is the hash of its bytes, so its data is left
	// out rather than changed.
	WithheldBlobs []string       `json:"withheldBlobs,omitempty"`
	Redacted      *redact.Report `json:"redacted,omitempty"`
}

// Tree is the shape of the entries: what a viewer needs without walking
// parent links itself.
type Tree struct {
	Roots  []string          `json:"roots"`
	Leaves []string          `json:"leaves"`
	Labels map[string]string `json:"labels,omitempty"`
}

// Options selects what is exported. The zero value (or nil) exports the
// whole tree without blobs, unredacted.
type Options struct {
	// Branch, when set, exports only the path from the root to this entry.
	Branch string
	// Blobs resolves blob references through the store (a
	// session.BlobStore) into Envelope.Blobs, so the export stands alone.
	Blobs bool
	// Redactor, when set, replaces secrets in the header and every entry
	// before anything is written; Envelope.Redacted reports the counts.
	Redactor *redact.Redactor
	// Report, when set with Redactor, has what was redacted added to it:
	// Markdown and HTML carry no envelope to read Redacted from.
	Report *redact.Report
	// MaxBlobBytes bounds the bytes of the distinct blobs Blobs gathers
	// (0: DefaultMaxBlobBytes); over it Build fails with an error
	// wrapping session.ErrTooLarge.
	MaxBlobBytes int64
}

// DefaultMaxBlobBytes bounds the blobs of one export, so that the
// envelope stays readable by Read (see MaxReadBytes).
const DefaultMaxBlobBytes = 512 << 20

// Build gathers the envelope of s.
func Build(ctx context.Context, s *session.Session, opts *Options) (*Envelope, error) {
	if opts == nil {
		opts = &Options{}
	}
	env := &Envelope{
		Format: Format, Version: Version, Exported: time.Now().UTC().Truncate(time.Second),
		Header: s.Header(), Leaf: s.LeafID(), Branch: opts.Branch,
	}
	if opts.Branch == "" {
		env.Entries = make([]session.Entry, 0, s.Len())
		for e := range s.Entries() {
			env.Entries = append(env.Entries, e)
		}
		env.Tree.Roots = ids(s.Roots())
		env.Tree.Leaves = ids(s.Leaves())
		if l := s.Labels(); len(l) > 0 {
			env.Tree.Labels = l
		}
	} else {
		path, err := s.PathTo(opts.Branch)
		if err != nil {
			if errors.Is(err, session.ErrNotFound) {
				return nil, fmt.Errorf("%w: %q: %w", ErrUnknownBranch, opts.Branch, err)
			}
			return nil, err
		}
		env.Entries, env.Leaf = path, opts.Branch
		env.Tree.Roots, env.Tree.Leaves = []string{path[0].ID()}, []string{opts.Branch}
		for _, e := range path {
			if l := s.LabelOf(e.ID()); l != "" {
				if env.Tree.Labels == nil {
					env.Tree.Labels = map[string]string{}
				}
				env.Tree.Labels[e.ID()] = l
			}
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if opts.Redactor != nil {
		if err := redactEnvelope(ctx, env, opts); err != nil {
			return nil, err
		}
	}
	if opts.Blobs {
		if err := gatherBlobs(ctx, env, s.Store(), opts.MaxBlobBytes); err != nil {
			return nil, err
		}
		if opts.Redactor != nil {
			withholdBlobs(env, opts)
		}
	}
	return env, nil
}

func ids(es []session.Entry) []string {
	out := make([]string, len(es))
	for i, e := range es {
		out[i] = e.ID()
	}
	return out
}

// redactEnvelope replaces secrets in every member of the header
// (session.RedactWholeHeader: the metadata and the working directory
// too, which a store keeps) and in every entry as session.Redact does on
// the way to a store (session.RedactEntry): what makes the tree (an
// entry's type, id, parentId and timestamp) and binary data (images) are
// left alone, so that the envelope still imports and shows.
func redactEnvelope(ctx context.Context, env *Envelope, opts *Options) error {
	r := opts.Redactor
	rep := &redact.Report{Counts: map[string]int{}}
	// Every member of the header, the metadata and the working directory
	// included (a store keeps those as they are: it lists by them).
	h, hr, err := session.RedactWholeHeader(r, env.Header)
	if err != nil {
		return fmt.Errorf("export: redact header: %w", err)
	}
	rep.Add(hr)
	// An id the rules take for a secret is replaced by a name made from
	// its hash: the envelope still has one id, which imports.
	if out, ir := r.String(h.ID); out != h.ID {
		sum := sha256.Sum256([]byte(h.ID))
		h.ID = "redacted-" + hex.EncodeToString(sum[:12])
		rep.Add(ir)
	}
	env.Header = h
	for i, e := range env.Entries {
		if i%1024 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		ne, er, err := session.RedactEntry(r, e)
		if err != nil {
			return fmt.Errorf("export: %w", err)
		}
		env.Entries[i] = ne
		rep.Add(er)
	}
	if len(env.Tree.Labels) > 0 { // a label is an entry too, counted there
		labels := make(map[string]string, len(env.Tree.Labels))
		for id, l := range env.Tree.Labels {
			labels[id], _ = r.String(l)
		}
		env.Tree.Labels = labels
	}
	env.Redacted = rep
	if opts.Report != nil {
		opts.Report.Add(*rep)
	}
	return nil
}

// gatherBlobs reads every blob the entries refer to into env.Blobs.
func gatherBlobs(ctx context.Context, env *Envelope, store session.Store, max int64) error {
	if max <= 0 {
		max = DefaultMaxBlobBytes
	}
	refs := map[string]struct{}{}
	for _, e := range env.Entries {
		scanRefs(e.AppendJSON(nil), func(ref string) { refs[ref] = struct{}{} })
	}
	if len(refs) == 0 {
		return nil
	}
	sorted := make([]string, 0, len(refs))
	for r := range refs {
		sorted = append(sorted, r)
	}
	sort.Strings(sorted)
	blobs, ok := session.BlobsOf(store)
	if !ok {
		env.UnresolvedBlobs = sorted
		return nil
	}
	env.Blobs = map[string][]byte{}
	var total int64
	for _, ref := range sorted {
		b, err := blobs.GetBlob(ctx, ref)
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			env.UnresolvedBlobs = append(env.UnresolvedBlobs, ref)
			continue
		}
		if total += int64(len(b)); total > max {
			return fmt.Errorf("export: blobs over %d bytes: %w", max, session.ErrTooLarge)
		}
		env.Blobs[ref] = b
	}
	return nil
}

// withholdBlobs leaves out of env the blobs whose data holds text in
// which the redactor finds a secret (see withhold: every text the bytes
// may be, not UTF-8 alone), and lists them in WithheldBlobs.
func withholdBlobs(env *Envelope, opts *Options) {
	for _, ref := range slices.Sorted(maps.Keys(env.Blobs)) {
		data := env.Blobs[ref]
		if hold, rep := withhold(opts.Redactor, data); hold {
			delete(env.Blobs, ref)
			env.WithheldBlobs = append(env.WithheldBlobs, ref)
			env.Redacted.Add(rep)
			if opts.Report != nil {
				opts.Report.Add(rep)
			}
		}
	}
}

// blobRef matches a blob reference spelled out in an entry.
var blobRef = regexp.MustCompile(`blob:sha256:[0-9a-f]{64}`)

// scanRefs calls fn with every blob reference in the entry b.
func scanRefs(b []byte, fn func(ref string)) {
	if !bytes.Contains(b, []byte(session.BlobPrefix)) {
		return
	}
	for _, m := range blobRef.FindAll(b, -1) {
		fn(string(m))
	}
}

// JSON writes the envelope of s as one JSON document.
func JSON(ctx context.Context, w io.Writer, s *session.Session, opts *Options) error {
	env, err := Build(ctx, s, opts)
	if err != nil {
		return err
	}
	_, err = env.WriteTo(w)
	return err
}

// WriteTo writes env as JSON, one entry a line, each entry's bytes as
// stored (encoding/json would escape <, > and & in them). It streams:
// the entries are not gathered into one buffer first.
func (env *Envelope) WriteTo(w io.Writer) (int64, error) {
	cw := &countWriter{w: w}
	bw := bufio.NewWriterSize(cw, 64<<10)
	head := struct {
		Format   string    `json:"format"`
		Version  int       `json:"version"`
		Exported time.Time `json:"exported"`
	}{env.Format, env.Version, env.Exported}
	b, err := marshal(head)
	if err != nil {
		return 0, err
	}
	bw.Write(b[:len(b)-1]) // without its closing brace
	hb, err := env.Header.MarshalJSON()
	if err != nil {
		return 0, err
	}
	bw.WriteString(`,"header":`)
	bw.Write(hb)
	member(bw, "leaf", env.Leaf)
	member(bw, "branch", env.Branch)
	bw.WriteString(`,"entries":[`)
	var buf []byte
	for i, e := range env.Entries {
		if i > 0 {
			bw.WriteByte(',')
		}
		bw.WriteByte('\n')
		buf = e.AppendJSON(buf[:0])
		bw.Write(buf)
	}
	bw.WriteString("\n]")
	tail := struct {
		Tree            Tree              `json:"tree"`
		Blobs           map[string][]byte `json:"blobs,omitempty"`
		UnresolvedBlobs []string          `json:"unresolvedBlobs,omitempty"`
		WithheldBlobs   []string          `json:"withheldBlobs,omitempty"`
		Redacted        *redact.Report    `json:"redacted,omitempty"`
	}{env.Tree, env.Blobs, env.UnresolvedBlobs, env.WithheldBlobs, env.Redacted}
	if tail.Tree.Roots == nil {
		tail.Tree.Roots = []string{}
	}
	if tail.Tree.Leaves == nil {
		tail.Tree.Leaves = []string{}
	}
	if b, err = marshal(tail); err != nil {
		return cw.n, err
	}
	bw.WriteByte(',')
	bw.Write(b[1:]) // without its opening brace
	bw.WriteByte('\n')
	if err := bw.Flush(); err != nil {
		return cw.n, err
	}
	return cw.n, nil
}

// marshal is json.Marshal without HTML escaping and without the newline.
func marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

func member(w *bufio.Writer, key, v string) {
	if v == "" {
		return
	}
	b, _ := marshal(v)
	w.WriteString(`,"` + key + `":`)
	w.Write(b)
}

type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}
