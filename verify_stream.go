package session

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"slices"
)

// VerifyReader is Verify for a log read from r, in memory that grows
// with the number of its entries but not with their size: each entry is
// checked on its own as it is read (the members of a wrong type, its blob
// references, whether its message decodes), and only what the checks of
// the tree and of tool-call pairing need of it is kept (ids, parents,
// roles, tool call ids and names). A line over opts' Limits.MaxLineBytes
// is skipped as it is read and reported as a malformed line.
//
// blobs, when not nil, is where blob references are looked up: one found
// nowhere is reported (unresolved-blob). It returns the findings, in the
// order Verify gives them, and the number of entries read. A log that
// cannot be read at all (no header, a newer version, over MaxLogBytes or
// MaxEntries) gives an error.
func VerifyReader(ctx context.Context, r io.Reader, blobs BlobStore, opts *ReadOptions) ([]Finding, int, error) {
	d := NewDecoder(r, opts)
	h, err := d.Header()
	if err != nil {
		return nil, 0, err
	}
	var early []Finding // found entry by entry
	var skeleton []Entry
	var marks []appendMark // the markers of multi-entry appends, resolved at the end
	markLines := map[int]int{}
	checked := map[string]bool{} // blob references: found and sound
	for {
		if err := ctx.Err(); err != nil {
			return nil, 0, err
		}
		// Entries as they come, markers and all: holding the entries of
		// an append until its last would hold all of them in memory.
		e, m, err := d.nextMarked()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, 0, err
		}
		if m.n > 0 {
			if marks == nil {
				marks = make([]appendMark, len(skeleton), len(skeleton)+1)
			}
			markLines[len(skeleton)] = d.p.line
		}
		if marks != nil {
			marks = append(marks, m)
		}
		for _, ref := range blobRefs(e) {
			ok, seen := checked[ref]
			if !seen && blobs != nil {
				// Each distinct blob read once, its bytes not kept.
				_, err := blobs.GetBlob(ctx, ref)
				if cerr := ctx.Err(); cerr != nil {
					return nil, 0, cerr
				}
				ok = err == nil
				checked[ref] = ok
			}
			if !ok {
				early = append(early, unresolvedFinding(e.id, ref))
			}
		}
		sk, err := skeletonOf(e)
		if err != nil {
			return nil, 0, err
		}
		skeleton = append(skeleton, sk)
	}
	kept, cut := groups(skeleton, marks)
	var partial []LineError
	for _, i := range cut {
		partial = append(partial, LineError{Line: markLines[i], Err: ErrPartialAppend})
	}
	log := &Log{Header: h, Entries: kept, Malformed: d.Malformed(), Partial: partial, Zeroed: d.Zeroed(), Torn: d.Torn()}
	findings := Verify(log)
	// The blob findings go where Verify puts its own, at the end; the
	// members of a wrong type were found by Verify in the skeleton.
	findings = append(findings, early...)
	return findings, len(kept), nil
}

// skeletonOf returns an entry with e's id, parent and type (copied: it
// keeps nothing of e's line alive), holding only
// what Verify needs of it: a message reduced to its role, its tool calls'
// ids and names, the call its result answers and whether it is left out
// of the context; the links of compactions, labels and branch summaries;
// and the members of a wrong type, with their values, which Verify then
// reports.
func skeletonOf(e Entry) (Entry, error) {
	var payload any
	switch e.kind {
	case kindMessage:
		m, err := e.Message()
		if err != nil {
			return skeletonEntry(e, nil) // no message: Verify says so
		}
		mini := &Message{Role: m.Role, ToolCallID: m.ToolCallID, ToolName: m.ToolName, ExcludeFromContext: m.ExcludeFromContext}
		for _, b := range m.ToolCalls() {
			mini.Content = append(mini.Content, ToolCall(b.ID, b.Name, nil))
		}
		sk, err := newMessageEntry(e.id, e.parent, e.ts, mini)
		if err != nil {
			return Entry{}, err
		}
		return own(sk)
	case kindCustomMessage:
		payload = map[string]any{"customType": "", "content": ""}
	case kindCustom:
		var c Custom
		e.payload(&c)
		payload = Custom{CustomType: c.CustomType}
	default:
		if p := payloadOf(e.kind); p != nil {
			// Keep the links (and any member of a wrong type, for Verify
			// to report); drop the text.
			payload = slimPayload(e, p)
		}
	}
	return skeletonEntry(e, payload)
}

// skeletonEntry is an entry with e's envelope (type, id, parent and
// timestamp, whatever they hold) and payload's members.
func skeletonEntry(e Entry, payload any) (Entry, error) {
	var obj []byte
	if payload != nil {
		var err error
		if obj, err = json.Marshal(payload); err != nil {
			return Entry{}, err
		}
	}
	sk, err := buildEntry(e.typ, e.id, e.parent, e.ts, len(obj)+64, func(dst []byte) ([]byte, error) {
		if len(obj) > 2 {
			dst = append(dst, ',')
			dst = append(dst, obj[1:len(obj)-1]...) // the members, as they are
		}
		return dst, nil
	})
	if err != nil {
		return Entry{}, err
	}
	return own(sk)
}

// own returns e read again from its own bytes, so that its strings are
// views of them rather than of the line e was made from.
func own(e Entry) (Entry, error) {
	return parseEntryMode(e.raw, true)
}

// slimPayload is the payload of a structural entry without its long
// strings (summaries, details, data), keeping the members of a wrong
// type as they are.
func slimPayload(e Entry, p any) map[string]any {
	bad := e.payload(p)
	out := map[string]any{}
	switch v := p.(type) {
	case *Compaction:
		out["summary"], out["firstKeptEntryId"] = "s", v.FirstKeptEntryID
	case *BranchSummary:
		out["fromId"] = v.FromID
		if v.Summary != "" {
			out["summary"] = "s"
		}
	case *Label:
		out["targetId"], out["label"] = v.TargetID, v.Label
	}
	for _, k := range bad {
		if raw, ok := e.Field(k); ok && !slices.Contains([]string{"type", "id", "parentId", "timestamp"}, k) {
			out[k] = raw
		}
	}
	return out
}
