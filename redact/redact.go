package redact

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
)

// Rule is one kind of secret: a name for reports and a finder.
//
// A rule of the host's own is a Pattern (and, optionally, Keywords and
// Valid); the built-in rules (DefaultRules) have finders of their own and
// may be filtered or reordered but not changed (the Pattern of one of
// gitleaks' rules is its expression, to read: its finder applies the
// rule's entropy threshold, secret group and allowlists too). Rules
// earlier in a list win where two matches overlap.
type Rule struct {
	// Name identifies the rule in a Report and in the replacement text
	// "[REDACTED:<Name>]".
	Name string
	// Keywords, when not empty, make the rule run only on text holding at
	// least one of them (compared ignoring ASCII case): a cheap filter
	// that spares running Pattern on text that cannot match. Every match
	// must contain one of them.
	Keywords []string
	// Pattern finds the secrets. When it has a group named "secret",
	// only that group is replaced (keys and prefixes stay readable).
	Pattern *regexp.Regexp
	// Valid, when set, is asked about every match (the part that would be
	// replaced) and rejects look-alikes by returning false.
	Valid func(match string) bool
	// Replace, when not empty, is the replacement text instead of
	// "[REDACTED:<Name>]".
	Replace string

	// Built-in rules: a hand-written finder, or a pattern whose match
	// must start a word (checked outside the regexp, which keeps its
	// literal prefix fast).
	find      finder
	wordStart bool
	// assign is the kind of key that assignment rules look for (also in
	// JSON members, see Redactor.JSON), valueOK what their values must be.
	assign  keyClass
	valueOK func(v string) bool
}

// finder calls add with the bounds of every secret in s, in order.
type finder func(s string, add func(start, end int))

// Options configures a Redactor. The zero value (or nil) gives the
// default rules and the current user's home directory.
type Options struct {
	// Rules replaces the default rules (DefaultRules) when non-nil.
	Rules []Rule
	// Home lists home directories whose absolute paths are replaced by
	// "~"; nil means the current user's (os.UserHomeDir), an empty
	// non-nil slice none. The rule "home-path" of DefaultRules replaces
	// /home/<user>, /Users/<user> and C:\Users\<user> whatever Home is.
	Home []string
	// Custom, when set, runs after the rules on every string: the host's
	// own redactor. It returns the new string and how many it replaced,
	// which the Report counts under "custom".
	Custom func(s string) (string, int)
}

// Report counts what was redacted, per rule name. It never holds a
// secret.
type Report struct {
	Counts map[string]int `json:"counts"`
}

// Add adds o's counts to r.
func (r *Report) Add(o Report) {
	for k, n := range o.Counts {
		r.count(k, n)
	}
}

func (r *Report) count(name string, n int) {
	if n == 0 {
		return
	}
	if r.Counts == nil {
		r.Counts = map[string]int{}
	}
	r.Counts[name] += n
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
	opts   Options
	rules  []compiled
	filter *prefilter
	// keyed lists the rules that also judge a JSON member by its key.
	keyed []int
	// names holds the rule names of the markers this redactor writes.
	names map[string]bool
	// noHomes is WithoutHomePaths, made once.
	noHomes func() *Redactor
}

// compiled is a rule ready to run.
type compiled struct {
	Rule
	repl   string
	secret int // submatch of Pattern replaced (0: the whole match)
}

// New returns a Redactor.
func New(opts *Options) *Redactor {
	r := &Redactor{}
	if opts != nil {
		r.opts = *opts
	}
	rules := r.opts.Rules
	if rules == nil {
		rules = DefaultRules()
	}
	home := r.opts.Home
	if home == nil {
		if h, err := os.UserHomeDir(); err == nil {
			home = []string{h}
		}
	}
	if hr, ok := homeRule(home); ok {
		rules = append([]Rule{hr}, rules...)
	}
	for _, ru := range rules {
		if ru.find == nil && ru.Pattern == nil {
			continue // matches nothing
		}
		c := compiled{Rule: ru, repl: ru.Replace}
		if c.repl == "" {
			c.repl = marker + ru.Name + "]"
		}
		if name, ok := strings.CutPrefix(c.repl, marker); ok {
			if name, ok = strings.CutSuffix(name, "]"); ok && name != "" && len(name) <= maxMarkerName &&
				!strings.ContainsAny(name, "[]\n") {
				if r.names == nil {
					r.names = map[string]bool{}
				}
				r.names[name] = true
			}
		}
		if ru.Pattern != nil {
			c.secret = max(ru.Pattern.SubexpIndex("secret"), 0)
		}
		if ru.assign != 0 {
			r.keyed = append(r.keyed, len(r.rules))
		}
		r.rules = append(r.rules, c)
	}
	kws := make([][]string, len(r.rules))
	for i, c := range r.rules {
		kws[i] = c.Keywords
	}
	r.filter = newPrefilter(kws)
	r.noHomes = sync.OnceValue(func() *Redactor {
		if r.rule("home-path") == nil {
			return r
		}
		var rules []Rule
		for _, c := range r.rules {
			if c.Name != "home-path" {
				rules = append(rules, c.Rule)
			}
		}
		return New(&Options{Rules: rules, Home: []string{}, Custom: r.opts.Custom})
	})
	return r
}

// WithoutHomePaths returns a Redactor with r's rules but those that
// replace home directories (the rule "home-path", and Options.Home):
// for what must keep its paths whole, such as the working directory a
// store lists sessions by. It is made once; r itself when r replaces
// none.
func (r *Redactor) WithoutHomePaths() *Redactor {
	if r.noHomes == nil {
		return r // not made by New
	}
	return r.noHomes()
}

// homeRule replaces the given home directories by "~".
func homeRule(dirs []string) (Rule, bool) {
	var clean []string
	for _, d := range dirs {
		d = strings.TrimRight(d, `/\`)
		if len(d) < 2 || d == filepath.VolumeName(d) {
			continue // "/", "C:": not a home worth replacing
		}
		clean = append(clean, d)
	}
	if len(clean) == 0 {
		return Rule{}, false
	}
	// Longest first, so that a home inside another is replaced whole.
	slices.SortFunc(clean, func(a, b string) int { return len(b) - len(a) })
	return Rule{
		Name:     "home-path",
		Keywords: clean,
		Replace:  "~",
		find:     findDirs(clean),
	}, true
}

// maxPasses bounds how often String goes over its own output: a pass
// that replaced something is followed by another, so that what the
// replacements brought together is found too.
const maxPasses = 4

// String returns s with every secret replaced, and what was replaced.
// The text of a data: URI in base64 ("data:text/plain;base64,...") is
// decoded, redacted and encoded again.
func (r *Redactor) String(s string) (string, Report) {
	var rep Report
	s = r.stringAt(s, &rep, 0)
	return s, rep
}

// stringAt is String at a depth of base64 text inside base64 text.
func (r *Redactor) stringAt(s string, rep *Report, depth int) string {
	return r.stringMasked(s, nil, rep, depth)
}

// stringMasked is stringAt with the rules whose keywords s holds already
// found (mask, nil when not).
func (r *Redactor) stringMasked(s string, mask *ruleMask, rep *Report, depth int) string {
	if depth < maxDepth && len(s) <= maxNestedJSON && looksJSON(s) {
		if out := r.jsonText(s, rep, depth); out != s {
			s, mask = out, nil
		}
	}
	if depth < maxDepth && len(s) > 16 && (strings.Contains(s, "base64,") || strings.Contains(s, "BASE64,")) {
		if out := r.dataURIs(s, rep, depth); out != s {
			s, mask = out, nil
		}
	}
	if depth < maxDepth && len(s) >= minBase64Run {
		if out := r.base64Values(s, rep, depth); out != s {
			s, mask = out, nil
		}
	}
	if mask != nil {
		s = r.rulesFrom(s, *mask, rep)
	} else {
		s = r.rulesOn(s, rep)
	}
	if r.opts.Custom != nil {
		out, n := r.opts.Custom(s)
		rep.count("custom", n)
		s = out
	}
	return s
}

// rulesOn runs the rules on s until nothing more is found.
func (r *Redactor) rulesOn(s string, rep *Report) string {
	return r.rulesFrom(s, r.filter.scan(s), rep)
}

// rulesFrom is rulesOn with the rules of the first pass given: mask
// holds at least those whose keywords s holds.
func (r *Redactor) rulesFrom(s string, mask ruleMask, rep *Report) string {
	for pass := range maxPasses {
		if pass > 0 {
			mask = r.filter.scan(s)
		}
		if mask.empty() {
			break
		}
		out, changed := r.pass(s, mask, rep)
		if !changed {
			break
		}
		s = out
	}
	return s
}

// span is a match to replace: s[start:end] by rule's replacement.
type span struct{ start, end, rule int }

// pass runs once every rule that mask lets through and replaces what
// they found; where matches overlap, the earlier rule wins (and, within a
// rule, the earlier and then the longer match).
//
// The rules read the text with the markers that are glued to it taken
// out (see unglue): what stands beside a marker is judged as if the
// marker were not there, and the markers stay where they were.
func (r *Redactor) pass(s string, mask ruleMask, rep *Report) (string, bool) {
	var buf, nbuf, mbuf [16]span
	kept := r.markers(s, buf[:0]) // sorted, without overlaps
	t, cuts := s, []span(nil)
	if len(kept) > 0 || strings.Contains(s, marker) {
		if t, cuts, kept = r.unglue(s, kept); len(cuts) > 0 {
			more := r.filter.scan(t) // taking a marker out may join a keyword
			mask.or(&more)
		}
	}
	marks := slices.Clone(kept)
	found := len(kept)
	found0 := found
	news, merged := nbuf[:0], mbuf[:0]
	for i := range r.rules {
		if !mask.has(i) {
			continue
		}
		news = news[:0]
		r.rules[i].each(t, func(start, end int) {
			if start < end {
				news = append(news, span{start, end, i})
			}
		})
		if len(news) == 0 {
			continue
		}
		sortSpans(news)
		if len(marks) > 0 {
			news = outsideMarkers(t, news, nil, marks)
			sortSpans(news)
		}
		// Merge the new spans that overlap nothing into kept.
		merged = merged[:0]
		k, lastEnd := 0, -1
		for _, n := range news {
			if n.start < lastEnd {
				continue // overlaps a new one kept before it
			}
			for k < len(kept) && kept[k].end <= n.start {
				merged = append(merged, kept[k])
				k++
			}
			if k < len(kept) && kept[k].start < n.end {
				continue // overlaps one of an earlier rule
			}
			merged = append(merged, n)
			lastEnd = n.end
			found++
		}
		merged = append(merged, kept[k:]...)
		kept, merged = merged, kept
	}
	if found == found0 {
		return s, false
	}
	if len(cuts) > 0 {
		kept = backToText(s, kept, cuts)
	}
	var b strings.Builder
	b.Grow(len(s))
	last := 0
	for _, sp := range kept {
		if sp.rule < 0 {
			continue // a marker, kept
		}
		b.WriteString(s[last:sp.start])
		b.WriteString(r.rules[sp.rule].repl)
		rep.count(r.rules[sp.rule].Name, 1)
		last = sp.end
	}
	b.WriteString(s[last:])
	return b.String(), true
}

// unglue returns s without the markers glued to what surrounds them,
// for the rules to read, the parts of s it took out (sorted: rule
// cutRemoved, or cutLine where a newline stands for it in the text
// returned), and the markers it kept (in the coordinates of that text).
//
// A run of markers (whole ones, adjacent) that a character of a token
// follows ("Bearer [REDACTED:x]<token>") is taken out: what follows it is
// judged as if it stood where the marker is. A run that only ends a
// token is taken out too ("user:<password>[REDACTED:x]@host"), or, when a
// blank follows it ("KEY=<value>[REDACTED:x] more"), becomes a newline:
// what precedes it is judged as ending there. A run that stands alone
// ("password=[REDACTED:x] user=bob") is kept as a value in itself. Text
// that starts like a marker but is none ("[REDACTED:" unclosed, or with
// another name) is always taken out: it is no value, and hides nothing.
func (r *Redactor) unglue(s string, marks []span) (string, []span, []span) {
	var parts []span // whole markers (rule -1) and half ones (rule -2)
	k := 0
	for i := 0; ; {
		at := strings.Index(s[i:], marker)
		if at < 0 {
			break
		}
		at += i
		for k < len(marks) && marks[k].start < at {
			parts = append(parts, marks[k])
			k++
		}
		if k < len(marks) && marks[k].start == at {
			parts = append(parts, marks[k])
			i = marks[k].end
			k++
			continue
		}
		parts = append(parts, span{at, at + len(marker), -2})
		i = at + len(marker)
	}
	parts = append(parts, marks[k:]...)
	var cuts, kept []span
	shift := 0 // what the cuts so far took out, less what they put in
	for i := 0; i < len(parts); {
		j := i + 1
		for j < len(parts) && parts[j].start == parts[j-1].end {
			j++
		}
		run := parts[i:j]
		start, end := run[0].start, run[len(run)-1].end
		right := end < len(s) && rightGlue(s[end])
		left := start > 0 && leftGlue(s, start)
		blank := end < len(s) && isBlank(s[end])
		for n, p := range run {
			switch {
			case right || p.rule == -2 || left && !blank:
				cuts = append(cuts, span{p.start, p.end, cutRemoved})
				shift += p.end - p.start
			case left && n == 0:
				cuts = append(cuts, span{p.start, p.end, cutLine})
				shift += p.end - p.start - 1
			case left:
				cuts = append(cuts, span{p.start, p.end, cutRemoved})
				shift += p.end - p.start
			default:
				kept = append(kept, span{p.start - shift, p.end - shift, -1})
			}
		}
		i = j
	}
	if len(cuts) == 0 {
		return s, nil, marks
	}
	var b strings.Builder
	b.Grow(len(s))
	last := 0
	for _, c := range cuts {
		b.WriteString(s[last:c.start])
		if c.rule == cutLine {
			b.WriteByte('\n')
		}
		last = c.end
	}
	b.WriteString(s[last:])
	return b.String(), cuts, kept
}

// The kinds of the parts unglue takes out.
const (
	cutRemoved = -1 // nothing stands for it
	cutLine    = -3 // a newline stands for it
)

// leftGlue reports whether the character before s[i] is a token's that
// a marker at i would go on (not an operator's: "KEY=[REDACTED:x]" is a
// value; base64's padding "==" is a token's); rightGlue, whether c is
// one that goes on a marker.
func leftGlue(s string, i int) bool {
	c := s[i-1]
	if c != '=' {
		return rightGlue(c)
	}
	if i > 1 && s[i-2] == '=' {
		return true
	}
	// One '=' pads base64 of a length that then divides by 4.
	b := i - 1
	for b > 0 && i-b < 64 && (isAlnum(s[b-1]) || s[b-1] == '+' || s[b-1] == '/') {
		b--
	}
	n := i - 1 - b
	return n >= 15 && (n+1)%4 == 0
}

func rightGlue(c byte) bool { return isTokenChar(c) || strings.IndexByte("%!#*^$", c) >= 0 }

// backToText returns spans (sorted, in the coordinates of the text
// unglue made of s) in those of s: each is cut around the parts taken
// out that fall inside it, which stay as they were.
func backToText(s string, spans, cuts []span) []span {
	var out []span
	k, shift := 0, 0 // the cuts before the current character, and their shift
	// char returns the bounds in s of the text's character i (called with
	// i never decreasing): a newline that stands for a part, that part.
	char := func(i int) (int, int) {
		for k < len(cuts) {
			c := cuts[k]
			at := c.start - shift // where it is in the text
			switch {
			case c.rule == cutLine && at == i:
				return c.start, c.end
			case c.rule == cutLine && at < i:
				shift += c.end - c.start - 1
			case c.rule == cutRemoved && at <= i:
				shift += c.end - c.start
			default:
				return i + shift, i + shift + 1
			}
			k++
		}
		return i + shift, i + shift + 1
	}
	first := 0 // the first cut not before the current span
	for _, sp := range spans {
		start, _ := char(sp.start)
		if sp.rule < 0 {
			out = append(out, span{start, start + sp.end - sp.start, -1})
			continue
		}
		_, end := char(sp.end - 1)
		for first < len(cuts) && cuts[first].start < start {
			first++
		}
		last := first
		for last < len(cuts) && cuts[last].end <= end {
			last++
		}
		if last == first {
			out = append(out, span{start, end, sp.rule})
			continue
		}
		out = outsideMarkers(s, []span{{start, end, sp.rule}}, out, cuts[first:last])
		first = last
	}
	return out
}

func sortSpans(spans []span) {
	slices.SortFunc(spans, func(a, b span) int {
		if a.start != b.start {
			return a.start - b.start
		}
		return b.end - a.end
	})
}

// outsideMarkers returns spans (sorted) with each that overlaps markers
// (sorted, apart) cut into its parts outside them, trimmed of blanks: a
// secret beside a marker ("[REDACTED:x] hunter2" as a password) is
// replaced, the marker kept. out is where the result goes.
func outsideMarkers(s string, spans, out, markers []span) []span {
	k := 0
	for _, n := range spans {
		for k < len(markers) && markers[k].end <= n.start {
			k++ // before this span, and so before every later one
		}
		start := n.start
		for _, m := range markers[k:] {
			if m.start >= n.end {
				break
			}
			if m.start > start {
				out = appendTrimmed(s, out, span{start, m.start, n.rule})
			}
			start = max(start, m.end)
		}
		if start < n.end {
			out = appendTrimmed(s, out, span{start, n.end, n.rule})
		}
	}
	return out
}

// appendTrimmed appends sp without its leading and trailing blanks,
// unless nothing else is left.
func appendTrimmed(s string, out []span, sp span) []span {
	for sp.start < sp.end && isBlank(s[sp.start]) {
		sp.start++
	}
	for sp.end > sp.start && isBlank(s[sp.end-1]) {
		sp.end--
	}
	if sp.start < sp.end {
		out = append(out, sp)
	}
	return out
}

func isBlank(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// marker starts the text that replaces a secret.
const marker = "[REDACTED:"

// maxMarkerName bounds the rule names markers recognises.
const maxMarkerName = 64

// markers appends to spans the replacements of earlier passes (or of an
// earlier redaction) in s, rule -1: no rule matches across them, so that
// "[REDACTED:token]" is not taken for the password of a URL or a value,
// and redacting is idempotent. Only a whole marker counts: "[REDACTED:",
// the name of one of the redactor's rules (or a name of words without
// digits, "[REDACTED:some-rule]", which an earlier version or another
// rule set may have written), and "]". Anything else that starts like
// one (a space after the colon, a secret for a name, no closing bracket)
// shields nothing.
func (r *Redactor) markers(s string, spans []span) []span {
	for i := 0; ; {
		k := strings.Index(s[i:], marker)
		if k < 0 {
			return spans
		}
		start := i + k
		i = start + len(marker)
		end := i
		for end < len(s) && end-i <= maxMarkerName && s[end] != ']' && s[end] != '[' && s[end] != '\n' {
			end++
		}
		if end == i || end >= len(s) || s[end] != ']' || !r.markerName(s[i:end]) {
			continue
		}
		i = end + 1
		spans = append(spans, span{start, i, -1})
	}
}

// markerName reports whether a marker may carry name: the name of one
// of this redactor's rules, or words of small letters joined by '-'.
func (r *Redactor) markerName(name string) bool {
	if r.names[name] {
		return true
	}
	if name[0] == '-' || name[len(name)-1] == '-' || strings.Contains(name, "--") {
		return false
	}
	for i := 0; i < len(name); i++ {
		if !isLower(name[i]) && name[i] != '-' {
			return false
		}
	}
	return true
}

// each calls add with the bounds of every match of the rule in s.
func (c *compiled) each(s string, add func(start, end int)) {
	if c.find != nil {
		c.find(s, add)
		return
	}
	for pos := 0; pos <= len(s); {
		m := c.Pattern.FindStringSubmatchIndex(s[pos:])
		if m == nil {
			return
		}
		start, end := pos+m[0], pos+m[1]
		next := max(end, start+1)
		if c.wordStart && start > 0 && isWord(s[start-1]) {
			pos = start + 1
			continue
		}
		ss, se := start, end
		if c.secret > 0 {
			if m[2*c.secret] < 0 {
				pos = next
				continue
			}
			ss, se = pos+m[2*c.secret], pos+m[2*c.secret+1]
		}
		if c.Valid == nil || c.Valid(s[ss:se]) {
			add(ss, se)
		}
		pos = next
	}
}
