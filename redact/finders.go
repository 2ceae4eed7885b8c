package redact

import (
	"encoding/base64"
	"iter"
	"math"
	"strings"
	"unicode/utf8"
)

// isTokenChar reports the characters of tokens in headers and env values:
// base64 (standard and URL-safe) and the usual separators.
func isTokenChar(c byte) bool {
	return isWord(c) || c == '-' || c == '.' || c == '~' || c == '+' || c == '/' || c == '='
}

// tokenAt returns the end of the token that starts at i.
func tokenAt(s string, i int) int {
	for i < len(s) && isTokenChar(s[i]) {
		i++
	}
	return i
}

// skipBlanks returns the index past the spaces and tabs at i.
func skipBlanks(s string, i int) int {
	for i < len(s) && (s[i] == ' ' || s[i] == '\t') {
		i++
	}
	return i
}

// findScheme calls add with the credentials that follow the HTTP
// authentication scheme (a word, any case, then blanks) when ok takes
// them.
func findScheme(s, scheme string, ok func(v string) bool, add func(start, end int)) {
	for i := 0; ; {
		i = indexFold(s, scheme, i)
		if i < 0 {
			return
		}
		at := i
		i += len(scheme)
		if at > 0 && isWord(s[at-1]) {
			continue
		}
		vs := skipBlanks(s, i)
		if vs == i {
			continue
		}
		ve := tokenAt(s, vs)
		if ok(s[vs:ve]) {
			add(vs, ve)
			i = ve
		}
	}
}

// findBearer finds the token after "Bearer".
func findBearer(s string, add func(start, end int)) {
	findScheme(s, "bearer", func(v string) bool {
		return len(v) >= 12 && !isPlaceholder(v) && hasDigit(v)
	}, add)
}

// findBasic finds the credentials of "Basic <base64 of user:password>".
func findBasic(s string, add func(start, end int)) {
	findScheme(s, "basic", func(v string) bool {
		v = strings.TrimRight(v, "=")
		if len(v) < 6 {
			return false
		}
		dec, err := base64.RawStdEncoding.DecodeString(v)
		return err == nil && utf8.Valid(dec) && strings.IndexByte(string(dec), ':') > 0 && printable(dec)
	}, add)
}

func printable(b []byte) bool {
	for _, c := range b {
		if c < 0x20 || c == 0x7f {
			return false
		}
	}
	return true
}

// findURLPassword finds the password of scheme://user:password@host.
func findURLPassword(s string, add func(start, end int)) {
	for at := range indices(s, "://") {
		if at == 0 || !isAlnum(s[at-1]) {
			continue // no scheme
		}
		i := at + 3
		end := i
		for end < len(s) && end-i < maxValue && strings.IndexByte("/ \t\r\n'\"<>`", s[end]) < 0 {
			end++
		}
		auth := s[i:end]
		atSign := strings.LastIndexByte(auth, '@')
		if atSign < 0 {
			continue
		}
		colon := strings.IndexByte(auth[:atSign], ':')
		if colon < 0 {
			// A token alone as the user: https://<token>@github.com/.
			if u := auth[:atSign]; tokenUser(u) {
				add(i, i+atSign)
			}
			continue
		}
		ps, pe := i+colon+1, i+atSign
		pw := s[ps:pe]
		if isPlaceholder(pw) || strings.EqualFold(pw, "pwd") {
			continue
		}
		add(ps, pe)
	}
}

// tokenUser reports a URL's user that is a token: long, random, of a
// token's characters.
func tokenUser(u string) bool {
	return len(u) >= 20 && len(u) <= 512 && tokenAt(u, 0) == len(u) && hasDigit(u) &&
		!isPlaceholder(u) && entropy(u) >= 3.5
}

// findEnvEntropy finds long, random values in lines of the form
// NAME=value (an environment file or a shell's export), whatever NAME:
// the keys rules did not recognise.
func findEnvEntropy(s string, add func(start, end int)) {
	for p := range indices(s, "=") {
		if !envLine(s, p) {
			continue
		}
		vs, ve := p+1, p+1
		for ve < len(s) && s[ve] != '\n' && ve-vs <= maxValue {
			ve++
		}
		line := strings.TrimRight(s[vs:ve], " \t\r")
		ve = vs + len(line)
		if len(line) >= 2 && isQuote(line[0]) && line[len(line)-1] == line[0] {
			vs, ve = vs+1, ve-1
		}
		v := s[vs:ve]
		if tokenAt(v, 0) != len(v) || !highEntropy(v) || looksPath(v) {
			continue
		}
		add(vs, ve)
	}
}

// indices yields the index of every sep in s that does not overlap an
// earlier one.
func indices(s, sep string) iter.Seq[int] {
	return func(yield func(int) bool) {
		for i := 0; ; {
			k := strings.Index(s[i:], sep)
			if k < 0 || !yield(i+k) {
				return
			}
			i += k + len(sep)
		}
	}
}

// envLine reports whether the '=' at p ends a name such as AWS_REGION or
// API_KEY_2 at the start of a line (past blanks and "export ").
func envLine(s string, p int) bool {
	b := p
	for b > 0 && (isUpper(s[b-1]) || isDigit(s[b-1]) || s[b-1] == '_') {
		b--
	}
	if p-b < 2 || !isUpper(s[b]) {
		return false
	}
	pre := strings.TrimRight(s[:b], " \t")
	if strings.HasSuffix(pre, "export") && len(pre) < b {
		pre = strings.TrimRight(pre[:len(pre)-len("export")], " \t")
	}
	return pre == "" || pre[len(pre)-1] == '\n'
}

// highEntropy reports values that look generated: long, of small letters,
// capitals and digits mixed, with a high Shannon entropy and frequent
// changes between those classes (which CamelCaseWords lack).
func highEntropy(v string) bool {
	if len(v) < 20 || len(v) > 4096 {
		return false
	}
	var lower, upper, digit bool
	changes := 0
	prev := 0
	for i := 0; i < len(v); i++ {
		cl := 0
		switch c := v[i]; {
		case isLower(c):
			lower, cl = true, 1
		case isUpper(c):
			upper, cl = true, 2
		case isDigit(c):
			digit, cl = true, 3
		}
		if i > 0 && cl != prev {
			changes++
		}
		prev = cl
	}
	return lower && upper && digit && changes*5 >= len(v)*2 && entropy(v) >= 3.5
}

// entropy is the Shannon entropy of s in bits per byte.
func entropy(s string) float64 {
	if s == "" {
		return 0
	}
	var n [256]int
	for i := 0; i < len(s); i++ {
		n[s[i]]++
	}
	h := 0.0
	l := float64(len(s))
	for _, c := range n {
		if c > 0 {
			p := float64(c) / l
			h -= p * math.Log2(p)
		}
	}
	return h
}
