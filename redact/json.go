package redact

import (
	"bytes"
	"errors"
	"fmt"
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
// "hunter2"} becomes {"password": "[REDACTED:password]"}.
func (r *Redactor) JSON(v []byte) ([]byte, Report, error) {
	if _, err := jsonx.Trim(v); err != nil {
		return nil, Report{}, fmt.Errorf("%w: %w", ErrInvalidJSON, err)
	}
	var rep Report
	var out []byte
	last := 0
	keyStart, keyEnd, valueAt := 0, 0, -1
	for i := 0; ; {
		k := bytes.IndexByte(v[i:], '"')
		if k < 0 {
			break
		}
		start := i + k
		end := stringEnd(v, start)
		i = end
		if n := jsonx.SkipSpace(v, end); n < len(v) && v[n] == ':' {
			keyStart, keyEnd, valueAt = start, end, jsonx.SkipSpace(v, n+1)
			continue
		}
		var key []byte
		if start == valueAt {
			key = v[keyStart:keyEnd]
		}
		s, changed := r.jsonString(v[start:end], key, &rep)
		if !changed {
			continue
		}
		if out == nil {
			out = make([]byte, 0, len(v)+64)
		}
		out = append(out, v[last:start]...)
		out = jsonx.AppendString(out, s)
		last = end
	}
	if out == nil {
		return v, rep, nil
	}
	return append(out, v[last:]...), rep, nil
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
func (r *Redactor) jsonString(tok, key []byte, rep *Report) (string, bool) {
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
	out := r.stringMasked(s, &mask, &sub, 0)
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
