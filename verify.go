package session

import (
	"bytes"
	"fmt"
	"slices"
	"strings"

	"github.com/agentsession/session/internal/jsonx"
)

// FindingKind classifies what Verify found.
type FindingKind string

// The kinds of findings.
const (
	FindingMalformedLine   FindingKind = "malformed-line"   // a line that is not an entry (skipped)
	FindingTornTail        FindingKind = "torn-tail"        // the last line was cut short
	FindingDuplicateID     FindingKind = "duplicate-id"     // several entries share an id; the later wins
	FindingMissingParent   FindingKind = "missing-parent"   // parentId names no entry; read as a root
	FindingSelfParent      FindingKind = "self-parent"      // parentId is the entry's own id
	FindingCycle           FindingKind = "cycle"            // parent links loop; cut at the earliest line
	FindingBadMessage      FindingKind = "bad-message"      // a message entry without a message object
	FindingOrphanResult    FindingKind = "orphan-result"    // a tool result answering no pending call
	FindingDanglingCall    FindingKind = "dangling-call"    // a tool call never answered before the conversation moved on
	FindingPendingCall     FindingKind = "pending-call"     // a tool call still unanswered at the end of a branch
	FindingCompactionCut   FindingKind = "compaction-cut"   // a compaction keeps a tool result but not its call
	FindingCompactionStart FindingKind = "compaction-start" // a compaction's firstKeptEntryId is not on its path
	FindingUnresolvedBlob  FindingKind = "unresolved-blob"  // an image still holds a blob reference: the blob is missing or corrupt
	FindingBadField        FindingKind = "bad-field"        // a member of a known entry type has the wrong type; it is ignored, the entry kept
	FindingPartialAppend   FindingKind = "partial-append"   // a line of an append a crash cut short; not an entry, kept in the file
	FindingZeroed          FindingKind = "zeroed"           // zero bytes a crash left before a line, where a write it lost had been
)

// Severity grades a finding: an error is damage or a broken link the
// reader had to repair; a warning is what crashes, aborted turns and
// older writers leave in real sessions, which the reader handles as the
// seed agents do; info is a state a session may well be in (a turn that
// awaits its tool results).
type Severity int

// The severities, least first.
const (
	SeverityInfo Severity = iota
	SeverityWarning
	SeverityError
)

func (s Severity) String() string {
	switch s {
	case SeverityInfo:
		return "info"
	case SeverityWarning:
		return "warning"
	case SeverityError:
		return "error"
	}
	return fmt.Sprintf("Severity(%d)", int(s))
}

// Severity returns how grave a finding of this kind is. dangling-call
// is a warning: an aborted or failed turn leaves calls without results,
// as real pi sessions often hold, and Messages answers them.
func (k FindingKind) Severity() Severity {
	switch k {
	case FindingMalformedLine, FindingDuplicateID, FindingMissingParent, FindingSelfParent, FindingCycle,
		FindingBadMessage, FindingCompactionStart, FindingUnresolvedBlob:
		return SeverityError
	case FindingPendingCall:
		return SeverityInfo
	}
	return SeverityWarning // torn-tail, dangling-call, orphan-result, compaction-cut, bad-field, partial-append, zeroed, and kinds to come
}

// Finding is one problem in a log.
type Finding struct {
	Kind    FindingKind
	Line    int    // 1-based line, for line problems
	EntryID string // the entry concerned, for tree problems
	Detail  string
}

// Severity returns the severity of the finding's kind.
func (f Finding) Severity() Severity { return f.Kind.Severity() }

func (f Finding) String() string {
	var b strings.Builder
	switch {
	case f.Line > 0:
		fmt.Fprintf(&b, "line %d: ", f.Line)
	case f.EntryID != "":
		fmt.Fprintf(&b, "entry %s: ", f.EntryID)
	}
	b.WriteString(string(f.Kind))
	if f.Detail != "" {
		b.WriteString(": ")
		b.WriteString(f.Detail)
	}
	return b.String()
}

// Verify lists every problem in a log: lines that could not be read,
// broken tree links, and tool calls and results that do not pair up, on
// every branch. A log read leniently still works despite all of these
// (the tree is repaired as ARCHITECTURE.md describes, "Corrupt input");
// Verify says what was repaired. It returns nil for a clean log.
func Verify(l *Log) []Finding {
	var out []Finding
	for _, m := range l.Malformed {
		out = append(out, Finding{Kind: FindingMalformedLine, Line: m.Line, Detail: m.Err.Error()})
	}
	for _, m := range l.Partial {
		out = append(out, Finding{Kind: FindingPartialAppend, Line: m.Line, Detail: m.Err.Error()})
	}
	for _, z := range l.Zeroed {
		out = append(out, Finding{Kind: FindingZeroed, Line: z.Line, Detail: z.Err.Error()})
	}
	if l.Torn != nil {
		out = append(out, Finding{Kind: FindingTornTail, Line: l.Torn.Line, Detail: l.Torn.Err.Error()})
	}
	t := newTree(l.Entries)
	out = append(out, t.verifyStructure()...)
	out = append(out, t.verifyPairing()...)
	out = append(out, t.verifyCompactions()...)
	out = append(out, verifyBlobs(l.Entries)...)
	return out
}

// verifyBlobs reports images whose data is still a blob reference: a
// store resolves every reference it can when it loads a log.
func verifyBlobs(entries []Entry) []Finding {
	var out []Finding
	for _, e := range entries {
		for _, ref := range blobRefs(e) {
			out = append(out, unresolvedFinding(e.id, ref))
		}
	}
	return out
}

func unresolvedFinding(id, ref string) Finding {
	return Finding{Kind: FindingUnresolvedBlob, EntryID: id, Detail: ref + " (missing or corrupt in the blob store)"}
}

// blobRefs returns the blob references the images of e hold.
func blobRefs(e Entry) []string {
	if !bytes.Contains(e.raw, []byte(BlobPrefix)) { // a compact entry's template: its holes never hold one
		return nil
	}
	raw := e.bytes()
	var refs []string
	walkObjects(raw, func(obj *jsonObject) {
		if !obj.image {
			return
		}
		for _, m := range obj.strings {
			if ref, err := jsonx.Unquote(raw[m.start:m.end]); err == nil && m.key == "data" && isBlobRef([]byte(ref)) {
				refs = append(refs, ref)
			}
		}
	})
	return refs
}

// Verify lists the problems in the session's log; see the Verify function.
func (s *Session) Verify() []Finding { return Verify(s.Log()) }

func (t *tree) verifyStructure() []Finding {
	var out []Finding
	counts := map[string]int{}
	for i := range t.nodes {
		counts[t.nodes[i].e.id]++
	}
	for i := range t.nodes {
		n := &t.nodes[i]
		id := n.e.id
		if c := counts[id]; c > 1 {
			if j, _ := t.lookup(id); j == int32(i) { // the one in use
				out = append(out, Finding{Kind: FindingDuplicateID, EntryID: id, Detail: fmt.Sprintf("%d entries have this id; the last one is used", c)})
			}
		}
		if n.flags&fShadowed != 0 {
			continue
		}
		switch {
		case n.flags&fMissingParent != 0:
			out = append(out, Finding{Kind: FindingMissingParent, EntryID: id, Detail: fmt.Sprintf("parent %s not found; read as a root", n.e.parent)})
		case n.flags&fSelfParent != 0:
			out = append(out, Finding{Kind: FindingSelfParent, EntryID: id, Detail: "read as a root"})
		case n.flags&fCycle != 0:
			out = append(out, Finding{Kind: FindingCycle, EntryID: id, Detail: fmt.Sprintf("parent links loop back to this entry; its link to %s is ignored", n.e.parent)})
		}
		if p := payloadOf(n.e.kind); p != nil {
			for _, k := range n.e.payload(p) {
				out = append(out, Finding{Kind: FindingBadField, EntryID: id, Detail: fmt.Sprintf("member %q of this %s has the wrong type; it is ignored", k, n.e.typ)})
			}
		}
		if n.e.kind == kindMessage && t.contextMessage(int32(i)) == nil {
			out = append(out, Finding{Kind: FindingBadMessage, EntryID: id, Detail: "no message object; left out of the context"})
		}
	}
	return out
}

// verifyPairing walks every branch, tracking the calls of the last
// assistant message that still await results.
func (t *tree) verifyPairing() []Finding {
	var out []Finding
	type item struct {
		i    int32
		open []ToolCallRef // shared between siblings: copied before changing
		susp []callKey     // suspended calls among open (suspend.go); shared too
	}
	reported := map[string]bool{}
	report := func(kind FindingKind, c ToolCallRef, detail string) {
		key := string(kind) + c.EntryID + "\x00" + c.CallID
		if reported[key] {
			return
		}
		reported[key] = true
		out = append(out, Finding{Kind: kind, EntryID: c.EntryID, Detail: fmt.Sprintf("tool call %s (%s)%s", c.CallID, c.Name, detail)})
	}
	var stack []item
	for _, r := range t.children(-1) {
		stack = append(stack, item{r, nil, nil})
	}
	for len(stack) > 0 {
		it := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		open, susp := it.open, it.susp
		n := &t.nodes[it.i]
		if sp, ok := suspensionOf(n.e); ok {
			susp = slices.Clone(susp)
			for _, r := range open {
				if slices.ContainsFunc(sp.Calls, func(c SuspendedCall) bool { return c.CallID == r.CallID }) {
					susp = append(susp, keyOf(r))
				}
			}
		} else if end, ok := decodeCustom[SuspensionEnd](n.e, CustomSuspensionEnd); ok {
			// An attempt given up: its calls are not awaited any more.
			open = slices.DeleteFunc(slices.Clone(open), func(r ToolCallRef) bool { return slices.Contains(end.CallIDs, r.CallID) })
			susp = slices.DeleteFunc(slices.Clone(susp), func(k callKey) bool { return slices.Contains(end.CallIDs, k.call) })
		}
		if m := t.contextMessage(it.i); m != nil && n.e.kind != kindCompaction {
			switch {
			case m.Role == RoleToolResult:
				k := -1
				for j, c := range open {
					if c.CallID == m.ToolCallID {
						k = j
						break
					}
				}
				if k < 0 {
					out = append(out, Finding{Kind: FindingOrphanResult, EntryID: n.e.id,
						Detail: fmt.Sprintf("result for call %s (%s) answers no pending call", m.ToolCallID, m.ToolName)})
				} else {
					open = append(append([]ToolCallRef(nil), open[:k]...), open[k+1:]...)
				}
			case m.Role == RoleBashExecution && m.ExcludeFromContext:
			default:
				// Suspended calls stay awaited while the conversation goes on.
				var kept []ToolCallRef
				for _, c := range open {
					if slices.Contains(susp, keyOf(c)) {
						kept = append(kept, c)
					} else {
						report(FindingDanglingCall, c, " has no result")
					}
				}
				open = kept
				for _, b := range m.ToolCalls() {
					open = append(open, ToolCallRef{EntryID: n.e.id, CallID: b.ID, Name: b.Name})
				}
			}
		}
		kids := t.children(it.i)
		if len(kids) == 0 {
			for _, c := range open {
				if slices.Contains(susp, keyOf(c)) {
					report(FindingPendingCall, c, " is suspended: it awaits its result at the end of a branch")
				} else {
					report(FindingPendingCall, c, " awaits its result at the end of a branch")
				}
			}
		}
		for k := len(kids) - 1; k >= 0; k-- {
			stack = append(stack, item{kids[k], open, susp})
		}
	}
	return out
}

// verifyCompactions checks that each compaction keeps from an entry on its
// path and does not keep a tool result without its call.
func (t *tree) verifyCompactions() []Finding {
	var out []Finding
	for i := range t.nodes {
		n := &t.nodes[i]
		if n.e.kind != kindCompaction || n.flags&fShadowed != 0 {
			continue
		}
		var c Compaction
		if n.e.payload(&c); c.FirstKeptEntryID == "" {
			continue
		}
		path := t.pathTo(int32(i))
		comp := len(path) - 1
		start := -1
		if k, ok := t.lookup(c.FirstKeptEntryID); ok {
			if d := t.nodes[k].depth; d >= 0 && int(d) < comp && path[d] == k {
				start = int(d)
			}
		}
		if start < 0 {
			out = append(out, Finding{Kind: FindingCompactionStart, EntryID: n.e.id,
				Detail: fmt.Sprintf("first kept entry %s is not on the compaction's path; nothing before it is kept", c.FirstKeptEntryID)})
			continue
		}
		var p pairing
		for _, j := range path[start:comp] {
			if m := t.contextMessage(j); m != nil && t.nodes[j].e.kind != kindCompaction {
				p.push(m, t.nodes[j].e.id)
			}
		}
		for _, o := range p.orphans {
			out = append(out, Finding{Kind: FindingCompactionCut, EntryID: n.e.id,
				Detail: fmt.Sprintf("keeps the result %s of call %s (%s) but not the call", o.EntryID, o.CallID, o.Name)})
		}
	}
	return out
}
