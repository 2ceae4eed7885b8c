package workspace

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strconv"
	"strings"

	session "github.com/agentsession/session"
)

// manifestMagic is the first line of every manifest: the format and its
// version.
const manifestMagic = "agentsession-workspace-manifest 1\n"

// Type is the kind of a manifest entry.
type Type byte

// The kinds of entries, as spelled in a manifest line.
const (
	// File is a regular file whose content is stored (Hash names its
	// blob); the executable bit is in Mode.
	File Type = 'f'
	// Symlink is a symbolic link, recorded as its target text: never
	// followed, never written through.
	Symlink Type = 'l'
	// Dir is an empty directory (directories with entries are implied by
	// them).
	Dir Type = 'd'
	// Oversized is a regular file larger than Options.MaxFileBytes:
	// recorded by its hash and size, its content not stored. Restore leaves
	// such a path as it finds it.
	Oversized Type = 'o'
	// Unreadable is a path the snapshot could not read (permission
	// denied, changed while read): neither its content nor its mode is
	// known. Restore leaves such a path as it finds it.
	Unreadable Type = 'u'
)

func (t Type) String() string {
	switch t {
	case File:
		return "file"
	case Symlink:
		return "symlink"
	case Dir:
		return "dir"
	case Oversized:
		return "oversized"
	case Unreadable:
		return "unreadable"
	}
	return "Type(" + strconv.Itoa(int(t)) + ")"
}

// Entry is one path of a manifest.
type Entry struct {
	// Path is slash-separated and relative to the workspace's directory,
	// its bytes exactly those of the file system's names (not necessarily
	// UTF-8).
	Path string
	Type Type
	// Mode holds the permission bits (0o777) of a File or Oversized
	// entry, 0o777 for a Symlink, 0o755 for a Dir, 0 for Unreadable.
	Mode fs.FileMode
	// Size is the content's length in bytes (a symlink's: its target's).
	Size int64
	// Hash is the lowercase hex SHA-256 of a File's or Oversized entry's
	// content; empty for the other types.
	Hash string
	// Target is a Symlink's target text.
	Target string
}

// Ref is the blob reference of a File entry's content ("" for the other
// types).
func (e *Entry) Ref() string {
	if e.Type != File {
		return ""
	}
	return session.BlobPrefix + e.Hash
}

// Executable reports whether a File's mode has the owner's executable bit.
func (e *Entry) Executable() bool { return e.Mode&0o100 != 0 }

// same reports whether two entries describe the same content, type and
// mode (the path aside).
func (e *Entry) same(o *Entry) bool {
	return e.Type == o.Type && e.Mode == o.Mode && e.Size == o.Size && e.Hash == o.Hash && e.Target == o.Target
}

// Manifest is the list of a snapshot's entries, sorted by the bytes of
// their paths. Its encoding (Encode) is the snapshot's blob, and the
// blob's reference the snapshot's id.
type Manifest struct {
	Entries []Entry
}

// Lookup returns the entry of path.
func (m *Manifest) Lookup(path string) (*Entry, bool) {
	i, ok := slices.BinarySearchFunc(m.Entries, path, func(e Entry, p string) int { return strings.Compare(e.Path, p) })
	if !ok {
		return nil, false
	}
	return &m.Entries[i], true
}

// Encode returns the manifest's bytes: the magic line, then one line per
// entry:
//
//	f 644 1234 blob:sha256:<64 hex> "path"
//	l 777 6 - "link" "target"
//	d 755 0 - "empty/dir"
//	o 644 99999999 sha256:<64 hex> "big.iso"
//	u 0 0 - "unreadable"
//
// type, mode in octal, size in decimal, the content reference (a stored
// file's exactly as its blob is named, which the garbage collector marks;
// an oversized file's hash without the blob: prefix, as nothing is
// stored), the path quoted as strconv.Quote does (any byte round-trips),
// and a symlink's target quoted the same way. The entries must be valid
// and sorted (as DecodeManifest requires); Encode does not check.
func (m *Manifest) Encode() []byte {
	n := len(manifestMagic)
	for i := range m.Entries {
		n += 100 + len(m.Entries[i].Path) + len(m.Entries[i].Target)
	}
	b := make([]byte, 0, n)
	b = append(b, manifestMagic...)
	for i := range m.Entries {
		b = appendEntry(b, &m.Entries[i])
	}
	return b
}

func appendEntry(b []byte, e *Entry) []byte {
	b = append(b, byte(e.Type), ' ')
	b = strconv.AppendUint(b, uint64(e.Mode&0o777), 8)
	b = append(b, ' ')
	b = strconv.AppendInt(b, e.Size, 10)
	b = append(b, ' ')
	switch e.Type {
	case File:
		b = append(b, session.BlobPrefix...)
		b = append(b, e.Hash...)
	case Oversized:
		b = append(b, hashPrefix...)
		b = append(b, e.Hash...)
	default:
		b = append(b, '-')
	}
	b = append(b, ' ')
	b = appendQuote(b, e.Path)
	if e.Type == Symlink {
		b = append(b, ' ')
		b = appendQuote(b, e.Target)
	}
	return append(b, '\n')
}

// appendQuote is strconv.AppendQuote, faster for the common plain path.
func appendQuote(b []byte, s string) []byte {
	if plain(s) {
		b = append(b, '"')
		b = append(b, s...)
		return append(b, '"')
	}
	return strconv.AppendQuote(b, s)
}

// plain reports whether strconv.Quote leaves s as it is (between the
// quotes): printable ASCII without a quote or a backslash.
func plain[S string | []byte](s S) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}

// hashPrefix spells the hash of content that is not stored.
const hashPrefix = "sha256:"

// ErrManifest is wrapped by every error decoding a manifest.
var ErrManifest = errors.New("workspace: invalid manifest")

// MaxPathBytes bounds a path (and a symlink target) in a manifest.
const MaxPathBytes = 4096

// DecodeManifest parses a manifest strictly: it accepts exactly what
// Encode writes for valid entries, so that a snapshot has one encoding
// and a manifest read from a store (untrusted) cannot name anything
// outside the workspace. Rejected (ErrManifest): a wrong magic line; a
// line not ending in a newline; an unknown type; a mode, size or
// reference not in canonical form, or not fitting the type; a path that
// is empty, absolute, not quoted canonically, or that has an empty, "."
// or ".." segment, a NUL or a ".git" segment; a path not
// after the previous one in byte order (unsorted or duplicate); a path
// under a file, a symlink or an empty directory of the manifest.
func DecodeManifest(data []byte) (*Manifest, error) {
	if !bytes.HasPrefix(data, []byte(manifestMagic)) {
		return nil, fmt.Errorf("%w: not a workspace manifest (version 1)", ErrManifest)
	}
	rest := data[len(manifestMagic):]
	n := bytes.Count(rest, []byte{'\n'})
	m := &Manifest{Entries: make([]Entry, 0, n)}
	leaves := make(map[string]Type, n) // paths that cannot have children
	line := 1
	for len(rest) > 0 {
		line++
		nl := bytes.IndexByte(rest, '\n')
		if nl < 0 {
			return nil, fmt.Errorf("%w: line %d: no final newline", ErrManifest, line)
		}
		e, err := parseEntry(rest[:nl])
		if err != nil {
			return nil, fmt.Errorf("%w: line %d: %v", ErrManifest, line, err)
		}
		rest = rest[nl+1:]
		if k := len(m.Entries); k > 0 && m.Entries[k-1].Path >= e.Path {
			return nil, fmt.Errorf("%w: line %d: path %q not after %q", ErrManifest, line, e.Path, m.Entries[k-1].Path)
		}
		for i := 0; i < len(e.Path); i++ {
			if e.Path[i] == '/' {
				if t, ok := leaves[e.Path[:i]]; ok {
					return nil, fmt.Errorf("%w: line %d: path %q is under %s %q", ErrManifest, line, e.Path, t, e.Path[:i])
				}
			}
		}
		leaves[e.Path] = e.Type
		m.Entries = append(m.Entries, e)
	}
	return m, nil
}

func parseEntry(l []byte) (Entry, error) {
	var e Entry
	if len(l) < 2 || l[1] != ' ' {
		return e, errors.New("no type")
	}
	e.Type = Type(l[0])
	switch e.Type {
	case File, Symlink, Dir, Oversized, Unreadable:
	default:
		return e, fmt.Errorf("unknown type %q", l[0])
	}
	l = l[2:]
	field := func() ([]byte, bool) {
		sp := bytes.IndexByte(l, ' ')
		if sp < 0 {
			return nil, false
		}
		f := l[:sp]
		l = l[sp+1:]
		return f, true
	}
	modeB, ok1 := field()
	sizeB, ok2 := field()
	refB, ok3 := field()
	if !ok1 || !ok2 || !ok3 {
		return e, errors.New("missing fields")
	}
	mode, ok := parseCanonical(modeB, 8)
	if !ok || mode > 0o777 {
		return e, fmt.Errorf("bad mode %q", modeB)
	}
	e.Mode = fs.FileMode(mode)
	size, ok := parseCanonical(sizeB, 10)
	if !ok {
		return e, fmt.Errorf("bad size %q", sizeB)
	}
	e.Size = int64(size)
	switch e.Type {
	case File:
		h, ok := bytes.CutPrefix(refB, []byte(session.BlobPrefix))
		if !ok || !isHex64(h) {
			return e, fmt.Errorf("bad content reference %q", refB)
		}
		e.Hash = string(h)
	case Oversized:
		h, ok := bytes.CutPrefix(refB, []byte(hashPrefix))
		if !ok || !isHex64(h) {
			return e, fmt.Errorf("bad hash %q", refB)
		}
		e.Hash = string(h)
	default:
		if len(refB) != 1 || refB[0] != '-' {
			return e, fmt.Errorf("a %s has no content reference", e.Type)
		}
	}
	switch e.Type {
	case Symlink:
		if e.Mode != 0o777 {
			return e, errors.New("a symlink's mode is 777")
		}
	case Dir:
		if e.Mode != 0o755 || e.Size != 0 {
			return e, errors.New("a dir is 755 with size 0")
		}
	case Unreadable:
		if e.Mode != 0 || e.Size != 0 {
			return e, errors.New("an unreadable entry is 0 with size 0")
		}
	}
	path, rest, err := unquote(l)
	if err != nil {
		return e, fmt.Errorf("path: %v", err)
	}
	if err := checkPath(path); err != nil {
		return e, err
	}
	e.Path = path
	if e.Type == Symlink {
		if len(rest) == 0 || rest[0] != ' ' {
			return e, errors.New("a symlink without its target")
		}
		target, rest2, err := unquote(rest[1:])
		if err != nil {
			return e, fmt.Errorf("target: %v", err)
		}
		if target == "" || len(target) > MaxPathBytes || strings.IndexByte(target, 0) >= 0 {
			return e, errors.New("bad symlink target")
		}
		if int64(len(target)) != e.Size {
			return e, errors.New("a symlink's size is its target's length")
		}
		e.Target, rest = target, rest2
	}
	if len(rest) != 0 {
		return e, errors.New("trailing bytes")
	}
	return e, nil
}

// parseCanonical parses a number as strconv.FormatUint writes it in base
// 8 or 10: digits only, no leading zero but for 0 itself, at most 18 of
// them (no overflow of int64).
func parseCanonical(b []byte, base uint64) (uint64, bool) {
	if len(b) == 0 || len(b) > 18 || len(b) > 1 && b[0] == '0' {
		return 0, false
	}
	var n uint64
	for _, c := range b {
		d := uint64(c) - '0'
		if c < '0' || d >= base {
			return 0, false
		}
		n = n*base + d
	}
	return n, true
}

// unquote reads a canonically quoted string (as strconv.Quote writes it)
// at the start of b and returns it and what follows.
func unquote(b []byte) (string, []byte, error) {
	if len(b) == 0 || b[0] != '"' {
		return "", nil, errors.New("not quoted")
	}
	end := -1
	for i := 1; i < len(b); i++ {
		if b[i] == '\\' {
			i++
			continue
		}
		if b[i] == '"' {
			end = i
			break
		}
	}
	if end < 0 {
		return "", nil, errors.New("unterminated quote")
	}
	if plain(b[1:end]) {
		return string(b[1:end]), b[end+1:], nil
	}
	q := string(b[:end+1])
	s, err := strconv.Unquote(q)
	if err != nil {
		return "", nil, err
	}
	if strconv.Quote(s) != q {
		return "", nil, errors.New("not quoted canonically")
	}
	return s, b[end+1:], nil
}

// checkPath accepts the paths a snapshot can record: relative,
// slash-separated, no empty, "." or ".." segment, no NUL, no ".git"
// segment in any case (a repository's metadata is never recorded, and
// writing it would be a way to run code). A backslash is a byte of a
// name on Unix; Restore refuses it on Windows, where it separates.
func checkPath(p string) error {
	if p == "" || len(p) > MaxPathBytes {
		return fmt.Errorf("bad path length %d", len(p))
	}
	if strings.IndexByte(p, 0) >= 0 {
		return fmt.Errorf("path %q has a NUL", p)
	}
	for seg := range strings.SplitSeq(p, "/") {
		switch seg {
		case "", ".", "..":
			return fmt.Errorf("path %q has an empty, . or .. segment", p)
		}
		if isGitDir(seg) {
			return fmt.Errorf("path %q has a .git segment", p)
		}
	}
	return nil
}

// isGitDir reports whether a name is .git as a case-insensitive file
// system would see it.
func isGitDir(name string) bool { return strings.EqualFold(name, ".git") }

func isHex64[S string | []byte](s S) bool {
	if len(s) != 64 {
		return false
	}
	bad := byte(0)
	for i := 0; i < 64; i++ {
		bad |= notHex[s[i]]
	}
	return bad == 0
}

// notHex is 1 for the bytes that are not lowercase hex digits.
var notHex = func() (t [256]byte) {
	for i := range t {
		if !(i >= '0' && i <= '9' || i >= 'a' && i <= 'f') {
			t[i] = 1
		}
	}
	return t
}()

// hashOf returns the lowercase hex SHA-256 of b.
func hashOf(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}
