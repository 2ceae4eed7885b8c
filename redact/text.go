package redact

import (
	"bytes"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// What is text: the bytes of a file or a document, decoded from the
// encodings files are written in, and written back in the same one.

// textEncoding is how a text was written.
type textEncoding uint8

const (
	encUTF8 textEncoding = iota
	encUTF16LE
	encUTF16BE
	encLatin1
)

// decoded is a text and how to write it back.
type decoded struct {
	text string
	enc  textEncoding
	bom  []byte // the byte order mark it had, written back as it was
}

// encode writes s as the text was written. A character Latin-1 has no
// byte for (which only a host's own redactor may bring) becomes '?'.
func (d decoded) encode(s string) []byte {
	out := append([]byte(nil), d.bom...)
	switch d.enc {
	case encUTF16LE, encUTF16BE:
		for _, u := range utf16.Encode([]rune(s)) {
			if d.enc == encUTF16LE {
				out = append(out, byte(u), byte(u>>8))
			} else {
				out = append(out, byte(u>>8), byte(u))
			}
		}
	case encLatin1:
		for _, c := range s {
			if c > 0xff {
				c = '?'
			}
			out = append(out, byte(c))
		}
	default:
		out = append(out, s...)
	}
	return out
}

// decodeText returns b as text, and false when it is binary: a format
// known by its magic number, or bytes that no encoding reads as text.
func decodeText(b []byte, mediaType string) (decoded, bool) {
	if len(b) == 0 || binaryMagic(b) {
		return decoded{}, false
	}
	switch {
	case bytes.HasPrefix(b, []byte{0xef, 0xbb, 0xbf}):
		if utf8.Valid(b[3:]) && textual(string(b[3:])) {
			return decoded{string(b[3:]), encUTF8, b[:3]}, true
		}
		return decoded{}, false
	case bytes.HasPrefix(b, []byte{0xff, 0xfe}), bytes.HasPrefix(b, []byte{0xfe, 0xff}):
		enc := encUTF16LE
		if b[0] == 0xfe {
			enc = encUTF16BE
		}
		if s, ok := decodeUTF16(b[2:], enc); ok {
			return decoded{s, enc, b[:2]}, true
		}
		return decoded{}, false
	}
	if utf16Zeros(b) {
		enc := encUTF16LE
		if b[0] == 0 {
			enc = encUTF16BE
		}
		if s, ok := decodeUTF16(b, enc); ok {
			return decoded{s, enc, nil}, true
		}
		return decoded{}, false
	}
	if utf8.Valid(b) {
		if textual(string(b)) {
			return decoded{string(b), encUTF8, nil}, true
		}
		return decoded{}, false
	}
	if latin1Charset(mediaType) || latin1Text(b) {
		var sb strings.Builder
		sb.Grow(len(b) + len(b)/8)
		for _, c := range b {
			sb.WriteRune(rune(c))
		}
		if s := sb.String(); textual(s) {
			return decoded{s, encLatin1, nil}, true
		}
	}
	return decoded{}, false
}

// textual reports a text with few control characters: blanks, form and
// vertical feeds, backspaces, bells and escapes (a terminal's colors)
// are text; NUL is not, and other controls are allowed one in 64.
func textual(s string) bool {
	bad := 0
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c >= 0x20 && c != 0x7f, isBlank(c), c == '\f', c == '\v', c == '\b', c == '\a', c == 0x1b:
		case c == 0:
			return false
		default:
			bad++
		}
	}
	return bad*64 <= len(s)
}

// decodeUTF16 decodes b as UTF-16 of enc, text only: an odd length, an
// unpaired surrogate or controls make it none.
func decodeUTF16(b []byte, enc textEncoding) (string, bool) {
	if len(b)%2 != 0 {
		return "", false
	}
	u := make([]uint16, len(b)/2)
	for i := range u {
		if enc == encUTF16LE {
			u[i] = uint16(b[2*i]) | uint16(b[2*i+1])<<8
		} else {
			u[i] = uint16(b[2*i])<<8 | uint16(b[2*i+1])
		}
	}
	runes := utf16.Decode(u)
	for _, c := range runes {
		if c == utf8.RuneError {
			return "", false
		}
	}
	s := string(runes)
	return s, textual(s)
}

// utf16Zeros reports bytes that look like UTF-16 of mostly ASCII text
// without a byte order mark: a zero in every other byte (of the first
// 512), on one side.
func utf16Zeros(b []byte) bool {
	n := min(len(b), 512) &^ 1
	if n < 4 {
		return false
	}
	even, odd := 0, 0
	for i := 0; i < n; i += 2 {
		if b[i] == 0 {
			even++
		}
		if b[i+1] == 0 {
			odd++
		}
	}
	half := n / 2
	return odd*10 >= half*9 && even == 0 || even*10 >= half*9 && odd == 0
}

// latin1Charset reports a media type whose charset is Latin-1 or one
// that writes ASCII and one byte a character alike (Windows-1252).
func latin1Charset(mediaType string) bool {
	mt := strings.ToLower(mediaType)
	i := strings.Index(mt, "charset=")
	if i < 0 {
		return false
	}
	cs := strings.Trim(mt[i+len("charset="):], `"' `)
	if k := strings.IndexAny(cs, "; "); k >= 0 {
		cs = cs[:k]
	}
	return strings.HasPrefix(cs, "iso-8859") || strings.HasPrefix(cs, "iso8859") || cs == "latin1" ||
		cs == "latin-1" || strings.HasPrefix(cs, "windows-125") || strings.HasPrefix(cs, "cp125") || cs == "us-ascii"
}

// latin1Text reports bytes that are not UTF-8 but read as Latin-1 text:
// mostly ASCII, the others letters and signs of Latin-1 (0xA0 on), no
// NUL.
func latin1Text(b []byte) bool {
	ascii, high := 0, 0
	for _, c := range b {
		switch {
		case c == 0:
			return false
		case c < 0x80:
			ascii++
		case c >= 0xa0:
			high++
		}
	}
	return ascii >= len(b)*3/4 && ascii+high == len(b)
}

// binaryMagic reports the magic numbers of binary formats: images (but
// SVG, which is text), PDF, archives and compressed data, video,
// executables, databases. Formats whose magic number is text (RIFF,
// OggS, ID3) are told by the bytes after it.
func binaryMagic(b []byte) bool {
	for _, m := range magics {
		if bytes.HasPrefix(b, m) {
			return true
		}
	}
	return len(b) >= 12 && string(b[4:8]) == "ftyp" // MP4, MOV, HEIC, AVIF
}

var magics = [][]byte{
	[]byte("\x89PNG\r\n\x1a\n"), {0xff, 0xd8, 0xff}, []byte("GIF87a"), []byte("GIF89a"), []byte("%PDF-"),
	[]byte("PK\x03\x04"), []byte("PK\x05\x06"), []byte("PK\x07\x08"), {0x1f, 0x8b},
	{0x37, 0x7a, 0xbc, 0xaf, 0x27, 0x1c}, []byte("Rar!\x1a\x07"), {0xfd, '7', 'z', 'X', 'Z', 0},
	{0x28, 0xb5, 0x2f, 0xfd}, []byte("\x7fELF"), []byte("\x00asm"), []byte("II*\x00"), []byte("MM\x00*"),
	[]byte("SQLite format 3\x00"), {0xca, 0xfe, 0xba, 0xbe}, {0xcf, 0xfa, 0xed, 0xfe}, {0, 0, 1, 0},
	{0x1a, 0x45, 0xdf, 0xa3}, []byte("\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"),
}

// validUTF8Prefix reports whether b is UTF-8 but for a rune its end cuts.
func validUTF8Prefix(b []byte) bool {
	for len(b) > 0 {
		r, size := utf8.DecodeRune(b)
		if r == utf8.RuneError && size == 1 {
			return !utf8.FullRune(b)
		}
		b = b[size:]
	}
	return true
}
