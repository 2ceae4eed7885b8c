package session

import (
	"cmp"
	"context"
	"fmt"
	"strings"

	"github.com/agentsession/session/internal/jsonx"
)

// Replacing a run of entries on the path (the Opal agent's
// replace_path_segment), append-only: the replacement and copies of what
// followed the run go on a new branch, and the leaf moves to its end.

// SegmentReplacement is what takes the place of a run of entries: a
// summary of it, new messages (an edited message, a shorter exchange),
// or both, the summary first. Both empty removes the run.
type SegmentReplacement struct {
	// Summary, when not empty, becomes a branch_summary entry (pi shows it,
	// and the context carries it as a branchSummary message), with
	// SummaryDetails (any JSON value, or nil) as its details.
	Summary        string
	SummaryDetails any
	// Messages are appended after the summary, as Append takes them.
	Messages []*Message
}

// PathEdit is what ReplacePathSegment did.
type PathEdit struct {
	// From is the leaf before the edit: Branch to it to undo the edit.
	// To is the new leaf.
	From, To string
	// Replaced lists the entries of the run, which stay in the log off the
	// new path.
	Replaced []string
	// Added holds the new entries in order: the replacement, then the
	// copies of the entries that followed the run on the path.
	Added []Entry
	// Copied is how many of Added are copies.
	Copied int
}

// ReplacePathSegment replaces the run of entries from first to last (ids
// or checkpoint names, see Resolve; first may equal last) on the path to
// the leaf with rep, as an append-only edit: the replacement entries are
// appended under the entry before the run, then copies of the entries
// that followed the run (new ids; same payloads and times), and the leaf
// moves to the last of them. Nothing is deleted or rewritten: the old
// path stays in the log as a branch (PathEdit.From), and a pi reader,
// which takes the last entry of a file as its leaf, reads the new path.
//
// The copies keep the tree's meaning: a compaction that kept history
// from an entry of the run keeps it from the first entry of the
// replacement (or what follows), one that kept it from a copied entry
// keeps it from the copy; a label of a copied entry names the copy (the
// checkpoint follows the live path); labels of the run's entries, labels
// of earlier entries, titles and metadata changes are not copied (they
// are in force already), and what referred to one of them refers to the
// next copy, as in a Fork. The edit is refused (ErrPathEdit) when it would
// unpair a tool call and its result that the path had paired.
func (s *Session) ReplacePathSegment(ctx context.Context, first, last string, rep SegmentReplacement) (*PathEdit, error) {
	if err := s.makeWhole(ctx); err != nil {
		return nil, err
	}
	details, err := marshalRaw(rep.SummaryDetails)
	if err != nil {
		return nil, fmt.Errorf("session: summary details: %w", err)
	}
	if err := s.lock(ctx); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	own := make([]*Message, len(rep.Messages))
	for k, m := range rep.Messages {
		if own[k], err = s.prepare(m); err != nil {
			return nil, err
		}
	}
	plan, err := s.planSegment(first, last)
	if err != nil {
		return nil, err
	}
	if err := s.checkSegmentPairing(plan, own); err != nil {
		return nil, err
	}
	edit := &PathEdit{From: s.leafID(), Replaced: plan.run}
	if rep.Summary == "" && len(own) == 0 && !plan.copiesAny() {
		// Nothing to append: the run was the end of the path.
		if err := s.branch(ctx, plan.before); err != nil {
			return nil, err
		}
		edit.To = plan.before
		return edit, nil
	}
	build := func(d *draft) ([]Entry, error) {
		var out []Entry
		parent := d.parent
		add := func(e Entry) {
			out = append(out, e)
			parent = e.id
		}
		if rep.Summary != "" {
			e, err := NewEntry(TypeBranchSummary, d.newID(), parent, d.now, BranchSummary{FromID: plan.run[len(plan.run)-1], Summary: rep.Summary, Details: details})
			if err != nil {
				return nil, err
			}
			add(prepEntry(e))
		}
		for _, m := range own {
			if m.Timestamp == 0 {
				m.Timestamp = d.now.UnixMilli()
			}
			e, err := newMessageEntry(d.newID(), parent, d.stamp, m)
			if err != nil {
				return nil, err
			}
			add(e)
		}
		inRun := map[string]bool{}
		for _, id := range plan.run {
			inRun[id] = true
		}
		copies := map[string]string{} // old id -> copy's id
		firstAfter := ""              // the first entry after the run on the new path
		if len(out) > 0 {
			firstAfter = out[0].id
		}
		// Entries not copied (titles, metadata changes, markers, labels of
		// entries not copied): what referred to one refers to the next
		// copy, as Fork does.
		var skipped []string
		for k, old := range plan.tail {
			if !plan.copyable(k, copies) {
				skipped = append(skipped, old.id)
				continue
			}
			id := d.newID()
			for _, sk := range skipped {
				copies[sk] = id
			}
			skipped = skipped[:0]
			e, err := old.copyAs(id, parent)
			if err != nil {
				return nil, err
			}
			switch e.kind {
			case kindLabel:
				var l Label
				e.payload(&l)
				e, err = e.withMember("targetId", jsonx.AppendString(nil, copies[l.TargetID]))
			case kindCompaction:
				var c Compaction
				e.payload(&c)
				switch {
				case copies[c.FirstKeptEntryID] != "":
					e, err = e.withMember("firstKeptEntryId", jsonx.AppendString(nil, copies[c.FirstKeptEntryID]))
				case inRun[c.FirstKeptEntryID]:
					// Kept from the run: from what replaced it, or when
					// nothing did and nothing came before, from the
					// compaction itself (pi then keeps nothing older).
					e, err = e.withMember("firstKeptEntryId", jsonx.AppendString(nil, cmp.Or(firstAfter, id)))
				}
			}
			if err != nil {
				return nil, err
			}
			copies[old.id] = id
			if firstAfter == "" {
				firstAfter = id
			}
			add(e)
		}
		return out, nil
	}
	msgs := make([]*Message, 0, len(own)+1)
	if rep.Summary != "" {
		msgs = append(msgs, nil)
	}
	msgs = append(msgs, own...)
	added, err := s.commit(ctx, func() string { return plan.before }, build, nil, msgs)
	if err != nil {
		return nil, err
	}
	edit.Added, edit.To, edit.Copied = added, s.leafID(), len(added)-len(msgs)
	return edit, nil
}

// segmentPlan is where a run sits on the path to the leaf.
type segmentPlan struct {
	before string   // the entry before the run, "" when it starts at a root
	run    []string // the run's entries
	runAt  []int32
	tail   []Entry // what follows the run on the path
	tailAt []int32
	skip   []bool // tail entries never copied: titles, metadata changes, markers
}

// copiesAny reports whether some tail entry is copied.
func (p *segmentPlan) copiesAny() bool {
	for k, e := range p.tail {
		if !p.skip[k] && e.kind != kindLabel {
			return true // labels are copied only after what they name
		}
	}
	return false
}

// copyable reports whether tail entry k is copied: not one never copied,
// and for a label, one whose target is copied (copies so far). A label
// of the run's entries, or of earlier ones, is in force already.
func (p *segmentPlan) copyable(k int, copies map[string]string) bool {
	if p.skip[k] {
		return false
	}
	if e := p.tail[k]; e.kind == kindLabel {
		var l Label
		e.payload(&l)
		return copies[l.TargetID] != ""
	}
	return true
}

// planSegment finds the run first..last on the path. Callers hold mu.
func (s *Session) planSegment(first, last string) (*segmentPlan, error) {
	f, ok := s.resolveLocked(first)
	if !ok {
		return nil, fmt.Errorf("%w: no checkpoint or entry %q", ErrNotFound, first)
	}
	l, ok := s.resolveLocked(last)
	if !ok {
		return nil, fmt.Errorf("%w: no checkpoint or entry %q", ErrNotFound, last)
	}
	path := s.t.pathTo(s.leaf)
	pos := func(i int32) int {
		for k, j := range path {
			if j == i {
				return k
			}
		}
		return -1
	}
	pf, pl := pos(f), pos(l)
	switch {
	case pf < 0 || pl < 0:
		return nil, fmt.Errorf("%w: entries %s and %s must both be on the path to the leaf", ErrPathEdit, first, last)
	case pf > pl:
		return nil, fmt.Errorf("%w: entry %s comes after %s on the path", ErrPathEdit, first, last)
	}
	p := &segmentPlan{}
	if pf > 0 {
		p.before = s.t.nodes[path[pf-1]].e.id
	}
	for _, i := range path[pf : pl+1] {
		p.run = append(p.run, s.t.nodes[i].e.id)
		p.runAt = append(p.runAt, i)
	}
	for _, i := range path[pl+1:] {
		e := s.t.nodes[i].e
		_, meta := customData(e, CustomMeta)
		p.tail = append(p.tail, e)
		p.tailAt = append(p.tailAt, i)
		p.skip = append(p.skip, meta || e.kind == kindSessionInfo || s.t.nodes[i].flags&fMarker != 0)
	}
	return p, nil
}

// checkSegmentPairing refuses an edit after which the path would hold a
// tool call without its result, or a result without its call, that it
// did not hold before. It compares the pairing of the message entries of
// the path as they are, and as the edit leaves them (summaries carry no
// calls). Callers hold mu.
func (s *Session) checkSegmentPairing(p *segmentPlan, rep []*Message) error {
	path := s.t.pathTo(s.leaf)
	var before, after pairing
	inRun := map[int32]bool{}
	for _, i := range p.runAt {
		inRun[i] = true
	}
	tail := map[int32]bool{}
	for _, i := range p.tailAt {
		tail[i] = true
	}
	placed := false
	for _, i := range path {
		m := s.t.contextMessage(i)
		if m != nil {
			before.push(m, s.t.nodes[i].e.id)
		}
		switch {
		case inRun[i]:
			if !placed {
				for _, r := range rep {
					after.push(r, "")
				}
				placed = true
			}
		case m != nil && (tail[i] || !placed):
			after.push(m, s.t.nodes[i].e.id)
		}
	}
	before.closeRun()
	after.closeRun()
	var lost []string
	known := map[string]bool{}
	for _, r := range append(before.dangling, before.orphans...) {
		known[r.CallID] = true
	}
	for _, r := range after.dangling {
		if !known[r.CallID] {
			lost = append(lost, "call "+r.CallID+" without its result")
		}
	}
	for _, r := range after.orphans {
		if !known[r.CallID] {
			lost = append(lost, "result of "+r.CallID+" without its call")
		}
	}
	if len(lost) > 0 {
		return fmt.Errorf("%w: it would leave %s; replace the whole exchange, or give the replacement its calls and results", ErrPathEdit, strings.Join(lost, ", "))
	}
	return nil
}
