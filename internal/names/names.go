// Package names holds the rules by which sessions are named and listed
// the same way in every store: valid session ids, list cursors, header
// strings as stores keep them, and the directory names of the seed
// layout. The session package uses them and exports the ones hosts call
// (ValidateID); storekit exports the rest to store implementations. It
// imports nothing of this module but internal/jsonx.
package names

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/agentsession/session/internal/jsonx"
)

// ErrInvalidID is session.ErrInvalidID.
var ErrInvalidID = errors.New("session: invalid id")

// Cursor returns the cursor that continues a listing after the session
// id, updated at updated: "<unix nanos>.<id>".
func Cursor(updated time.Time, id string) string {
	return strconv.FormatInt(updated.UnixNano(), 10) + "." + id
}

// ParseCursor reads a cursor made by Cursor; "" is not a cursor.
func ParseCursor(c string) (updated time.Time, id string, err error) {
	ns, id, ok := strings.Cut(c, ".")
	n, err := strconv.ParseInt(ns, 10, 64)
	if !ok || err != nil || ValidateID(id) != nil {
		return time.Time{}, "", fmt.Errorf("session: invalid list cursor %q", c)
	}
	return time.Unix(0, n), id, nil
}

// StoredString returns s as every store keeps a header's strings (the
// working directory, the title, the parent): as a JSON string holds it,
// so the same in a file, in memory and in a database. Valid UTF-8 is kept
// as it is, NUL and other control characters included; each byte of s
// that is not valid UTF-8 becomes U+FFFD, as JSON encoding makes it.
// Stores apply it to what they are given, and to the strings a listing
// is filtered by.
func StoredString(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	v, err := jsonx.Unquote(jsonx.AppendString(nil, s))
	if err != nil {
		return strings.ToValidUTF8(s, "\uFFFD")
	}
	return v
}

// CwdDir returns the directory name the seed layout uses for cwd: the
// working directory without its leading separator, '/', '\' and ':'
// turned into '-', between "--" and "--" (and control characters, which
// few file systems take in a name, turned into '-' too; bytes that are
// not UTF-8 become U+FFFD, as in the header). A name longer than file systems
// allow (maxDirName bytes), for a deep working directory, keeps its
// first bytes and ends with '-', 16 hexadecimal digits of the SHA-256 of
// cwd, and "--": pi, which has no such rule, cannot create sessions for
// such a directory at all.
func CwdDir(cwd string) string {
	c := strings.TrimLeft(StoredString(cwd), `/\`)
	c = strings.NewReplacer("/", "-", `\`, "-", ":", "-").Replace(c)
	if strings.ContainsFunc(c, unicode.IsControl) {
		// No file system takes NUL in a name, and few other controls.
		c = strings.Map(func(r rune) rune {
			if unicode.IsControl(r) {
				return '-'
			}
			return r
		}, c)
	}
	name := "--" + c + "--"
	if len(name) <= maxDirName {
		return name
	}
	sum := sha256.Sum256([]byte(cwd))
	keep := maxDirName - len("----") - 1 - 16
	for keep > 0 && !utf8.RuneStart(c[keep]) {
		keep-- // cut between characters
	}
	return "--" + c[:keep] + "-" + hex.EncodeToString(sum[:8]) + "--"
}

// maxDirName is the longest file name most file systems take (NAME_MAX).
const maxDirName = 255
