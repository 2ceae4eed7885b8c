package encrypt

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"

	session "github.com/agentsession/session"
)

// SealedType is the customType of a sealed entry, and the header member
// that holds the header's sealed members.
const SealedType = "agentsession.sealed"

// sealedMember is the entry member that holds the sealed entry.
const sealedMember = "sealed"

// titlePrefix starts a sealed title (the header's, a session_info
// entry's name).
const titlePrefix = "sealed:1:"

// chunkChars bounds each string of a sealed box, so that no store's
// limit on a string's length (FileStoreOptions.MaxStringChars) cuts one.
const chunkChars = 64 << 10

// maxBoxChars bounds the base64 of a box that Open reads (the largest
// line a store accepts, DefaultMaxLineBytes).
const maxBoxChars = session.DefaultMaxLineBytes

// OpenError is sealed data that cannot be opened: an unknown key, a
// wrong key, data changed since it was sealed, or a sealed entry that
// is malformed. It is corrupt data to the session package:
// errors.Is(err, session.ErrCorrupt) holds, and errors.Is with ErrAuth
// or ErrUnknownKey tells why.
type OpenError struct {
	Session string
	Entry   string // "" for the header
	Key     string // the key id it names, when it names one
	Err     error
}

func (e *OpenError) Error() string {
	what := "header"
	if e.Entry != "" {
		what = "entry " + e.Entry
	}
	key := ""
	if e.Key != "" {
		key = " (key " + e.Key + ")"
	}
	return fmt.Sprintf("encrypt: session %s: %s%s: %v", e.Session, what, key, e.Err)
}

// Unwrap returns session.ErrCorrupt and the cause.
func (e *OpenError) Unwrap() []error { return []error{session.ErrCorrupt, e.Err} }

// box is the sealed form of a value, as it stands in JSON.
type box struct {
	V   int      `json:"v"`
	Key string   `json:"key"`
	Box []string `json:"box"`
}

// sealBox seals plaintext into a box.
func (k *Keyring) sealBox(kind, sess string, plaintext []byte, env ...string) (box, error) {
	s, err := k.sealer(k.current, sess)
	if err != nil {
		return box{}, err
	}
	enc := base64.StdEncoding.EncodeToString(s.seal(plaintext, additionalData(kind, s.key, sess, env...)))
	b := box{V: 1, Key: s.key}
	for len(enc) > chunkChars {
		b.Box = append(b.Box, enc[:chunkChars])
		enc = enc[chunkChars:]
	}
	b.Box = append(b.Box, enc)
	return b, nil
}

// openBox opens the box in raw.
func (k *Keyring) openBox(raw []byte, kind, sess string, env ...string) (plaintext []byte, key string, err error) {
	var b box
	if err := json.Unmarshal(raw, &b); err != nil {
		return nil, "", fmt.Errorf("malformed box: %w", err)
	}
	if b.V != 1 {
		return nil, b.Key, fmt.Errorf("box version %d, this package reads 1", b.V)
	}
	n := 0
	for _, c := range b.Box {
		n += len(c)
	}
	if n > maxBoxChars {
		return nil, b.Key, fmt.Errorf("a box of %d characters", n)
	}
	ct, err := base64.StdEncoding.DecodeString(strings.Join(b.Box, ""))
	if err != nil {
		return nil, b.Key, fmt.Errorf("malformed box: %w", err)
	}
	s, err := k.sealer(b.Key, sess)
	if err != nil {
		return nil, b.Key, err
	}
	pt, err := s.open(ct, additionalData(kind, b.Key, sess, env...))
	return pt, b.Key, err
}

// sealTitle seals a title into a string a store keeps as a title.
func (k *Keyring) sealTitle(sess, title string) (string, error) {
	return k.sealValue(sess, "title", []byte(title))
}

// openTitle opens a sealed title.
func (k *Keyring) openTitle(sess, t string) (title, key string, err error) {
	pt, key, err := k.openValue(sess, "title", t)
	return string(pt), key, err
}

// isSealedTitle tells a sealed value (a title, a state value) from one
// written in clear.
func isSealedTitle(t string) bool { return strings.HasPrefix(t, titlePrefix) }

// sealValue seals a short value of the kind into a string:
// titlePrefix, the key id, ':' and the base64 of the sealed bytes.
func (k *Keyring) sealValue(sess, kind string, v []byte, more ...string) (string, error) {
	s, err := k.sealer(k.current, sess)
	if err != nil {
		return "", err
	}
	ct := s.seal(v, additionalData(kind, s.key, sess, more...))
	return titlePrefix + s.key + ":" + base64.RawURLEncoding.EncodeToString(ct), nil
}

// openValue opens what sealValue sealed.
func (k *Keyring) openValue(sess, kind, t string, more ...string) (v []byte, key string, err error) {
	key, enc, ok := strings.Cut(strings.TrimPrefix(t, titlePrefix), ":")
	if !ok || !isSealedTitle(t) {
		return nil, "", fmt.Errorf("malformed sealed %s", kind)
	}
	ct, err := base64.RawURLEncoding.DecodeString(enc)
	if err != nil {
		return nil, key, fmt.Errorf("malformed sealed %s: %w", kind, err)
	}
	s, err := k.sealer(key, sess)
	if err != nil {
		return nil, key, err
	}
	v, err = s.open(ct, additionalData(kind, key, sess, more...))
	return v, key, err
}

// sealEntry returns the sealed form of entry e of session sess: a
// custom entry of customType SealedType (a session_info entry stays one,
// with its name sealed, for listings) with e's envelope, whose member
// "sealed" holds e's bytes. The metadata entries (customType
// session.CustomMeta) stay in clear.
func (k *Keyring) sealEntry(sess string, e session.Entry) (session.Entry, error) {
	if isMeta(e) {
		return e, nil
	}
	b, err := k.sealBox("entry", sess, e.JSON(), e.ID(), e.ParentID(), e.Timestamp())
	if err != nil {
		return session.Entry{}, err
	}
	typ := "custom"
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	if e.Type() == session.TypeSessionInfo {
		typ = session.TypeSessionInfo
		var si session.SessionInfoEntry
		if e.Decode(&si) == nil && strings.TrimSpace(si.Name) != "" {
			name, err := k.sealTitle(sess, si.Name)
			if err != nil {
				return session.Entry{}, err
			}
			buf.WriteString(`,"name":`)
			_ = enc.Encode(name)
		}
	} else {
		buf.WriteString(`,"customType":"` + SealedType + `"`)
	}
	buf.WriteString(`,"` + sealedMember + `":`)
	_ = enc.Encode(b)
	parent := []byte("null")
	if e.ParentID() != "" {
		parent, _ = json.Marshal(e.ParentID())
	}
	id, _ := json.Marshal(e.ID())
	ts, _ := json.Marshal(e.Timestamp())
	line := fmt.Sprintf(`{"type":"%s","id":%s,"parentId":%s,"timestamp":%s%s}`, typ, id, parent, ts, bytes.ReplaceAll(buf.Bytes(), []byte("\n"), nil))
	return session.ParseEntry([]byte(line))
}

// isMeta tells the entries that change a session's metadata, which stay
// in clear for listings to filter on.
func isMeta(e session.Entry) bool {
	if e.Type() != "custom" {
		return false
	}
	ct, ok := e.Field("customType")
	return ok && bytes.Equal(bytes.TrimSpace(ct), []byte(`"`+session.CustomMeta+`"`))
}

// openEntry returns the entry that the stored entry e of session sess
// seals; e itself when it is not sealed (metadata, or an entry written
// before the session was encrypted).
func (k *Keyring) openEntry(sess string, e session.Entry) (session.Entry, error) {
	raw, ok := e.Field(sealedMember)
	if !ok {
		return e, nil
	}
	fail := func(key string, err error) (session.Entry, error) {
		return session.Entry{}, &OpenError{Session: sess, Entry: e.ID(), Key: key, Err: err}
	}
	pt, key, err := k.openBox(raw, "entry", sess, e.ID(), e.ParentID(), e.Timestamp())
	if err != nil {
		return fail(key, err)
	}
	x, err := session.ParseEntry(pt)
	if err != nil {
		return fail(key, err)
	}
	if x.ID() != e.ID() || x.ParentID() != e.ParentID() || x.Timestamp() != e.Timestamp() {
		return fail(key, fmt.Errorf("the sealed entry is %s (parent %q, at %q), stored as its envelope says otherwise", x.ID(), x.ParentID(), x.Timestamp()))
	}
	return x, nil
}

// sealedKey returns the key id an entry is sealed with, "" for an entry
// in clear.
func sealedKey(e session.Entry) string {
	raw, ok := e.Field(sealedMember)
	if !ok {
		return ""
	}
	return boxKey(raw)
}

// boxKey returns the key id a box names.
func boxKey(raw []byte) string {
	var b box
	_ = json.Unmarshal(raw, &b)
	return b.Key
}

// titleKey returns the key id a sealed title names, "" for a title in
// clear.
func titleKey(t string) string {
	if !isSealedTitle(t) {
		return ""
	}
	key, _, _ := strings.Cut(strings.TrimPrefix(t, titlePrefix), ":")
	return key
}
