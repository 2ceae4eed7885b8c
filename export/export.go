// Package export writes a session for people and other programs: a
// versioned JSON envelope (read back by Read and by the importer), a
// Markdown transcript and a single self-contained HTML page.
//
// CONTRACT (skeleton, filled in by the issue-17 work): Envelope's JSON
// shape and the function signatures below are what the HTML viewer, the
// importer and the CLI build on; keep them.
package export

import (
	"context"
	"encoding/json"
	"errors"
	"io"
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
//	  "redacted": {"counts": {"<rule>": n}}         // only when redacted
//	}
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
	Redacted *redact.Report    `json:"redacted,omitempty"`
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
}

// Build gathers the envelope of s.
func Build(ctx context.Context, s *session.Session, opts *Options) (*Envelope, error) {
	if opts == nil {
		opts = &Options{}
	}
	env := &Envelope{
		Format: Format, Version: Version, Exported: time.Now().UTC().Truncate(time.Second),
		Header: s.Header(), Leaf: s.LeafID(), Branch: opts.Branch,
	}
	for e := range s.Entries() {
		env.Entries = append(env.Entries, e)
	}
	for _, e := range s.Roots() {
		env.Tree.Roots = append(env.Tree.Roots, e.ID())
	}
	for _, e := range s.Leaves() {
		env.Tree.Leaves = append(env.Tree.Leaves, e.ID())
	}
	if l := s.Labels(); len(l) > 0 {
		env.Tree.Labels = l
	}
	return env, nil
}

// JSON writes the envelope of s as one JSON document.
func JSON(ctx context.Context, w io.Writer, s *session.Session, opts *Options) error {
	env, err := Build(ctx, s, opts)
	if err != nil {
		return err
	}
	return json.NewEncoder(w).Encode(env)
}

// Read reads an envelope written by JSON.
func Read(r io.Reader) (*Envelope, error) {
	var env Envelope
	if err := json.NewDecoder(r).Decode(&env); err != nil {
		return nil, err
	}
	return &env, nil
}
