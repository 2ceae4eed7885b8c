package names

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// MaxIDLength bounds session and entry ids, in bytes.
const MaxIDLength = 512

// ValidateID reports whether id can name a session in any Store: 1 to
// MaxIDLength bytes of valid UTF-8 without control characters (Unicode
// category Cc: NUL, newlines, DEL, C1 controls). Anything else goes:
// "user:42", "alice@example.com", "chat 7", "Ünïcode", ".hidden".
// Stores that put ids in file names escape them (FileStem); the rule is
// the same in every store.
func ValidateID(id string) error {
	if id == "" {
		return fmt.Errorf("%w: empty", ErrInvalidID)
	}
	if len(id) > MaxIDLength {
		return fmt.Errorf("%w: %d bytes, over the %d allowed", ErrInvalidID, len(id), MaxIDLength)
	}
	for i, r := range id {
		if r == utf8.RuneError {
			if _, size := utf8.DecodeRuneInString(id[i:]); size == 1 {
				return fmt.Errorf("%w: %q is not valid UTF-8 at byte %d", ErrInvalidID, id, i)
			}
		}
		if isControl(r) {
			return fmt.Errorf("%w: %q holds the control character %U at byte %d", ErrInvalidID, id, r, i)
		}
	}
	return nil
}

func isControl(r rune) bool { return unicode.IsControl(r) }

// MaxStem bounds FileStem's result: with the seed layout's timestamp
// (24 bytes), '_' and ".jsonl", and the longest name a store derives from
// a session file's (an archive mark's temporary file adds 29 bytes and a
// leading "..", 60 in all), a file name stays under the 255 bytes file
// systems allow.
const MaxStem = 180

// hashedKeep is how much of a long id's escaped form a hashed stem keeps,
// before '~' and 16 hexadecimal digits.
const hashedKeep = MaxStem - 17

// safeByte reports the bytes a stem keeps as they are.
func safeByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.'
}

// FileStem returns the part of a file name that stands for session id:
// ASCII letters, digits, '-', '_' and '.' as they are (except a leading
// '.', which would hide the file), every other byte as '%' and two
// upper-case hexadecimal digits, so that no id reaches outside its
// directory or names a device, on any system. An id the earlier rule
// accepted (UUIDs among them) keeps its name. A stem that would be
// longer than MaxStem keeps its first bytes and ends with '~' and 16
// hexadecimal digits of the SHA-256 of id: the id is then read from the
// file's header (ParseStem says so).
func FileStem(id string) string {
	var b strings.Builder
	for i := 0; i < len(id); i++ {
		c := id[i]
		if safeByte(c) && (i > 0 || c != '.') {
			b.WriteByte(c)
			continue
		}
		fmt.Fprintf(&b, "%%%02X", c)
	}
	s := b.String()
	if len(s) <= MaxStem {
		return s
	}
	cut := hashedKeep
	if k := strings.LastIndexByte(s[:cut], '%'); k > cut-3 {
		cut = k // not inside an escape
	}
	sum := sha256.Sum256([]byte(id))
	return s[:cut] + "~" + hex.EncodeToString(sum[:8])
}

// ParseStem returns the session id a stem made by FileStem stands for.
// hashed says the stem is a long id's, which names it only with the
// file's header; ok is false for a name FileStem does not make.
func ParseStem(stem string) (id string, hashed, ok bool) {
	if i := strings.IndexByte(stem, '~'); i >= 0 {
		h := stem[i+1:]
		if len(h) != 16 || i > hashedKeep || strings.ContainsAny(h, "ABCDEF") {
			return "", false, false
		}
		if _, err := hex.DecodeString(h); err != nil {
			return "", false, false
		}
		return "", true, true
	}
	if stem == "" || len(stem) > MaxStem {
		return "", false, false
	}
	if !strings.Contains(stem, "%") {
		if stem[0] == '.' || strings.IndexFunc(stem, func(r rune) bool { return r > 0x7f || !safeByte(byte(r)) }) >= 0 {
			return "", false, false
		}
		return stem, false, true
	}
	b := make([]byte, 0, len(stem))
	for i := 0; i < len(stem); i++ {
		c := stem[i]
		if c != '%' {
			b = append(b, c)
			continue
		}
		if i+2 >= len(stem) {
			return "", false, false
		}
		v, err := hex.DecodeString(stem[i+1 : i+3])
		if err != nil || strings.ToUpper(stem[i+1:i+3]) != stem[i+1:i+3] {
			return "", false, false
		}
		b = append(b, v[0])
		i += 2
	}
	id = string(b)
	if ValidateID(id) != nil || FileStem(id) != stem {
		return "", false, false // not canonical: FileStem makes another
	}
	return id, false, true
}
