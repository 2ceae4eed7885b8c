package mirror

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"time"

	session "github.com/agentsession/session"
)

// Options configure Run.
type Options struct {
	// Sessions, when not empty, are the sessions mirrored; otherwise
	// every session of either store is, those created later included.
	Sessions []string
	// Interval is how often Run compares the two stores' listings, to
	// find the changes no event told it of (a store with no events, or
	// events lost); default DefaultInterval. Changes that a store's
	// events report (session.Subscribe) are mirrored at once.
	Interval time.Duration
	// OnSync, when set, is called after each Sync that wrote something or
	// failed.
	OnSync func(Result, error)
}

// DefaultInterval is Options.Interval when it is zero.
const DefaultInterval = 2 * time.Second

// Run mirrors sessions between local and remote until ctx ends (its
// error is then nil): a host runs it beside its agent so that every turn
// it saves reaches the remote store, and turns saved elsewhere come
// back. Each session that changed on either side is brought to the same
// log on both by Sync; its errors go to Options.OnSync, and Run goes on
// (a session that failed is tried again at the next change or
// comparison).
func Run(ctx context.Context, local, remote session.Store, opts *Options) error {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Interval <= 0 {
		o.Interval = DefaultInterval
	}
	wake := make(chan string, 256)
	for _, store := range []session.Store{local, remote} {
		sub, err := session.Subscribe(ctx, store, session.SubscribeOptions{})
		if errors.Is(err, session.ErrNoEvents) {
			continue // the comparisons find its changes
		}
		if err != nil {
			return err
		}
		defer sub.Close()
		go func() {
			for c := range sub.C() {
				select {
				case wake <- c.Session:
				default: // a comparison comes soon enough
				}
			}
		}()
	}
	seen := map[string]string{} // id → what the listings said when the copies agreed
	tick := time.NewTicker(o.Interval)
	defer tick.Stop()
	compare := true
	for {
		if compare {
			if err := pass(ctx, local, remote, &o, seen); err != nil && ctx.Err() == nil && o.OnSync != nil {
				o.OnSync(Result{}, err)
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
			compare = true
		case id := <-wake:
			compare = false
			if id != "" && (len(o.Sessions) == 0 || slices.Contains(o.Sessions, id)) {
				syncOne(ctx, local, remote, id, &o)
			} else if id == "" {
				compare = true
			}
		}
	}
}

// pass compares the listings of the two stores and syncs the sessions
// whose listing changed since they last agreed.
func pass(ctx context.Context, local, remote session.Store, o *Options, seen map[string]string) error {
	marks := map[string]string{}
	for side, store := range []session.Store{local, remote} {
		err := listAll(ctx, store, func(info session.SessionInfo) {
			if len(o.Sessions) > 0 && !slices.Contains(o.Sessions, info.ID) {
				return
			}
			marks[info.ID] += mark(side, info)
		})
		if err != nil {
			return err
		}
	}
	for id, m := range marks {
		if seen[id] == m {
			continue
		}
		if syncOne(ctx, local, remote, id, o) == nil {
			seen[id] = m
		}
	}
	return nil
}

func syncOne(ctx context.Context, local, remote session.Store, id string, o *Options) error {
	res, err := Sync(ctx, local, remote, id)
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if o.OnSync != nil && (err != nil || res.Changed()) {
		o.OnSync(res, err)
	}
	return err
}

// mark is what a listing tells of a session's log on one side.
func mark(side int, info session.SessionInfo) string {
	return string(rune('a'+side)) + info.Updated.UTC().Format(time.RFC3339Nano) + "/" + strconv.Itoa(info.Entries) + ";"
}

// listAll calls fn for every session of store, archived ones included.
func listAll(ctx context.Context, store session.Store, fn func(session.SessionInfo)) error {
	opts := session.ListOptions{Archived: true, Limit: 1000}
	for {
		page, err := store.List(ctx, opts)
		if err != nil {
			return err
		}
		for _, info := range page.Sessions {
			fn(info)
		}
		if page.Next == "" {
			return nil
		}
		opts.Cursor = page.Next
	}
}
