package session

// The size limits a store applies to the entries it writes: long
// strings cut with TruncationNotice, large images moved to blobs (see
// persistprep.go for the preparation that does the cutting).

import (
	"bytes"
	"context"
	"encoding/base64"

	"github.com/agentsession/session/internal/jsonx"
)

// sizeLimits are what a store applies to the entries it writes: strings
// longer than maxChars UTF-16 code units are cut with TruncationNotice
// (see prepper), and the base64 data of images from minBlob bytes on goes
// to blobs.
type sizeLimits struct {
	maxChars int // <0: no limit
	minBlob  int // <0: images stay inline
	blobs    BlobStore
}

// cutAt is the length strings are cut to, notice included: maxChars, or
// the notice's own length when maxChars is less (a shorter cut would make
// a string longer); <0 for no limit.
func (z *sizeLimits) cutAt() int {
	if z.maxChars < 0 {
		return -1
	}
	return max(z.maxChars, noticeUnits)
}

// limit returns raw as it is to be stored: raw itself when nothing is
// over the limits (the common case, decided without parsing for small
// entries), else a new encoding.
func (z *sizeLimits) limit(ctx context.Context, raw []byte) ([]byte, cutCount, error) {
	if z.small(raw, false) {
		return raw, cutCount{}, nil
	}
	p := prepper{raw: raw, limit: z.cutAt(), z: z, ctx: ctx}
	out, _, err := p.run()
	var n cutCount
	for _, e := range p.edits {
		if e.lost > 0 {
			n.strings++
			n.dropped += e.lost
		}
	}
	return out, n, err
}

// cutCount is what limit cut: strings, and the UTF-16 code units lost.
type cutCount struct{ strings, dropped int }

// externalize moves the base64 image data of member m to the blob store
// and returns the edit that puts its reference in place. Data that is not
// canonical base64 stays inline: a reference must give back exactly the
// same string.
func (z *sizeLimits) externalize(ctx context.Context, raw []byte, m jsonMember) (*edit, error) {
	tok := raw[m.start:m.end]
	s, err := jsonx.Unquote(tok)
	if err != nil || isBlobRef([]byte(s)) {
		return nil, nil
	}
	data, err := base64.StdEncoding.Strict().DecodeString(s)
	if err != nil || base64.StdEncoding.EncodedLen(len(data)) != len(s) {
		return nil, nil
	}
	ref, err := z.blobs.PutBlob(ctx, data)
	if err != nil {
		return nil, err
	}
	return &edit{m.start, m.end, jsonx.AppendString(nil, ref), 0}, nil
}

// small reports whether raw is certainly within the limits, without
// parsing it: no string in it can be longer than the limit (a string's
// token has at least as many bytes as the string has UTF-16 code units),
// and it holds no image data large enough for a blob (noImage says the
// caller knows it holds none).
func (z *sizeLimits) small(raw []byte, noImage bool) bool {
	return z.smallSized(len(raw), raw, noImage)
}

// smallSized is small for a line of n bytes whose JSON tokens raw holds
// (the line, or a compact entry's template).
func (z *sizeLimits) smallSized(n int, raw []byte, noImage bool) bool {
	return (z.maxChars < 0 || n <= z.cutAt()) &&
		(noImage || z.minBlob < 0 || z.blobs == nil || n < z.minBlob || !bytes.Contains(raw, []byte(`"image"`)))
}
