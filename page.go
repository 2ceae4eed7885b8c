package session

import (
	"context"
	"errors"
	"fmt"
)

// PageOptions selects a page of the messages on the path from the root
// to a leaf, for a UI that shows a long session a screen at a time.
type PageOptions struct {
	// Leaf is the end of the path; default the session's leaf.
	Leaf string
	// Limit is the page size; default DefaultPageLimit.
	Limit int
	// Before keeps the messages before this entry of the path (the
	// Limit last of them); After the messages after it (the Limit first).
	// With neither, the page is the Limit last messages. Setting both is
	// an error.
	Before, After string
}

// DefaultPageLimit is PageOptions.Limit when it is zero.
const DefaultPageLimit = 50

// MessagePage is a page of messages.
type MessagePage struct {
	// Entries are the page's entries, oldest first: messages, custom
	// messages, and the branch and compaction summaries a transcript
	// shows. Their messages are decoded only when asked for
	// (Entry.Message, or Session.ContextAt).
	Entries []Entry
	// Older and Newer tell whether the path has messages before and
	// after the page.
	Older, Newer bool
}

// MessagePage returns a page of the messages on the path to opts.Leaf
// without decoding any: the cost is a walk of the path's entries
// (ErrNotFound for an unknown Leaf, or a Before or After entry that is
// not on the path).
func (s *Session) MessagePage(opts PageOptions) (*MessagePage, error) {
	if err := s.makeWhole(context.Background()); err != nil {
		return nil, err
	}
	if s == nil {
		return nil, ErrNilSession
	}
	if opts.Before != "" && opts.After != "" {
		return nil, errors.New("session: MessagePage with both Before and After")
	}
	limit := opts.Limit
	if limit <= 0 {
		limit = DefaultPageLimit
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, ErrClosed
	}
	leaf := s.leaf
	if opts.Leaf != "" {
		i, ok := s.t.lookup(opts.Leaf)
		if !ok {
			return nil, fmt.Errorf("%w: entry %s", ErrNotFound, opts.Leaf)
		}
		leaf = i
	}
	path := s.t.pathTo(leaf)
	// Positions of the transcript's entries on the path, and of the
	// anchor.
	var shown []int32
	anchor, anchorAt := opts.Before+opts.After, -1
	for _, i := range path {
		e := s.t.nodes[i].e
		if anchor != "" && e.id == anchor {
			anchorAt = len(shown)
		}
		switch e.kind {
		case kindMessage, kindCustomMessage, kindBranchSummary, kindCompaction:
			shown = append(shown, i)
		}
	}
	if anchor != "" && anchorAt < 0 {
		return nil, fmt.Errorf("%w: entry %s is not on the path", ErrNotFound, anchor)
	}
	lo, hi := max(len(shown)-limit, 0), len(shown)
	switch {
	case opts.Before != "":
		// The anchor's own position counts as after it.
		hi = anchorAt
		lo = max(hi-limit, 0)
	case opts.After != "":
		lo = anchorAt
		if lo < len(shown) && s.t.nodes[shown[lo]].e.id == opts.After {
			lo++ // the anchor itself is not after itself
		}
		hi = min(lo+limit, len(shown))
	}
	return &MessagePage{Entries: s.entries(shown[lo:hi]), Older: lo > 0, Newer: hi < len(shown)}, nil
}
