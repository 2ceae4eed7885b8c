// Package redact finds secrets and personal paths in text and JSON and
// replaces them before a session leaves the machine (export --redact) or
// reaches disk at all (session.Redact, the Store middleware).
//
// It imports nothing of this module, so that the session package can use
// it.
//
// CONTRACT (skeleton, filled in by the issue-17 work): the names below are
// what export, the CLI and session.Redact build on; keep them.
package redact

import (
	"encoding/json"
	"strings"
)

// Rule is one kind of secret: a name for reports and a finder.
type Rule struct {
	Name string
}

// Options configures a Redactor. The zero value (or nil) gives the
// default rules and the current user's home directory.
type Options struct {
	// Rules replaces the default rules (DefaultRules) when non-nil.
	Rules []Rule
	// Home lists home directories whose absolute paths are replaced by
	// "~"; nil means the current user's.
	Home []string
	// Custom, when set, runs after the rules on every string: the host's
	// own redactor. It returns the new string and how many it replaced.
	Custom func(s string) (string, int)
}

// Report counts what was redacted, per rule name. It never holds a
// secret.
type Report struct {
	Counts map[string]int
}

// Add adds o's counts to r.
func (r *Report) Add(o Report) {
	for k, n := range o.Counts {
		if r.Counts == nil {
			r.Counts = map[string]int{}
		}
		r.Counts[k] += n
	}
}

// Total is the number of redactions of every rule.
func (r Report) Total() int {
	n := 0
	for _, c := range r.Counts {
		n += c
	}
	return n
}

// Redactor replaces secrets. It is safe for concurrent use.
type Redactor struct {
	opts Options
}

// New returns a Redactor.
func New(opts *Options) *Redactor {
	r := &Redactor{}
	if opts != nil {
		r.opts = *opts
	}
	return r
}

// DefaultRules returns the built-in rules.
func DefaultRules() []Rule { return nil }

// String returns s with every secret replaced, and what was replaced.
func (r *Redactor) String(s string) (string, Report) {
	var rep Report
	if r.opts.Custom != nil {
		out, n := r.opts.Custom(s)
		if n > 0 {
			rep.Counts = map[string]int{"custom": n}
		}
		s = out
	}
	return s, rep
}

// JSON returns the JSON value v with every string in it (object keys
// excepted) passed through String; the result is valid JSON. v that is
// not valid JSON is an error.
func (r *Redactor) JSON(v []byte) ([]byte, Report, error) {
	var x any
	if err := json.Unmarshal(v, &x); err != nil {
		return nil, Report{}, err
	}
	var rep Report
	x = r.walk(x, &rep)
	out, err := json.Marshal(x)
	return out, rep, err
}

func (r *Redactor) walk(x any, rep *Report) any {
	switch t := x.(type) {
	case string:
		s, n := r.String(t)
		rep.Add(n)
		return s
	case []any:
		for i := range t {
			t[i] = r.walk(t[i], rep)
		}
	case map[string]any:
		for k, v := range t {
			t[k] = r.walk(v, rep)
		}
	}
	return x
}

var _ = strings.Contains
