package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/url"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	session "github.com/agentsession/session"
	"github.com/agentsession/session/mirror"
	"github.com/agentsession/session/pgstore"
	"github.com/agentsession/session/s3store"
)

// mirror: the sessions of the store at --root kept the same in a remote
// store (package mirror), once or until interrupted.

var cmdMirror = &command{
	name:    "mirror",
	summary: "keep sessions the same in a remote store (S3, PostgreSQL), once or with --watch",
	usage:   "--to URL [--s3-endpoint URL] [--watch [--interval D]] [--json] [ID...]",
	common:  withJSON | withRoot,
	nargs:   [2]int{0, -1},
	setup: func(fs *flag.FlagSet, c *call) func([]string) int {
		to := fs.String("to", os.Getenv("AGENTSESSION_MIRROR_TO"), "the remote store: s3://BUCKET[/PREFIX], postgres://… (a DSN) or file:///DIR (default $AGENTSESSION_MIRROR_TO)")
		endpoint := fs.String("s3-endpoint", os.Getenv("AGENTSESSION_S3_ENDPOINT"), "the `URL` of an S3-compatible server, addressed path-style (default $AGENTSESSION_S3_ENDPOINT; none: AWS, or what the AWS SDK's environment says)")
		watch := fs.Bool("watch", false, "mirror continuously, until interrupted")
		interval := fs.Duration("interval", mirror.DefaultInterval, "with --watch, how often the two stores' listings are compared for changes no event told of")
		return func(args []string) int {
			if *to == "" {
				return c.usageError("--to needs the remote store (s3://BUCKET/PREFIX, postgres://…, file:///DIR)")
			}
			return c.mirror(*to, *endpoint, *watch, *interval, args)
		}
	},
}

// mirrorJSON is one line of mirror --json.
type mirrorJSON struct {
	ID            string `json:"id"`
	CreatedRemote bool   `json:"createdRemote"`
	CreatedLocal  bool   `json:"createdLocal"`
	Pushed        int    `json:"pushed"`
	Pulled        int    `json:"pulled"`
	Branched      int    `json:"branched"`
	Error         string `json:"error,omitempty"`
}

func (c *call) mirror(to, endpoint string, watch bool, interval time.Duration, ids []string) int {
	remote, closeRemote, err := openRemote(c.ctx, to, endpoint)
	if err != nil {
		return c.fail("mirror: %v", err)
	}
	defer closeRemote()
	local, err := session.OpenFileStore(c.root, nil)
	if err != nil {
		return c.fail("mirror: %v", err)
	}
	defer local.Close()
	failed := false
	report := func(res mirror.Result, err error) {
		out := mirrorJSON{ID: res.Session, CreatedRemote: res.CreatedRemote, CreatedLocal: res.CreatedLocal,
			Pushed: res.Pushed, Pulled: res.Pulled, Branched: res.Branched}
		if err != nil {
			failed = true
			out.Error = err.Error()
		}
		if c.json {
			c.printJSONLine(out)
			return
		}
		if err != nil {
			fmt.Fprintf(c.stderr, "agentsession: mirror: %s\n", err)
			return
		}
		fmt.Fprintf(c.stdout, "%s\n", describeSync(res))
	}
	if watch {
		err := mirror.Run(c.ctx, local, remote, &mirror.Options{Sessions: ids, Interval: interval, OnSync: report})
		if err != nil {
			return c.fail("mirror: %v", err)
		}
		return exitOK
	}
	if len(ids) == 0 {
		if ids, err = allIDs(c.ctx, local, remote); err != nil {
			return c.fail("mirror: %v", err)
		}
	}
	for _, id := range ids {
		res, err := mirror.Sync(c.ctx, local, remote, id)
		report(res, err)
	}
	if failed {
		return exitError
	}
	return exitOK
}

// describeSync says in a line what Sync did.
func describeSync(r mirror.Result) string {
	var parts []string
	switch {
	case r.CreatedRemote:
		parts = append(parts, fmt.Sprintf("created on the remote with %d entries", r.Pushed))
	case r.CreatedLocal:
		parts = append(parts, fmt.Sprintf("created here with %d entries", r.Pulled))
	default:
		if r.Pushed > 0 {
			parts = append(parts, fmt.Sprintf("pushed %d entries", r.Pushed))
		}
		if r.Branched > 0 {
			parts = append(parts, fmt.Sprintf("both sides wrote: %d local entries added to the remote as a branch", r.Branched))
		}
		if r.Pulled > 0 {
			parts = append(parts, fmt.Sprintf("pulled %d entries", r.Pulled))
		}
	}
	if len(parts) == 0 {
		parts = append(parts, "the same on both sides")
	}
	return r.Session + ": " + strings.Join(parts, "; ")
}

// allIDs returns the ids of every session of either store.
func allIDs(ctx context.Context, stores ...session.Store) ([]string, error) {
	var ids []string
	for _, s := range stores {
		opts := session.ListOptions{Archived: true, Limit: 1000}
		for {
			page, err := s.List(ctx, opts)
			if err != nil {
				return nil, err
			}
			for _, info := range page.Sessions {
				if !slices.Contains(ids, info.ID) {
					ids = append(ids, info.ID)
				}
			}
			if page.Next == "" {
				break
			}
			opts.Cursor = page.Next
		}
	}
	slices.Sort(ids)
	return ids, nil
}

// openRemote opens the store a --to URL names. Its errors never repeat
// the URL's password.
func openRemote(ctx context.Context, to, endpoint string) (session.Store, func(), error) {
	u, err := url.Parse(to)
	if err != nil {
		return nil, nil, errors.New("--to: not a URL (s3://BUCKET/PREFIX, postgres://…, file:///DIR)")
	}
	switch u.Scheme {
	case "s3":
		if u.Host == "" {
			return nil, nil, errors.New("--to s3://BUCKET[/PREFIX]: no bucket")
		}
		s, err := s3store.Open(ctx, s3store.Options{
			Bucket: u.Host, Prefix: strings.TrimPrefix(u.Path, "/"), Endpoint: endpoint, PathStyle: endpoint != "",
		})
		if err != nil {
			return nil, nil, err
		}
		return s, func() { s.Close() }, nil
	case "postgres", "postgresql":
		pool, err := pgxpool.New(ctx, to)
		if err != nil {
			return nil, nil, fmt.Errorf("--to %s: %v", u.Redacted(), errors.Unwrap(err))
		}
		if err := pgstore.Migrate(ctx, pool); err != nil {
			pool.Close()
			return nil, nil, fmt.Errorf("--to %s: %w", u.Redacted(), err)
		}
		s, err := pgstore.New(ctx, pool, nil)
		if err != nil {
			pool.Close()
			return nil, nil, err
		}
		return s, func() { s.Close(); pool.Close() }, nil
	case "file":
		if u.Path == "" {
			return nil, nil, errors.New("--to file:///DIR: no directory")
		}
		s, err := session.OpenFileStore(u.Path, nil)
		if err != nil {
			return nil, nil, err
		}
		return s, func() { s.Close() }, nil
	}
	return nil, nil, fmt.Errorf("--to: a URL of scheme %q; s3://, postgres:// or file:// is wanted", u.Scheme)
}
