// Package format is what s3store keeps in a bucket: the keys of its
// objects and their formats, and the parsers of what it reads back. It
// imports no SDK, so that its parsers are fuzzed on their own.
package format

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	session "github.com/agentsession/session"
)

// The objects of a store, under its prefix (see s3store's package doc):
//
//	sessions/<id>                     the session's head: where its log is, and its listing
//	log/<id>/<inc>/<gen>/0000000000   a generation's descriptor: the header and the segments
//	log/<id>/<inc>/<gen>/<seq>        the parts appended since, one per write, seq from 1
//	log/<id>/<inc>/seg/<random>       a segment: entries, one JSON line each
//	index.json                        the listing index (a cache of the heads)
//	blobs/<sha256 hex>                a blob
//	state/<scope>/<owner>             shared state
//
// <id> is the session id in unpadded base64url, so that any id
// session.ValidateID accepts ("..", "/", spaces, any UTF-8) is one path
// element; <inc> tells apart sessions that had the same id (created,
// deleted, created again); <gen> is "g", ten digits (the generation's
// ordinal) and a random suffix, since two writers may each prepare the
// next generation and only the one whose marker lands is it.

const seqDigits = 10

// maxKeyID bounds the encoded id in a key: a longer one (ids go up to
// 512 bytes) is "~" and the SHA-256 of the id in hex, since servers
// that keep objects as files (Versity Gateway, MinIO) allow 255 bytes a
// path element. Such a session's id is read from its head.
const maxKeyID = 160

func EncID(id string) string {
	if e := base64.RawURLEncoding.EncodeToString([]byte(id)); len(e) <= maxKeyID {
		return e
	}
	sum := sha256.Sum256([]byte(id))
	return "~" + hex.EncodeToString(sum[:])
}

// DecID returns the id of a key element, ok false when it is hashed (or
// not one encID makes).
func DecID(s string) (string, bool) {
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || session.ValidateID(string(b)) != nil || EncID(string(b)) != s {
		return "", false
	}
	return string(b), true
}

// IsKeyID reports whether s is a key element encID makes.
func IsKeyID(s string) bool {
	if _, ok := DecID(s); ok {
		return true
	}
	if len(s) != 65 || s[0] != '~' {
		return false
	}
	_, err := hex.DecodeString(s[1:])
	return err == nil && strings.ToLower(s) == s
}

func HeadKey(id string) string          { return "sessions/" + EncID(id) }
func LogDir(id, inc string) string      { return "log/" + EncID(id) + "/" + inc + "/" }
func GenDir(id, inc, gen string) string { return LogDir(id, inc) + gen + "/" }
func PartKey(id, inc, gen string, seq int) string {
	return GenDir(id, inc, gen) + fmt.Sprintf("%0*d", seqDigits, seq)
}

func RandomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b) // never fails (crypto/rand)
	return hex.EncodeToString(b)
}

// MaxGenOrdinal is the last ordinal a generation's name holds (ten
// digits).
const MaxGenOrdinal = 9999999999

// NewGen returns a new name for a generation of ordinal (at most
// MaxGenOrdinal).
func NewGen(ordinal int) string { return fmt.Sprintf("g%010d-%s", ordinal, RandomHex(4)) }

// GenOrdinal returns the ordinal of a generation's name as NewGen makes
// them ("g", ten digits, "-", eight lowercase hexadecimal digits), -1
// for anything else: the names come from objects anyone with write
// access could have put, and they become key elements.
func GenOrdinal(gen string) int {
	if len(gen) != 20 || gen[0] != 'g' || gen[11] != '-' {
		return -1
	}
	n := 0
	for _, c := range gen[1:11] {
		if c < '0' || c > '9' {
			return -1
		}
		n = n*10 + int(c-'0')
	}
	for _, c := range gen[12:] {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return -1
		}
	}
	return n
}

// Head is a session's head object. Inc and the generation it names
// are what readers start from (Gen and Seq may lag: readers go on past
// them); Info is the session's listing as of Gen and Seq.
type Head struct {
	V   int    `json:"v"`
	Inc string `json:"inc"`
	Gen string `json:"gen"`
	Seq int    `json:"seq"`
	// Epoch is the generation's (Descriptor.Epoch).
	Epoch int                 `json:"epoch,omitempty"`
	Info  session.SessionInfo `json:"info"`
}

// Descriptor is a generation's seq 0: the log as of its start.
type Descriptor struct {
	V        int             `json:"v"`
	Header   json.RawMessage `json:"header"`
	Segments []Segment       `json:"segments,omitempty"`
	Entries  int             `json:"entries"`
	// Fold says the generation holds the same entries as the one before
	// (parts folded into a segment), so that a reader that read that one
	// keeps what it read; a rewrite clears it.
	Fold bool `json:"fold,omitempty"`
	// Epoch counts the rewrites of the log (a fold keeps it): a reader
	// that saw another epoch must read the log again.
	Epoch      int       `json:"epoch,omitempty"`
	Updated    time.Time `json:"updated"`
	ArchivedAt time.Time `json:"archivedAt,omitzero"`
	Archived   bool      `json:"archived,omitempty"`
	Compacting time.Time `json:"compacting,omitzero"`
	// Retired lists what earlier generations left, removed once their
	// grace has passed (see Options.Grace).
	Retired []Retired `json:"retired,omitempty"`
}

type Segment struct {
	Key     string `json:"key"` // under the session's log directory
	Entries int    `json:"entries"`
	Bytes   int64  `json:"bytes"`
}

type Retired struct {
	Gen      string    `json:"gen,omitempty"` // a generation's objects
	Segments []string  `json:"segments,omitempty"`
	At       time.Time `json:"at"`
}

// Part kinds: the first line of a part object.
const (
	PartAppend     = "append"
	PartNext       = "next"    // the log goes on in generation Gen
	PartDeleted    = "deleted" // the session was deleted
	PartArchive    = "archive"
	PartUnarchive  = "unarchive"
	PartCompacting = "compacting"
)

type PartHead struct {
	K   string    `json:"k"`
	T   time.Time `json:"t"`
	Gen string    `json:"gen,omitempty"`
}

// EncodePart returns a part object: its head line, then one line per
// entry.
func EncodePart(h PartHead, entries []session.Entry) []byte {
	line, _ := json.Marshal(h) // strings and a time
	buf := append(line, '\n')
	for _, e := range entries {
		buf = e.AppendJSON(buf)
		buf = append(buf, '\n')
	}
	return buf
}

// DecodePart splits a part object into its head and its entry lines.
func DecodePart(data []byte) (PartHead, [][]byte, error) {
	var h PartHead
	first, rest, _ := bytes.Cut(data, []byte{'\n'})
	if err := json.Unmarshal(first, &h); err != nil {
		return h, nil, err
	}
	switch h.K {
	case PartAppend, PartNext, PartDeleted, PartArchive, PartUnarchive, PartCompacting:
	default:
		return h, nil, fmt.Errorf("a part of unknown kind %q", h.K)
	}
	if h.K == PartNext && GenOrdinal(h.Gen) < 0 {
		return h, nil, fmt.Errorf("a marker naming %q, which is no generation", h.Gen)
	}
	lines, err := SplitLines(rest)
	if h.K != PartAppend && len(lines) > 0 {
		return h, nil, fmt.Errorf("a %s part with %d entries", h.K, len(lines))
	}
	return h, lines, err
}

// SplitLines splits a segment or the rest of a part into lines, each of
// which ended with a newline.
func SplitLines(data []byte) ([][]byte, error) {
	var lines [][]byte
	for len(data) > 0 {
		line, rest, ok := bytes.Cut(data, []byte{'\n'})
		if !ok {
			return nil, fmt.Errorf("a last line with no newline")
		}
		lines = append(lines, line)
		data = rest
	}
	return lines, nil
}

// CheckRel refuses a segment key that would leave the session's log
// directory: the keys come from objects another program could have
// written.
func CheckRel(key string) error {
	if !strings.HasPrefix(key, "seg/") || strings.Contains(key[4:], "/") || len(key) > 64 {
		return fmt.Errorf("a segment named %q", key)
	}
	return nil
}

// ParseHead reads a head object.
func ParseHead(data []byte) (Head, error) {
	var h Head
	if err := json.Unmarshal(data, &h); err != nil {
		return h, err
	}
	if h.V != 1 {
		return h, &session.UnsupportedVersionError{Version: h.V}
	}
	if !IsInc(h.Inc) || GenOrdinal(h.Gen) < 0 || h.Seq < 0 {
		return h, fmt.Errorf("a head naming generation %q of %q", h.Gen, h.Inc)
	}
	return h, nil
}

// IsInc reports whether s is an incarnation as create makes them: 16
// lowercase hexadecimal digits (a path element, whatever wrote it).
func IsInc(s string) bool {
	if len(s) != 16 {
		return false
	}
	for _, c := range s {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// ParseDescriptor reads a generation's descriptor.
func ParseDescriptor(data []byte) (Descriptor, error) {
	var d Descriptor
	if err := json.Unmarshal(data, &d); err != nil {
		return d, err
	}
	if d.V != 1 {
		return d, &session.UnsupportedVersionError{Version: d.V}
	}
	n := 0
	for _, sg := range d.Segments {
		if err := CheckRel(sg.Key); err != nil {
			return d, err
		}
		if sg.Entries < 0 || sg.Bytes < 0 {
			return d, fmt.Errorf("segment %s of %d entries, %d bytes", sg.Key, sg.Entries, sg.Bytes)
		}
		n += sg.Entries
	}
	if d.Entries < 0 || n > d.Entries {
		return d, fmt.Errorf("a descriptor of %d entries whose segments hold %d", d.Entries, n)
	}
	return d, nil
}
