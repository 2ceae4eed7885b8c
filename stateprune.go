package session

import (
	"slices"
)

// What Prune may drop of the session state's history: the updates that
// no state anyone reads needs any more.

// dropSupersededState unmarks in needed the CustomState updates that no
// kept state reads: those whose every key a later update sets or removes
// again on every path through them to an end of a branch, the leaf, a
// labeled entry (a checkpoint) or a kept compaction that recorded the
// state at its point, before that end. The state at each of
// those entries stays what it was, since for every key the last update
// before it on its path is kept; the state between them changes (that
// history is what is dropped). Kept too: the ends themselves, updates an
// entry names (a compaction's first kept entry, a label's target, a
// branch summary's origin), updates that change nothing and those whose
// data is not an object of keys (not a fold's to judge).
func (t *tree) dropSupersededState(needed []bool, leaf int32) {
	keys := make(map[int32][]string)
	for i := range t.nodes {
		raw, ok := stateData(t.nodes[i].e)
		if !ok {
			continue
		}
		if ks := dataKeys(raw); len(ks) > 0 {
			keys[int32(i)] = ks
		}
	}
	if len(keys) == 0 {
		return
	}
	named := map[string]bool{}
	for i := range t.nodes {
		e := t.nodes[i].e
		switch e.kind {
		case kindCompaction:
			var c Compaction
			e.payload(&c)
			named[c.FirstKeptEntryID] = true
		case kindBranchSummary:
			var b BranchSummary
			e.payload(&b)
			named[b.FromID] = true
		}
	}
	for id := range t.labels {
		named[id] = true
	}
	var ends []int32
	for i := range t.nodes {
		n := &t.nodes[i]
		if n.first < 0 || t.labels[n.e.id] != "" {
			ends = append(ends, int32(i))
			continue
		}
		// A compaction kept with the state it recorded: the fold of the
		// updates kept must still give that state there, so that a fold
		// from it and a fold from the root (pi's, older versions') agree
		// everywhere after it.
		if _, ok := recordedState(n.e); ok && needed[i] {
			ends = append(ends, int32(i))
		}
	}
	if leaf >= 0 {
		ends = append(ends, leaf)
	}
	keep := make(map[int32]bool)
	later := map[string]bool{} // keys updated after, on the path walked
	for _, end := range ends {
		clear(later)
		for j := end; j >= 0; j = t.nodes[j].parent {
			ks, ok := keys[j]
			if !ok {
				continue
			}
			if j == end || !allIn(ks, later) {
				keep[j] = true
			}
			for _, k := range ks {
				later[k] = true
			}
		}
	}
	for j := range keys {
		if !keep[j] && !named[t.nodes[j].e.id] {
			needed[j] = false
		}
	}
}

// dataKeys returns the keys an update's data sets or removes (none for
// data that is not an object of valid JSON).
func dataKeys(data []byte) []string {
	ps, ok := dataPairs(nil, data)
	if !ok {
		return nil
	}
	ks := make([]string, len(ps))
	for i, p := range ps {
		ks[i] = p.k
	}
	slices.Sort(ks)
	return slices.Compact(ks)
}

func allIn(ks []string, set map[string]bool) bool {
	for _, k := range ks {
		if !set[k] {
			return false
		}
	}
	return true
}
