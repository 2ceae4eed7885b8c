package workspace

import (
	"bytes"
	"strings"

	"github.com/go-git/go-git/v5/plumbing/format/gitignore"
)

// Ignore rules, with git's semantics, matched by go-git's gitignore
// package: the patterns of .git/info/exclude (lowest priority), of each
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
// with # skipped (\# and \! escape those characters).
func parseIgnore(data []byte, domain []string) []gitignore.Pattern {
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
	var ps []gitignore.Pattern
	for line := range strings.SplitSeq(string(data), "\n") {
		line = strings.TrimSuffix(line, "\r")
		if strings.HasPrefix(line, "#") || strings.TrimSpace(line) == "" {
			continue
		}
		ps = append(ps, gitignore.ParsePattern(line, domain))
	}
	return ps
}
