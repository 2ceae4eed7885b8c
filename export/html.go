package export

import (
	"context"
	"errors"
	"io"

	session "github.com/agentsession/session"
)

// HTML writes a single self-contained HTML page showing the whole tree of
// s (or Options.Branch): it needs no network to view.
func HTML(ctx context.Context, w io.Writer, s *session.Session, opts *Options) error {
	return errors.New("export: HTML not built yet")
}
