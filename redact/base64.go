package redact

import (
	"encoding/base64"
	"strings"
	"unicode/utf8"
)

// Text carried as base64: a data: URI of a text file in a string, or the
// data of a document block (which session.Redact and the exports pass to
// Base64Text). The rules cannot read base64, so the text is decoded,
// redacted and encoded again the way it was.

// maxBase64Depth bounds base64 text inside base64 text.
const maxBase64Depth = 2

// Base64Text returns data, base64 text of the given media type (empty
// when unknown), with the secrets of the text it encodes replaced, and
// encoded again as it was (standard or URL alphabet, padded or not); data
// itself when it is not text (an image, a PDF, audio: binary that a rule
// could only damage), not base64, or holds nothing to replace.
func (r *Redactor) Base64Text(data, mediaType string) (string, Report) {
	var rep Report
	out := r.base64Text(data, mediaType, &rep, 0)
	return out, rep
}

func (r *Redactor) base64Text(data, mediaType string, rep *Report, depth int) string {
	if depth >= maxBase64Depth || len(data) < 8 || !textMediaType(mediaType) {
		return data
	}
	enc, ok := encodingOf(data)
	if !ok {
		return data
	}
	dec, err := enc.DecodeString(data)
	if err != nil || !isText(dec) {
		return data
	}
	text := string(dec)
	out := r.stringAt(text, rep, depth+1)
	if out == text {
		return data
	}
	return enc.EncodeToString([]byte(out))
}

// textMediaType reports the media types whose data may be text: text/*,
// JSON, XML, YAML, scripts and the like, and unknown ones (the data
// decides); not images (but SVG), audio, video, fonts, PDF or archives.
func textMediaType(mt string) bool {
	mt = strings.ToLower(strings.TrimSpace(mt))
	if i := strings.IndexByte(mt, ';'); i >= 0 {
		mt = strings.TrimSpace(mt[:i])
	}
	switch {
	case mt == "", strings.HasPrefix(mt, "text/"), mt == "image/svg+xml":
		return true
	case strings.HasPrefix(mt, "image/"), strings.HasPrefix(mt, "audio/"), strings.HasPrefix(mt, "video/"),
		strings.HasPrefix(mt, "font/"), mt == "application/pdf", mt == "application/zip",
		mt == "application/gzip", mt == "application/octet-stream":
		return false
	}
	return true // application/json, application/x-sh, message/rfc822, ...
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

// isText reports decoded bytes that are text: UTF-8 without control
// characters other than tab, newline, carriage return and form feed.
func isText(b []byte) bool {
	if !utf8.Valid(b) {
		return false
	}
	for _, c := range b {
		if c < 0x20 && c != '\t' && c != '\n' && c != '\r' && c != '\f' || c == 0x7f {
			return false
		}
	}
	return true
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
