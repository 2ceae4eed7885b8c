package redact

import (
	"encoding/base64"
	"strings"
)

// Text carried as base64: a data: URI in a string, the data of a
// document block (which session.Redact and the exports pass to
// Base64Text), or a base64 value in a text (a Kubernetes Secret's data, a
// kubeconfig's client-key-data). The rules cannot read base64, so the
// text is decoded, redacted and encoded again the way it was. Whether it
// is text is decided by what it decodes to (see decodeText), not by the
// media type it claims: a .env sent as application/octet-stream, or as
// a PDF, is text; a PNG, a real PDF or a zip archive is not.

// maxDepth bounds text inside text: base64 in base64, JSON in a JSON
// string.
const maxDepth = 4

// Base64Text returns data, base64 (standard or URL alphabet, padded or
// not) of a file or a document, with the secrets of the text it encodes
// replaced and encoded again as it was; data itself when it is not text
// (an image, a PDF, audio, an archive: binary that a rule could only
// damage), not base64, or holds nothing to replace. mediaType (empty
// when unknown) only tells the charset of a text ("text/plain;
// charset=iso-8859-1"): the decoded bytes decide whether they are text
// (see Bytes).
func (r *Redactor) Base64Text(data, mediaType string) (string, Report) {
	var rep Report
	out := r.base64Text(data, mediaType, &rep, 0)
	return out, rep
}

// Bytes returns data, the bytes of a file or a document, with the
// secrets of the text they hold replaced, written back in the text's own
// encoding: UTF-8 (control characters such as a terminal's escapes
// allowed), UTF-16 (with a byte order mark, or without one when its
// zeros give it away), and Latin-1 (when the charset of mediaType says
// so, or the bytes are not UTF-8 but read as Latin-1 text). data itself
// is returned when it is binary (by the magic numbers of images, PDF,
// archives, executables, or by its bytes) or holds nothing to replace.
// Text inside it that is base64 or JSON is redacted as String redacts
// it.
func (r *Redactor) Bytes(data []byte, mediaType string) ([]byte, Report) {
	var rep Report
	out, _ := r.bytesAt(data, mediaType, &rep, 0)
	return out, rep
}

// bytesAt is Bytes at a depth of text inside text; it reports whether
// data changed.
func (r *Redactor) bytesAt(data []byte, mediaType string, rep *Report, depth int) ([]byte, bool) {
	if depth >= maxDepth {
		return data, false
	}
	t, ok := decodeText(data, mediaType)
	if !ok {
		return data, false
	}
	out := r.stringAt(t.text, rep, depth+1)
	if out == t.text {
		return data, false
	}
	return t.encode(out), true
}

func (r *Redactor) base64Text(data, mediaType string, rep *Report, depth int) string {
	if depth >= maxDepth || len(data) < 8 {
		return data
	}
	enc, ok := encodingOf(data)
	if !ok || !maybeText(enc, data) {
		return data
	}
	dec, err := enc.DecodeString(data)
	if err != nil {
		return data
	}
	out, changed := r.bytesAt(dec, mediaType, rep, depth)
	if !changed {
		return data
	}
	return enc.EncodeToString(out)
}

// maybeText reports whether the first bytes data encodes may start a
// text: a cheap look before decoding an image whole.
func maybeText(enc *base64.Encoding, data string) bool {
	head := data[:min(len(data), 88)]
	head = strings.TrimRight(head[:len(head)/4*4], "=")
	raw := base64.RawStdEncoding
	if enc == base64.URLEncoding || enc == base64.RawURLEncoding {
		raw = base64.RawURLEncoding
	}
	var buf [66]byte
	n, err := raw.Decode(buf[:], []byte(head))
	if err != nil {
		return true // the whole decoding judges
	}
	b := buf[:n]
	return !binaryMagic(b) && !(hasNUL(b) && !utf16Zeros(b))
}

func hasNUL(b []byte) bool {
	for _, c := range b {
		if c == 0 {
			return true
		}
	}
	return false
}

// encodingOf returns the base64 encoding data is written in.
func encodingOf(data string) (*base64.Encoding, bool) {
	padded := strings.HasSuffix(data, "=")
	url := strings.ContainsAny(data, "-_")
	std := strings.ContainsAny(data, "+/")
	if url && std {
		return nil, false
	}
	switch {
	case url && padded:
		return base64.URLEncoding, true
	case url:
		return base64.RawURLEncoding, true
	case padded || len(data)%4 == 0:
		return base64.StdEncoding, true
	}
	return base64.RawStdEncoding, true
}

// dataURIs returns s with the base64 text of its data: URIs redacted.
func (r *Redactor) dataURIs(s string, rep *Report, depth int) string {
	var b strings.Builder
	last := 0
	for i := 0; ; {
		k := indexFold(s, ";base64,", i)
		if k < 0 {
			break
		}
		i = k + len(";base64,")
		// Back to "data:" over the media type and its parameters.
		d := strings.LastIndex(s[max(0, k-256):k], "data:")
		if d < 0 {
			continue
		}
		d += max(0, k-256)
		mt := s[d+len("data:") : k]
		if strings.ContainsAny(mt, " \t\n\"'<>") {
			continue
		}
		e := i
		for e < len(s) && (isAlnum(s[e]) || strings.IndexByte("+/=-_", s[e]) >= 0) {
			e++
		}
		data := s[i:e]
		out := r.base64Text(data, mt, rep, depth)
		if out != data {
			b.WriteString(s[last:i])
			b.WriteString(out)
			last = e
		}
		i = e
	}
	if last == 0 {
		return s
	}
	b.WriteString(s[last:])
	return b.String()
}

// minBase64Run is the shortest base64 value of a text that is decoded
// (15 bytes): shorter ones are tokens and words.
const minBase64Run = 20

// b64Class tells the bytes of base64 runs: 1 of both alphabets, 2 of the
// standard one only (+ /), 3 of the URL one only (- _).
var b64Class = func() (t [256]uint8) {
	for c := 0; c < 256; c++ {
		switch {
		case isAlnum(byte(c)):
			t[c] = 1
		case c == '+' || c == '/':
			t[c] = 2
		case c == '-' || c == '_':
			t[c] = 3
		}
	}
	return t
}()

// base64Values returns s with the base64 values in it that decode to
// text redacted as that text, encoded again as they were: a Kubernetes
// Secret's data ("DATABASE_URL: cG9zdGdyZXM6Ly9..."), a kubeconfig's
// client-key-data, a .dockerconfigjson. A value is a run of 20 base64
// characters or more (one alphabet, padded or not) that stands apart
// (not inside a word, a path or a data: URI); it is decoded only when
// its first bytes read as text.
func (r *Redactor) base64Values(s string, rep *Report, depth int) string {
	var b strings.Builder
	last := 0
	for i := 0; i < len(s); {
		if b64Class[s[i]] == 0 {
			i++
			continue
		}
		j, kinds := i, uint8(0)
		for j < len(s) && b64Class[s[j]] != 0 {
			kinds |= 1 << b64Class[s[j]]
			j++
		}
		e := j
		for e < len(s) && e-j < 2 && s[e] == '=' {
			e++
		}
		start := i
		i = e
		if j-start < minBase64Run || kinds&(1<<2) != 0 && kinds&(1<<3) != 0 {
			continue
		}
		if start > 0 && !b64Apart(s[start-1]) || e < len(s) && isWord(s[e]) ||
			start >= 8 && strings.EqualFold(s[start-8:start], ";base64,") {
			continue
		}
		data := s[start:e]
		if !b64Text(data) {
			continue
		}
		out := r.base64Text(data, "", rep, depth)
		if out != data {
			b.WriteString(s[last:start])
			b.WriteString(out)
			last = e
		}
	}
	if last == 0 {
		return s
	}
	b.WriteString(s[last:])
	return b.String()
}

// b64Apart reports the characters before a base64 value: blanks, quotes,
// operators and brackets (not a path's or a word's).
func b64Apart(c byte) bool {
	return isBlank(c) || isQuote(c) || strings.IndexByte("=:([{<>,;|", c) >= 0
}

// b64Text reports whether the first bytes of the base64 value data (of
// one alphabet) are UTF-8 text: letters, digits, punctuation, blanks.
func b64Text(data string) bool {
	head := data[:min(len(data), 32)]
	head = head[:len(head)/4*4]
	var buf [24]byte
	enc := base64.RawStdEncoding
	if strings.ContainsAny(head, "-_") {
		enc = base64.RawURLEncoding
	}
	n, err := enc.Decode(buf[:], []byte(strings.TrimRight(head, "=")))
	if err != nil || n == 0 {
		return false
	}
	b := buf[:n]
	for len(b) > 0 && b[len(b)-1] >= 0x80 {
		b = b[:len(b)-1] // a rune cut by the head's end
	}
	for _, c := range b {
		if c < 0x20 && !isBlank(c) || c == 0x7f {
			return false
		}
	}
	return len(b) > 0 && validUTF8Prefix(buf[:n])
}
