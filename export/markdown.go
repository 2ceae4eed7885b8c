package export

import (
	"context"
	"errors"
	"io"

	session "github.com/agentsession/session"
)

// Markdown writes a readable transcript of s (the current branch, or
// Options.Branch).
func Markdown(ctx context.Context, w io.Writer, s *session.Session, opts *Options) error {
	return errors.New("export: Markdown not built yet")
}
