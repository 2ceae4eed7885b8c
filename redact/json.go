package redact

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"
	"unsafe"

	"github.com/agentsession/session/internal/jsonx"
)

// ErrInvalidJSON is wrapped by the error JSON returns for input that is
// not one valid JSON value.
var ErrInvalidJSON = errors.New("redact: invalid JSON")

// JSON returns the JSON value v with every string in it (object keys
// excepted) passed through String; the result is valid JSON. v that is
// not valid JSON is an error wrapping ErrInvalidJSON.
//
// The strings are rewritten in place: the bytes of v outside the strings
// that change are kept exactly (member order, numbers, whitespace,
// escapes), and a changed string is written escaped as JSON.stringify
// writes it. When nothing changes the result is v itself.
//
// A member whose key names a secret ("password", "apiKey", "GITHUB_TOKEN",
// as the assignment rules judge keys) has its whole string value
// replaced, unless the value is empty or a placeholder: {"password":
// "hunter2"} becomes {"password": "[REDACTED:password]"}. So has the
// "value" of an object that names it in another member (see NamedValue):
// {"name": "DB_PASSWORD", "value": "hunter2"}. A string that is itself
// JSON (an object or an array: a secret manager's SecretString, a logged
// request body) is redacted as JSON, to a depth of four.
func (r *Redactor) JSON(v []byte) ([]byte, Report, error) {
	if _, err := jsonx.Trim(v); err != nil {
		return nil, Report{}, fmt.Errorf("%w: %w", ErrInvalidJSON, err)
	}
	var rep Report
	return r.json(v, &rep, 0), rep, nil
}

// jsonEdit replaces v[start:end] by the JSON string of s.
type jsonEdit struct {
	start, end int
	s          string
}

// json is JSON of the valid v at a depth of JSON in strings.
func (r *Redactor) json(v []byte, rep *Report, depth int) []byte {
	var edits []jsonEdit
	var objs objects
	gap := 0 // where the structure not yet followed starts
	keyStart, keyEnd, valueAt := 0, 0, -1
	for i := 0; ; {
		k := bytes.IndexByte(v[i:], '"')
		if k < 0 {
			break
		}
		start := i + k
		objs.follow(r, v[gap:start], &edits, rep)
		end := stringEnd(v, start)
		i, gap = end, end
		if n := jsonx.SkipSpace(v, end); n < len(v) && v[n] == ':' {
			keyStart, keyEnd, valueAt = start, end, jsonx.SkipSpace(v, n+1)
			continue
		}
		var key []byte
		if start == valueAt {
			key = v[keyStart:keyEnd]
		}
		s, changed := r.jsonString(v[start:end], key, rep, depth)
		if changed {
			edits = append(edits, jsonEdit{start, end, s})
		}
		if key != nil {
			objs.member(key, v[start:end], start, changed, len(edits)-1)
		}
	}
	objs.follow(r, v[gap:], &edits, rep)
	if len(edits) == 0 {
		return v
	}
	slices.SortFunc(edits, func(a, b jsonEdit) int { return a.start - b.start })
	out := make([]byte, 0, len(v)+64)
	last := 0
	for _, e := range edits {
		if e.start < last {
			continue // a pair's replacement and the rules' edit of one value
		}
		out = append(out, v[last:e.start]...)
		out = jsonx.AppendString(out, e.s)
		last = e.end
	}
	return append(out, v[last:]...)
}

// objects follows the objects a JSON value is in, for the members that
// only say together that a value is a secret: {"name": "DB_PASSWORD",
// "value": "..."}.
type objects []pairObject

// pairObject is what an object's members say of its value.
type pairObject struct {
	name          string // the "name" (or "key", "label") member's
	hasName       bool
	value         []byte // the "value" member's string token
	valueAt, edit int    // where it starts, and its edit (-1: none)
	secure        bool   // a "Type" that says it is one: SecureString, CONCEALED
}

// follow reads the structure in b (the bytes between two strings):
// each '{' opens an object, each '}' closes one, whose value is then
// judged with its name.
func (o *objects) follow(r *Redactor, b []byte, edits *[]jsonEdit, rep *Report) {
	for {
		k := bytes.IndexAny(b, "{}")
		if k < 0 {
			return
		}
		if b[k] == '{' {
			*o = append(*o, pairObject{valueAt: -1, edit: -1})
		} else if n := len(*o); n > 0 {
			p := (*o)[n-1]
			*o = (*o)[:n-1]
			if p.valueAt >= 0 && (p.hasName || p.secure) {
				value, _ := jsonx.Unquote(p.value)
				if c := r.pairRule(p.name, value, p.secure); c != nil {
					rep.count(c.Name, 1)
					e := jsonEdit{p.valueAt, p.valueAt + len(p.value), c.repl}
					if p.edit >= 0 {
						(*edits)[p.edit] = e
					} else {
						*edits = append(*edits, e)
					}
				}
			}
		}
		b = b[k+1:]
	}
}

// member notes the string member key (a token) of the innermost object.
func (o *objects) member(key, tok []byte, start int, changed bool, edit int) {
	n := len(*o)
	if n == 0 {
		return
	}
	p := &(*o)[n-1]
	k := view(key[1 : len(key)-1])
	switch {
	case nameKeys[k]:
		p.name, _ = jsonx.Unquote(tok)
		p.hasName = true
	case k == "value" || k == "Value":
		p.value, p.valueAt, p.edit = tok, start, -1
		if changed {
			p.edit = edit
		}
	case k == "type" || k == "Type":
		p.secure = p.secure || string(tok) == `"SecureString"` || string(tok) == `"CONCEALED"`
	}
}

// stringEnd returns the index past the closing quote of the valid string
// token at v[start].
func stringEnd(v []byte, start int) int {
	j := start + 1
	for {
		q := j + bytes.IndexByte(v[j:], '"')
		n := 0
		for p := q - 1; p > start && v[p] == '\\'; p-- {
			n++
		}
		if n%2 == 0 {
			return q + 1
		}
		j = q + 1
	}
}

// jsonString redacts the string token tok, the value of the member key
// (a token too) or of no member when key is nil. It decodes the string
// only when a rule may apply.
func (r *Redactor) jsonString(tok, key []byte, rep *Report, depth int) (string, bool) {
	body := tok[1 : len(tok)-1]
	esc := bytes.IndexByte(body, '\\') >= 0
	var s string
	decoded := false
	decode := func() {
		if !decoded {
			s, _ = jsonx.Unquote(tok) // valid: checked by JSON
			decoded = true
		}
	}
	if esc && (r.filter.hidden || bytes.Contains(body, []byte(`\u`)) || bytes.Contains(body, []byte(`\/`))) {
		decode()
	}
	var mask ruleMask
	if decoded {
		mask = r.filter.scan(s)
	} else {
		mask = r.filter.scan(view(body))
	}
	class := r.keyClass(key)
	if mask.empty() && class == 0 && r.opts.Custom == nil {
		return "", false
	}
	if !decoded {
		if esc || !utf8.Valid(body) {
			decode()
		} else {
			s = string(body)
		}
	}
	// The keywords found in the raw string are those of the decoded one,
	// or more (an escape's letters): the first pass runs those rules.
	var sub Report
	out := r.stringMasked(s, &mask, &sub, depth)
	rep.Add(sub)
	if out == s && class != 0 {
		if c := r.keyedValue(class, s); c != nil {
			rep.count(c.Name, 1)
			return c.repl, true
		}
	}
	return out, out != s
}

// view returns b as a string without copying, for reading only while b
// is not modified.
func view(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(&b[0], len(b))
}

// keyClass returns the kinds of secret the key token names, among those
// of the rules in use.
func (r *Redactor) keyClass(key []byte) keyClass {
	if len(key) < 5 || len(r.keyed) == 0 {
		return 0
	}
	if bytes.IndexByte(key, '\\') >= 0 {
		k, _ := jsonx.Unquote(key)
		return r.nameClass(k)
	}
	return r.nameClass(view(key[1 : len(key)-1]))
}

// nameClass is keyClass of a key already decoded.
func (r *Redactor) nameClass(k string) keyClass {
	if len(k) > 64 || len(r.keyed) == 0 {
		return 0
	}
	return classify(k)
}

// keyedValue returns the first assignment rule that takes s, the value
// of a member whose key is of class, for a secret; nil if none does.
func (r *Redactor) keyedValue(class keyClass, s string) *compiled {
	if !plausibleValue(s, true, false, "") || len(s) > maxValue {
		return nil
	}
	for _, i := range r.keyed {
		c := &r.rules[i]
		if c.assign&class != 0 && (c.valueOK == nil || c.valueOK(s)) {
			return c
		}
	}
	return nil
}

// nameKeys are the members that name what an object's "value" holds.
var nameKeys = map[string]bool{"name": true, "Name": true, "key": true, "Key": true, "label": true, "Label": true}

// NamedValue returns value, the "value" member of an object whose
// "name" (or "key", "label") member is name, redacted as JSON redacts it:
// by the rules, and whole when name names a secret ("DB_PASSWORD",
// "/prod/db/password", "API_TOKEN"; of a cookie, "sessionid", "csrftoken")
// or when secure says the object holds one whatever its name (an AWS SSM
// parameter of Type SecureString, a 1Password field of type CONCEALED),
// unless the value is empty or a placeholder. Callers that walk JSON
// themselves (session.Redact) pass it each such object's value.
func (r *Redactor) NamedValue(name, value string, secure bool) (string, Report) {
	out, rep := r.String(value)
	if c := r.pairRule(name, value, secure); c != nil {
		rep = Report{}
		rep.count(c.Name, 1)
		return c.repl, rep
	}
	return out, rep
}

// pairRule returns the rule that takes value, the "value" of an object
// named name, for a secret; nil if none does.
func (r *Redactor) pairRule(name, value string, secure bool) *compiled {
	if len(r.keyed) == 0 || !plausibleValue(value, true, false, "") || len(value) > maxValue {
		return nil
	}
	class := r.nameClass(name)
	switch {
	case class != 0:
		return r.keyedValue(class, value)
	case secure:
		return r.keyedValue(keySecret, value)
	case sessionName(name):
		return r.rule("session-cookie")
	}
	return nil
}

// rule returns the rule of that name in use, nil if there is none.
func (r *Redactor) rule(name string) *compiled {
	for i := range r.rules {
		if r.rules[i].Name == name {
			return &r.rules[i]
		}
	}
	return nil
}

// Member returns value, the string value of a JSON object member named
// key ("" for a string that is no member's), redacted as JSON redacts
// it: by the rules, and whole when key names a secret ("password",
// "apiKey", "GITHUB_TOKEN") and the value is not a placeholder. Callers
// that walk JSON themselves (session.Redact, which leaves some members
// alone) redact each string with it.
func (r *Redactor) Member(key, value string) (string, Report) {
	out, rep := r.String(value)
	if out != value || key == "" {
		return out, rep
	}
	if class := r.nameClass(key); class != 0 {
		if c := r.keyedValue(class, value); c != nil {
			rep.count(c.Name, 1)
			return c.repl, rep
		}
	}
	return out, rep
}

// maxNestedJSON bounds the texts that are redacted as JSON too.
const maxNestedJSON = 8 << 20

// looksJSON reports a text that may be a JSON object or array: '{' or
// '[' first and '}' or ']' last, past blanks.
func looksJSON(s string) bool {
	i, j := 0, len(s)
	for i < j && isBlank(s[i]) {
		i++
	}
	for j > i && isBlank(s[j-1]) {
		j--
	}
	return j-i >= 2 && (s[i] == '{' && s[j-1] == '}' || s[i] == '[' && s[j-1] == ']')
}

// jsonText returns s, a text that looks like JSON, redacted as JSON
// (see JSON) when it is valid JSON; s itself otherwise, or when nothing
// changed.
func (r *Redactor) jsonText(s string, rep *Report, depth int) string {
	v := unsafe.Slice(unsafe.StringData(s), len(s)) // read only
	if !jsonx.Valid(v) {
		return s
	}
	out := r.json(v, rep, depth+1)
	if len(out) == len(v) && (len(v) == 0 || &out[0] == &v[0]) {
		return s
	}
	return string(out)
}

// sessionName reports the names of cookies (and fields) that hold a
// session or a credential: "sessionid", "JSESSIONID", "connect.sid",
// "csrftoken", "_gh_sess", "remember_token".
func sessionName(name string) bool {
	if len(name) > 64 {
		return false
	}
	found := false
	splitWords(name, func(a, b int) {
		switch w := foldString(name[a:b]); {
		case strings.HasPrefix(w, "sess"), strings.HasSuffix(w, "sessid"), strings.HasSuffix(w, "sessionid"),
			w == "sid", w == "jwt", w == "auth", w == "xsrf", w == "csrf", w == "csrftoken", w == "xsrftoken",
			w == "remember", w == "saml", w == "oidc", w == "oauth":
			found = true
		}
	})
	return found
}
