package workspace

import (
	"bytes"
	"path/filepath"
	"slices"
	"strings"

	"github.com/go-git/go-git/v5/plumbing/format/gitignore"
)

// Ignore rules, with git's semantics, matched with go-git's gitignore
// package (its Matcher, and its patterns for names; see pattern for what
// is matched here as git does and go-git does not): the patterns of .git/info/exclude (lowest priority), of each
// .gitignore from the root down to a path's directory (a nested file's
// patterns are relative to its directory: ParsePattern's domain), then
// Options.Ignore (highest, relative to the root). The last pattern that
// matches decides, a negation (!) re-including. As in git, a directory
// that is ignored is not entered, so nothing under it can be re-included,
// and .git (in any case, at any depth) is never recorded.

// rules are the patterns in force in one directory, in increasing
// priority.
type rules struct {
	pats []gitignore.Pattern
	m    gitignore.Matcher
}

func newRules(pats []gitignore.Pattern) *rules {
	if len(pats) == 0 {
		return nil
	}
	return &rules{pats: pats, m: gitignore.NewMatcher(pats)}
}

// ignored reports whether path (its segments) is ignored.
func (r *rules) ignored(path []string, isDir bool) bool {
	return r != nil && r.m.Match(path, isDir)
}

// parseIgnore parses the lines of an ignore file whose directory is
// domain, as git reads them: a UTF-8 byte order mark at the start and a
// carriage return at a line's end dropped, blank lines and lines starting
// with # skipped (\# and \! escape those characters), trailing spaces
// dropped unless escaped with a backslash.
func parseIgnore(data []byte, domain []string) []gitignore.Pattern {
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
	var ps []gitignore.Pattern
	for line := range strings.SplitSeq(string(data), "\n") {
		line = strings.TrimSuffix(line, "\r")
		if strings.HasPrefix(line, "#") {
			continue
		}
		if p := parsePattern(trimTrailingSpaces(line), domain); p != nil {
			ps = append(ps, p)
		}
	}
	return ps
}

// trimTrailingSpaces drops the spaces at the end of a line that no
// backslash escapes (git's trim_trailing_spaces).
func trimTrailingSpaces(s string) string {
	end := len(s)
	for end > 0 && s[end-1] == ' ' {
		k := 0
		for i := end - 2; i >= 0 && s[i] == '\\'; i-- {
			k++
		}
		if k%2 == 1 {
			break // "\ ": an escaped space, kept
		}
		end--
	}
	return s[:end]
}

// pattern is one gitignore pattern matched as git matches it. go-git's
// patterns match a name against every segment of a path and a pattern
// with a slash against a prefix of it, so that a negation naming a
// directory would re-include what other patterns exclude inside it, and
// their ** does not backtrack; here a pattern without a slash is matched
// (by go-git) against the last segment only, and one with a slash against
// the whole path relative to its directory, each segment with
// filepath.Match, ** standing for any number of segments (at least one
// at the end: "foo/**" is what is inside foo, not foo).
type pattern struct {
	domain  []string
	name    gitignore.Pattern // a pattern without a slash: go-git's, no domain
	segs    []string          // a pattern with a slash: its segments
	neg     bool
	dirOnly bool
}

// parsePattern parses one line (its trailing spaces trimmed); nil for a
// blank one.
func parsePattern(line string, domain []string) gitignore.Pattern {
	body := line
	p := &pattern{domain: slices.Clone(domain)}
	if strings.HasPrefix(body, "!") {
		p.neg, body = true, body[1:]
	}
	if strings.HasSuffix(body, "/") {
		p.dirOnly, body = true, body[:len(body)-1]
	}
	if body == "" {
		return nil
	}
	body = bangClasses(body)
	if !strings.Contains(body, "/") {
		prefix, suffix := "", ""
		if p.neg {
			prefix = "!"
		}
		if p.dirOnly {
			suffix = "/"
		}
		p.name = gitignore.ParsePattern(prefix+body+suffix, nil)
		return p
	}
	p.segs = strings.Split(strings.TrimPrefix(body, "/"), "/")
	return p
}

// bangClasses spells git's "[!...]" classes as filepath.Match's "[^...]".
func bangClasses(s string) string {
	if !strings.Contains(s, "[!") {
		return s
	}
	b := []byte(s)
	for i := 0; i < len(b); i++ {
		switch {
		case b[i] == '\\':
			i++
		case b[i] == '[' && i+1 < len(b) && b[i+1] == '!':
			b[i+1] = '^'
		}
	}
	return string(b)
}

// Match implements gitignore.Pattern.
func (p *pattern) Match(path []string, isDir bool) gitignore.MatchResult {
	if len(path) <= len(p.domain) {
		return gitignore.NoMatch
	}
	for i, d := range p.domain {
		if path[i] != d {
			return gitignore.NoMatch
		}
	}
	if p.name != nil {
		return p.name.Match(path[len(path)-1:], isDir)
	}
	if p.dirOnly && !isDir || !matchSegs(p.segs, path[len(p.domain):]) {
		return gitignore.NoMatch
	}
	if p.neg {
		return gitignore.Include
	}
	return gitignore.Exclude
}

// matchSegs matches a path's segments against a pattern's, "**" standing
// for zero or more segments, or one or more as the last.
func matchSegs(pat, path []string) bool {
	for len(pat) > 0 {
		if pat[0] == "**" {
			if len(pat) == 1 {
				return len(path) > 0
			}
			for k := 0; k <= len(path); k++ {
				if matchSegs(pat[1:], path[k:]) {
					return true
				}
			}
			return false
		}
		if len(path) == 0 {
			return false
		}
		if ok, err := filepath.Match(pat[0], path[0]); err != nil || !ok {
			return false
		}
		pat, path = pat[1:], path[1:]
	}
	return len(path) == 0
}
