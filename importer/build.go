package importer

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"time"

	session "github.com/agentsession/session"
)

// The helpers every format reader builds its entries with.

// messageEntry is a message entry with the source's id, parent and time.
func messageEntry(id, parent string, t time.Time, m *session.Message) (session.Entry, error) {
	return session.NewEntry(session.TypeMessage, id, parent, t, struct {
		Message *session.Message `json:"message"`
	}{m})
}

// customEntry keeps a record this package does not model as a custom
// entry of type customType ("<format>.<record type>"), its JSON as data,
// so that nothing read is lost.
func customEntry(id, parent string, t time.Time, customType string, data json.RawMessage) (session.Entry, error) {
	return session.NewEntry(session.TypeCustom, id, parent, t, struct {
		CustomType string          `json:"customType"`
		Data       json.RawMessage `json:"data,omitempty"`
	}{customType, data})
}

// derivedID is a stable entry id for a record without one: the same
// source, line and part give the same id, so a re-import builds the same
// tree.
func derivedID(source string, line, part int) string {
	h := sha256.New()
	h.Write([]byte(source))
	var b [16]byte
	for i := range 8 {
		b[i] = byte(line >> (8 * i))
		b[8+i] = byte(part >> (8 * i))
	}
	h.Write(b[:])
	return hex.EncodeToString(h.Sum(nil)[:4])
}
