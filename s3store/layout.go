package s3store

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	session "github.com/agentsession/session"
)

// The objects of a store, under its prefix (see the package doc):
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

func encID(id string) string {
	if e := base64.RawURLEncoding.EncodeToString([]byte(id)); len(e) <= maxKeyID {
		return e
	}
	sum := sha256.Sum256([]byte(id))
	return "~" + hex.EncodeToString(sum[:])
}

// decID returns the id of a key element, ok false when it is hashed (or
// not one encID makes).
func decID(s string) (string, bool) {
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || session.ValidateID(string(b)) != nil || encID(string(b)) != s {
		return "", false
	}
	return string(b), true
}

// isKeyID reports whether s is a key element encID makes.
func isKeyID(s string) bool {
	if _, ok := decID(s); ok {
		return true
	}
	if len(s) != 65 || s[0] != '~' {
		return false
	}
	_, err := hex.DecodeString(s[1:])
	return err == nil && strings.ToLower(s) == s
}

func headKey(id string) string          { return "sessions/" + encID(id) }
func logDir(id, inc string) string      { return "log/" + encID(id) + "/" + inc + "/" }
func genDir(id, inc, gen string) string { return logDir(id, inc) + gen + "/" }
func partKey(id, inc, gen string, seq int) string {
	return genDir(id, inc, gen) + fmt.Sprintf("%0*d", seqDigits, seq)
}

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b) // never fails (crypto/rand)
	return hex.EncodeToString(b)
}

func newGen(ordinal int) string { return fmt.Sprintf("g%010d-%s", ordinal, randomHex(4)) }

// genOrdinal returns the ordinal of a generation's name, -1 when it is
// not one.
func genOrdinal(gen string) int {
	if len(gen) < 12 || gen[0] != 'g' || gen[11] != '-' {
		return -1
	}
	n, err := strconv.Atoi(gen[1:11])
	if err != nil {
		return -1
	}
	return n
}

// headObj is a session's head object. Inc and the generation it names
// are what readers start from (Gen and Seq may lag: readers go on past
// them); Info is the session's listing as of Gen and Seq.
type headObj struct {
	V    int                 `json:"v"`
	Inc  string              `json:"inc"`
	Gen  string              `json:"gen"`
	Seq  int                 `json:"seq"`
	Info session.SessionInfo `json:"info"`
}

// descriptor is a generation's seq 0: the log as of its start.
type descriptor struct {
	V        int             `json:"v"`
	Header   json.RawMessage `json:"header"`
	Segments []segment       `json:"segments,omitempty"`
	Entries  int             `json:"entries"`
	// Fold says the generation holds the same entries as the one before
	// (parts folded into a segment), so that a reader that read that one
	// keeps what it read; a rewrite clears it.
	Fold       bool      `json:"fold,omitempty"`
	Updated    time.Time `json:"updated"`
	ArchivedAt time.Time `json:"archivedAt,omitzero"`
	Archived   bool      `json:"archived,omitempty"`
	Compacting time.Time `json:"compacting,omitzero"`
	// Retired lists what earlier generations left, removed once their
	// grace has passed (see Options.Grace).
	Retired []retired `json:"retired,omitempty"`
}

type segment struct {
	Key     string `json:"key"` // under the session's log directory
	Entries int    `json:"entries"`
	Bytes   int64  `json:"bytes"`
}

type retired struct {
	Gen      string    `json:"gen,omitempty"` // a generation's objects
	Segments []string  `json:"segments,omitempty"`
	At       time.Time `json:"at"`
}

// Part kinds: the first line of a part object.
const (
	partAppend     = "append"
	partNext       = "next"    // the log goes on in generation Gen
	partDeleted    = "deleted" // the session was deleted
	partArchive    = "archive"
	partUnarchive  = "unarchive"
	partCompacting = "compacting"
)

type partHead struct {
	K   string    `json:"k"`
	T   time.Time `json:"t"`
	Gen string    `json:"gen,omitempty"`
}

// encodePart returns a part object: its head line, then one line per
// entry.
func encodePart(h partHead, entries []session.Entry) []byte {
	line, _ := json.Marshal(h) // strings and a time
	buf := append(line, '\n')
	for _, e := range entries {
		buf = e.AppendJSON(buf)
		buf = append(buf, '\n')
	}
	return buf
}

// decodePart splits a part object into its head and its entry lines.
func decodePart(data []byte) (partHead, [][]byte, error) {
	var h partHead
	first, rest, _ := bytes.Cut(data, []byte{'\n'})
	if err := json.Unmarshal(first, &h); err != nil {
		return h, nil, err
	}
	switch h.K {
	case partAppend, partNext, partDeleted, partArchive, partUnarchive, partCompacting:
	default:
		return h, nil, fmt.Errorf("a part of unknown kind %q", h.K)
	}
	if h.K == partNext && genOrdinal(h.Gen) < 0 {
		return h, nil, fmt.Errorf("a marker naming %q, which is no generation", h.Gen)
	}
	lines, err := splitLines(rest)
	if h.K != partAppend && len(lines) > 0 {
		return h, nil, fmt.Errorf("a %s part with %d entries", h.K, len(lines))
	}
	return h, lines, err
}

// splitLines splits a segment or the rest of a part into lines, each of
// which ended with a newline.
func splitLines(data []byte) ([][]byte, error) {
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

// checkRel refuses a segment key that would leave the session's log
// directory: the keys come from objects another program could have
// written.
func checkRel(key string) error {
	if !strings.HasPrefix(key, "seg/") || strings.Contains(key[4:], "/") || len(key) > 64 {
		return fmt.Errorf("a segment named %q", key)
	}
	return nil
}
