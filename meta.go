package session

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Session metadata: what a host keeps on a session besides the
// conversation (its project, app version, user, a free map of strings),
// and the lifecycle times listings show.
//
// What is given at creation goes in the header, under one member of its
// own ("agentsession"), which pi and the other seed readers keep and
// ignore. Later changes are appended: custom entries of type CustomMeta
// holding what changed, so that nothing is ever rewritten and every
// store can show the result in a listing without loading entries (a
// store folds each entry it appends, or reads, into an InfoFold). The
// entries are folded in log order, whatever branch they are on:
// metadata belongs to the session, not to a point of the conversation
// (for that, see State).

// CustomMeta is the customType of the entries that change a session's
// metadata (see MetaUpdate).
const CustomMeta = "agentsession.meta"

// headerMetaKey is the header member that holds the metadata given at
// creation.
const headerMetaKey = "agentsession"

// Meta is a session's metadata: what CreateOptions gave, with every
// later MetaUpdate applied.
type Meta struct {
	ProjectID  string            `json:"projectId,omitempty"`
	AppVersion string            `json:"appVersion,omitempty"`
	User       string            `json:"user,omitempty"` // the user (tenant) the session belongs to
	App        string            `json:"app,omitempty"`  // the application, for app-scoped state
	Metadata   map[string]string `json:"metadata,omitempty"`
}

// Clone returns a deep copy of m.
func (m Meta) Clone() Meta {
	m.Metadata = maps.Clone(m.Metadata)
	return m
}

// HeaderMeta returns the metadata a header was created with.
func HeaderMeta(h Header) Meta {
	var m Meta
	if raw, ok := h.Extra.Get(headerMetaKey); ok {
		_ = json.Unmarshal(raw, &m) // what cannot be read is no metadata
	}
	return m
}

// setHeaderMeta stores m in h (nothing when m is empty).
func setHeaderMeta(h *Header, m Meta) error {
	if m.ProjectID == "" && m.AppVersion == "" && m.User == "" && m.App == "" && len(m.Metadata) == 0 {
		return nil
	}
	raw, err := json.Marshal(m)
	if err != nil {
		return err
	}
	h.Extra.Set(headerMetaKey, raw)
	return nil
}

// MetaUpdate is a change of metadata. Nil pointers and empty maps change
// nothing; an empty string clears a field.
type MetaUpdate struct {
	ProjectID  *string
	AppVersion *string
	Set        map[string]string // metadata keys to set
	Delete     []string          // metadata keys to remove
}

func (u MetaUpdate) empty() bool {
	return u.ProjectID == nil && u.AppVersion == nil && len(u.Set) == 0 && len(u.Delete) == 0
}

// metaData is the data of a CustomMeta entry: the members present are
// what changed; null clears.
type metaData struct {
	ProjectID  *string            `json:"projectId,omitempty"`
	AppVersion *string            `json:"appVersion,omitempty"`
	Metadata   map[string]*string `json:"metadata,omitempty"`
}

// UpdateMeta appends a CustomMeta entry with the change. It fails on an
// empty change.
func (s *Session) UpdateMeta(ctx context.Context, u MetaUpdate) error {
	if err := s.makeWhole(ctx); err != nil {
		return err
	}
	if err := s.closedErr(ctx); err != nil {
		return err
	}
	if u.empty() {
		return errors.New("session: UpdateMeta with nothing to change")
	}
	d := metaData{ProjectID: u.ProjectID, AppVersion: u.AppVersion}
	if len(u.Set) > 0 || len(u.Delete) > 0 {
		d.Metadata = make(map[string]*string, len(u.Set)+len(u.Delete))
		for _, k := range u.Delete {
			d.Metadata[k] = nil
		}
		for k, v := range u.Set {
			d.Metadata[k] = &v
		}
	}
	_, err := s.AppendCustom(ctx, CustomMeta, d)
	return err
}

// Meta returns the session's metadata: the header's, with the updates of
// the log applied in order.
func (s *Session) Meta() Meta {
	s.mu.Lock()
	defer s.mu.Unlock()
	f := s.foldLocked()
	return f.meta(s.header)
}

func (s *Session) foldLocked() InfoFold {
	var f InfoFold
	for i := range s.t.nodes {
		f.Add(s.t.nodes[i].e)
	}
	return f
}

// InfoFold is what a listing shows of a session's entries, folded in
// log order: the latest session_info name, the first user message (for
// a title when there is none) and the metadata updates. Stores keep one per session and Add each entry they append or
// read, so that List never loads entries; it marshals to JSON for stores
// that keep it beside the log (a FileStore's index, a database column).
type InfoFold struct {
	Name       string             `json:"name,omitempty"`
	FirstUser  string             `json:"firstUser,omitempty"` // its derived title (TitleFromText)
	ProjectID  *string            `json:"projectId,omitempty"`
	AppVersion *string            `json:"appVersion,omitempty"`
	Metadata   map[string]*string `json:"metadata,omitempty"` // nil: removed
}

// Add folds one entry in.
func (f *InfoFold) Add(e Entry) {
	switch e.kind {
	case kindSessionInfo:
		var si SessionInfoEntry
		if e.payload(&si); strings.TrimSpace(si.Name) != "" {
			f.Name = strings.TrimSpace(si.Name)
		}
	case kindMessage:
		if f.FirstUser == "" && messageRole(e) == RoleUser {
			if m, err := e.Message(); err == nil {
				f.FirstUser = TitleFromText(m.Text())
			}
		}
	case kindCustom:
		raw, ok := customData(e, CustomMeta)
		if !ok {
			return
		}
		var d metaData
		if json.Unmarshal(raw, &d) != nil {
			return
		}
		if d.ProjectID != nil {
			f.ProjectID = d.ProjectID
		}
		if d.AppVersion != nil {
			f.AppVersion = d.AppVersion
		}
		for k, v := range d.Metadata {
			if f.Metadata == nil {
				f.Metadata = map[string]*string{}
			}
			f.Metadata[k] = v
		}
	}
}

// Clone returns a deep copy of f.
func (f InfoFold) Clone() InfoFold {
	f.Metadata = maps.Clone(f.Metadata)
	return f
}

// meta applies the fold to the header's metadata.
func (f *InfoFold) meta(h Header) Meta {
	m := HeaderMeta(h)
	if f.ProjectID != nil {
		m.ProjectID = *f.ProjectID
	}
	if f.AppVersion != nil {
		m.AppVersion = *f.AppVersion
	}
	for k, v := range f.Metadata {
		if v == nil {
			delete(m.Metadata, k)
			continue
		}
		if m.Metadata == nil {
			m.Metadata = map[string]string{}
		}
		m.Metadata[k] = *v
	}
	if len(m.Metadata) == 0 {
		m.Metadata = nil
	}
	return m
}

// Fill sets the fields of info that the header and the fold decide:
// Title (the latest session_info name, else the header's title, else the
// title derived from the first user message, with TitleDerived set),
// and the metadata fields. Stores call it when they list.
func (f *InfoFold) Fill(info *SessionInfo, h Header) {
	info.Title, info.TitleDerived = f.Name, false
	if info.Title == "" {
		info.Title = h.Title
	}
	if info.Title == "" && f.FirstUser != "" {
		info.Title, info.TitleDerived = f.FirstUser, true
	}
	m := f.meta(h)
	info.ProjectID, info.AppVersion, info.User, info.App, info.Metadata = m.ProjectID, m.AppVersion, m.User, m.App, m.Metadata
}

// customData returns the data of a custom entry of customType typ.
func customData(e Entry, typ string) (json.RawMessage, bool) {
	if e.kind != kindCustom {
		return nil, false
	}
	v, ok := e.field("customType")
	if !ok || !bytes.Equal(bytes.TrimSpace(v), []byte(`"`+typ+`"`)) {
		return nil, false
	}
	d, ok := e.field("data")
	return d, ok
}

// messageRole returns the role of a message entry, read from the
// message's own member without decoding the rest ("" when it has none).
func messageRole(e Entry) string {
	if m := e.readMessage(); m != nil {
		return m.Role // decoded when read: its bytes are not written out again
	}
	m, ok := e.field("message")
	if !ok {
		return ""
	}
	v, ok := topMember(m, "role")
	if !ok {
		return ""
	}
	var role string
	if json.Unmarshal(v, &role) != nil {
		return ""
	}
	return role
}

// TitleMaxRunes bounds a title derived from a message.
const TitleMaxRunes = 60

// TitleFromText derives a title from the text of a message, the cheap
// default a session gets without a Titler: its first line that has
// words, with runs of white space made one space, cut at a word to at
// most TitleMaxRunes runes (and "…" added when cut).
func TitleFromText(text string) string {
	var line string
	for l := range strings.SplitSeq(text, "\n") {
		if line = titleWords(l); line != "" {
			break
		}
	}
	if utf8.RuneCountInString(line) <= TitleMaxRunes {
		return line
	}
	runes := []rune(line)[:TitleMaxRunes]
	cut := len(runes)
	for i := len(runes) - 1; i > TitleMaxRunes/2; i-- {
		if unicode.IsSpace(runes[i]) {
			cut = i
			break
		}
	}
	return strings.TrimRightFunc(string(runes[:cut]), unicode.IsSpace) + "…"
}

// titleWords returns the words of line joined by single spaces, but no
// more of them than a title needs: once past TitleMaxRunes runes it
// stops (a word is cut after TitleMaxRunes+1), so a long line costs no
// more than a short one.
func titleWords(line string) string {
	var b strings.Builder
	n := 0 // runes written, an invalid byte counting as one
	for w := range strings.FieldsSeq(line) {
		if n > TitleMaxRunes {
			break
		}
		if n > 0 {
			b.WriteByte(' ')
			n++
		}
		w = runePrefix(w, TitleMaxRunes+1)
		b.WriteString(w)
		n += utf8.RuneCountInString(w)
	}
	return b.String()
}

// runePrefix returns the first k runes of s (an invalid byte counting as
// one), or s if it has no more.
func runePrefix(s string, k int) string {
	if len(s) <= k {
		return s
	}
	i := 0
	for ; k > 0 && i < len(s); k-- {
		_, size := utf8.DecodeRuneInString(s[i:])
		i += size
	}
	return s[:i]
}

// Titler makes a session's title from its first user message, for
// instance by asking a model. TitleFromText is the default.
type Titler func(ctx context.Context, firstUserMessage string) (string, error)

// AutoTitle gives an untitled session a title made by titler (nil:
// TitleFromText) from its first user message, appended as a session_info
// entry, and returns the title. A session that has a title (from
// SetTitle, a session_info entry, or the header) keeps it and its title
// is returned; so does one without a user message yet, with "". A host
// calls it after the first turn, in a goroutine of its own when titler
// asks a model.
func (s *Session) AutoTitle(ctx context.Context, titler Titler) (string, error) {
	if err := s.makeWhole(ctx); err != nil {
		return "", err
	}
	if err := s.lock(ctx); err != nil {
		return "", err
	}
	title := s.titleLocked()
	var first string
	if title == "" {
		for _, i := range s.t.pathTo(s.leaf) {
			e := s.t.nodes[i].e
			if e.kind == kindMessage && messageRole(e) == RoleUser {
				if m, err := e.Message(); err == nil {
					first = m.Text()
				}
				break
			}
		}
	}
	s.mu.Unlock()
	if title != "" || strings.TrimSpace(first) == "" {
		return title, nil
	}
	if titler == nil {
		title = TitleFromText(first)
	} else {
		t, err := titler(ctx, first)
		if err != nil {
			return "", fmt.Errorf("session: titler: %w", err)
		}
		title = TitleFromText(t)
	}
	if title == "" {
		return "", nil
	}
	return title, s.SetTitle(ctx, title)
}
