package export

import (
	"bytes"
	"encoding/binary"
	"strings"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/agentsession/session/redact"
)

// Whether a blob may be sent with an export that redacts: a blob's
// reference is the hash of its bytes, so it cannot be redacted, only
// withheld. redact.Redactor.Bytes reads the text it recognizes (UTF-8,
// UTF-16 with its byte order mark, Latin-1); text it takes for binary
// (a .env with a NUL byte, a log with control characters, UTF-16
// without a mark, UTF-32, an uncompressed tar holding a .env) is read
// here as every text it could be, and withheld when any of them holds
// a secret. Formats whose bytes are no text (images, archives that
// compress) are passed over by their magic numbers.

// withhold reports whether a blob of data must be withheld from an
// export that r redacts, and what r found in it. A blob of no known
// binary format larger than maxBlobText is withheld unread.
func withhold(r *redact.Redactor, data []byte) (bool, redact.Report) {
	if _, rep := r.Bytes(data, ""); rep.Total() > 0 {
		return true, rep
	}
	if compressedOrImage(data) {
		return false, redact.Report{}
	}
	if len(data) > maxBlobText {
		return true, redact.Report{}
	}
	for _, text := range readings(data) {
		if _, rep := r.String(text); rep.Total() > 0 {
			return true, rep
		}
	}
	return false, redact.Report{}
}

// maxBlobText bounds the blobs of no known binary format read as every
// text they may hold (five readings); a larger one is withheld.
const maxBlobText = 8 << 20

// readings are the texts data may hold: its bytes as UTF-8, Latin-1
// where they are not, with control characters as line breaks (the
// printable runs of a binary file, as strings(1) shows them), and
// UTF-16 and UTF-32 in both byte orders where the length allows.
func readings(data []byte) []string {
	var b strings.Builder
	b.Grow(len(data))
	for rest := data; len(rest) > 0; {
		r, n := utf8.DecodeRune(rest)
		if r == utf8.RuneError && n <= 1 {
			r, n = rune(rest[0]), 1 // Latin-1
		}
		if r < 0x20 && r != '\t' || r == 0x7f {
			r = '\n'
		}
		b.WriteRune(r)
		rest = rest[n:]
	}
	return append([]string{b.String()}, wide(data)...)
}

// wide returns data read as UTF-16 or UTF-32 in both byte orders, where
// its length allows.
func wide(data []byte) []string {
	var out []string
	if len(data)%2 == 0 {
		for _, order := range []binary.ByteOrder{binary.LittleEndian, binary.BigEndian} {
			u := make([]uint16, len(data)/2)
			for i := range u {
				u[i] = order.Uint16(data[2*i:])
			}
			out = append(out, string(utf16.Decode(u)))
		}
	}
	if len(data)%4 == 0 {
		for _, order := range []binary.ByteOrder{binary.LittleEndian, binary.BigEndian} {
			rs := make([]rune, len(data)/4)
			for i := range rs {
				rs[i] = rune(order.Uint32(data[4*i:]))
				if !utf8.ValidRune(rs[i]) {
					rs[i] = '\n'
				}
			}
			out = append(out, string(rs))
		}
	}
	return out
}

// compressedOrImage reports whether data starts as an image or a
// compressed archive does: bytes that hold no text to read.
func compressedOrImage(data []byte) bool {
	for _, magic := range [][]byte{
		[]byte("\x89PNG\r\n\x1a\n"), {0xff, 0xd8, 0xff}, []byte("GIF87a"), []byte("GIF89a"),
		[]byte("RIFF"), // WebP, WAV
		{0x1f, 0x8b}, {0x28, 0xb5, 0x2f, 0xfd}, []byte("PK\x03\x04"), []byte("BZh"), {0xfd, '7', 'z', 'X', 'Z', 0},
	} {
		if bytes.HasPrefix(data, magic) {
			return true
		}
	}
	return false
}
