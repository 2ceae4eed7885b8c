package importer

import (
	"context"
	"fmt"
	"regexp"

	"github.com/agentsession/session/export"
)

// The reader of this module's own export envelope (package export).

// envelopeFormat finds the "format" member of an envelope in the first
// bytes of a file (the writer puts it first; a pretty-printer keeps it
// near the start).
var envelopeFormat = regexp.MustCompile(`"format"\s*:\s*"` + regexp.QuoteMeta(export.Format) + `"`)

func sniffJSON(head []byte) bool {
	for len(head) > 0 && (head[0] == ' ' || head[0] == '\t' || head[0] == '\r' || head[0] == '\n') {
		head = head[1:]
	}
	return len(head) > 0 && head[0] == '{' && envelopeFormat.Match(head)
}

// readJSON reads one envelope (export.Read: bounded by
// export.MaxReadBytes; a foreign, newer or malformed envelope is an
// error for the whole file). Its entries are imported as they are.
func readJSON(ctx context.Context, rt *root, rel string) ([]*Parsed, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	path := rt.path(rel)
	f, err := rt.open(rel, export.MaxReadBytes, false)
	if err != nil {
		return nil, fmt.Errorf("importer: %w", err)
	}
	defer f.Close()
	env, err := export.Read(f)
	if err != nil {
		return nil, fmt.Errorf("importer: %w", err)
	}
	return []*Parsed{{
		Format: JSON, Source: path, Header: env.Header, Entries: env.Entries, Blobs: env.Blobs,
	}}, nil
}
