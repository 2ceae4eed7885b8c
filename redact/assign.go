package redact

import (
	"bytes"
	"strings"
)

// Assignments: a key that names a secret, an operator, and a value, in
// the forms of code, configuration and shells: password=x, password: x,
// "password": "x", PASSWORD='x', password := "x", :password => "x",
// --password=x. Only the value is replaced.

// maxValue bounds the values the finders read: scans stay linear on
// hostile text, and longer values are not taken for secrets.
const maxValue = 4096

// keyClass is the kind of secret a key names.
type keyClass uint8

const (
	keyPassword keyClass = 1 << iota
	keySecret
	keyToken
	keyAPI
	keyAWS
	keyAuth // "auth": base64 of user:password (Docker, .npmrc)
)

func assignRule(name string, class keyClass, valueOK func(string) bool, keywords ...string) Rule {
	return Rule{
		Name:     name,
		Keywords: keywords,
		assign:   class,
		valueOK:  valueOK,
		find: func(s string, add func(start, end int)) {
			findAssign(s, class, valueOK, add)
		},
	}
}

// classify returns the kinds of secret the key names, judged by its last
// word or two: "db_password", "GITHUB_TOKEN", "clientSecret", "x-api-key"
// name one; "token_type", "max_tokens", "password_hash" do not.
func classify(key string) keyClass {
	if len(key) > 64 {
		return 0
	}
	var buf [64]byte
	fk := buf[:len(key)]
	for i := 0; i < len(key); i++ {
		fk[i] = fold[key[i]]
	}
	var w [2][2]int // the bounds of the last two words
	n := 0
	splitWords(key, func(a, b int) {
		w[0], w[1] = w[1], [2]int{a, b}
		n++
	})
	if n == 0 {
		return 0
	}
	last := fk[w[1][0]:w[1][1]]
	var prev []byte
	if n > 1 {
		prev = fk[w[0][0]:w[0][1]]
	}
	ends := func(suffixes ...string) bool {
		for _, x := range suffixes {
			if bytes.HasSuffix(last, []byte(x)) {
				return true
			}
		}
		return false
	}
	keyAfter := func(words ...string) bool {
		if string(last) != "key" {
			return false
		}
		for _, x := range words {
			if string(prev) == x {
				return true
			}
		}
		return false
	}
	var c keyClass
	switch {
	case ends("password", "passwd", "passphrase"), string(last) == "pass", string(last) == "pwd" && n > 1:
		c |= keyPassword
	case ends("secret", "secretkey", "privatekey"), keyAfter("secret", "private", "signing", "encryption", "master"):
		c |= keySecret
	case ends("token"):
		c |= keyToken
	case ends("apikey", "accesskey", "authkey"), keyAfter("api", "access", "auth", "app", "subscription", "license", "account"):
		c |= keyAPI
	}
	if string(last) == "auth" {
		c |= keyAuth
	}
	if bytes.Contains(fk, []byte("aws")) && bytes.Contains(fk, []byte("secret")) {
		c |= keyAWS
	}
	return c
}

// splitWords calls fn with the bounds of each word of an identifier:
// words are separated by anything but letters and digits, and by case
// ("apiKey", "APIKey" and "api_key" are all "api", "key").
func splitWords(s string, fn func(start, end int)) {
	start := -1
	flush := func(end int) {
		if start >= 0 && end > start {
			fn(start, end)
		}
		start = -1
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !isAlnum(c) {
			flush(i)
			continue
		}
		if start < 0 {
			start = i
			continue
		}
		p := s[i-1]
		lowerToUpper := isUpper(c) && !isUpper(p) && !isDigit(p)
		acronymEnd := isUpper(p) && isUpper(c) && i+1 < len(s) && isLower(s[i+1])
		if lowerToUpper || acronymEnd {
			flush(i)
			start = i
		}
	}
	flush(len(s))
}

func isUpper(c byte) bool { return c >= 'A' && c <= 'Z' }
func isLower(c byte) bool { return c >= 'a' && c <= 'z' }
func isDigit(c byte) bool { return c >= '0' && c <= '9' }

func isKeyChar(c byte) bool { return isWord(c) || c == '-' || c == '.' }

func isQuote(c byte) bool { return c == '"' || c == '\'' || c == '`' }

// findAssign finds the values assigned to keys of the class.
func findAssign(s string, class keyClass, valueOK func(string) bool, add func(start, end int)) {
	findAssignKeys(s, func(key string) bool { return classify(key)&class != 0 && !isEnvPWD(key) }, valueOK, add)
}

// findAssignKeys finds the values assigned to the keys keyOK accepts.
func findAssignKeys(s string, keyOK func(string) bool, valueOK func(string) bool, add func(start, end int)) {
	var w watermark
	for p := 0; p < len(s); p++ {
		c := s[p]
		if c != '=' && c != ':' {
			continue
		}
		// The operator: = : := => ; not == != <= >= :: or "://".
		op := 1
		if p+1 < len(s) {
			switch n := s[p+1]; {
			case c == ':' && n == '=', c == '=' && n == '>':
				op = 2
			case n == '=' || n == c, c == ':' && n == '/':
				p++
				continue
			}
		}
		if p > 0 && c == '=' && strings.IndexByte("=!<>", s[p-1]) >= 0 {
			continue
		}
		key := keyBefore(s, p)
		if key == "" || !keyOK(key) {
			continue
		}
		vs, ve, quoted := valueAfter(s, p+op, &w)
		if vs < 0 {
			continue
		}
		v := s[vs:ve]
		// "key: value" and "key = value" unquoted hold the rest of the
		// line (YAML, INI); "key=value" may be followed by more (a
		// command line, a query string).
		spaced := c == ':' && op == 1 || s[p-1] == ' ' || s[p+op] == ' ' || s[p+op] == '\t'
		if !plausibleValue(v, quoted, spaced, s[ve:]) {
			continue
		}
		if valueOK != nil && !valueOK(v) {
			continue
		}
		add(vs, ve)
		p = ve - 1
	}
}

// isEnvPWD tells the shell's PWD and OLDPWD (directories) from passwords.
func isEnvPWD(key string) bool {
	k := strings.TrimLeft(key, "-$")
	return strings.EqualFold(k, "pwd") || strings.EqualFold(k, "oldpwd")
}

// keyBefore returns the key that ends before the operator at p (past
// spaces and a closing quote), or "".
func keyBefore(s string, p int) string {
	e := p
	for e > 0 && (s[e-1] == ' ' || s[e-1] == '\t') && p-e < 4 {
		e--
	}
	if e > 0 && isQuote(s[e-1]) {
		e--
	}
	b := e
	for b > 0 && isKeyChar(s[b-1]) && e-b < 64 {
		b--
	}
	return s[b:e]
}

// watermark remembers where the last unquoted value ended, so that the
// values starting inside it (password=password=...) are not scanned
// again: each byte is scanned once.
type watermark struct{ from, end int }

// valueAfter returns the bounds of the value that starts after the
// operator (ending at p), and whether it was quoted; vs < 0 if there is
// none or it is longer than maxValue.
func valueAfter(s string, p int, w *watermark) (vs, ve int, quoted bool) {
	for p < len(s) && (s[p] == ' ' || s[p] == '\t') {
		p++
	}
	if p >= len(s) {
		return -1, -1, false
	}
	if q := s[p]; isQuote(q) {
		for i := p + 1; i < len(s) && s[i] != '\n' && i-p <= maxValue; i++ {
			if s[i] == '\\' {
				i++
				continue
			}
			if s[i] == q {
				return p + 1, i, true
			}
		}
		return -1, -1, false
	}
	q := p
	if strings.HasPrefix(s[p:], marker) {
		// A marker at the start of a value ("[REDACTED:x]hunter2") does
		// not end it.
		if k := strings.IndexByte(s[p:min(len(s), p+len(marker)+maxMarkerName+1)], ']'); k > 0 {
			q = p + k + 1
		}
	}
	e := q
	if q >= w.from && q < w.end {
		e = w.end
	} else {
		for e < len(s) && !isValueEnd(s[e]) {
			e++
		}
		w.from, w.end = q, e
	}
	if e-p > maxValue {
		return -1, -1, false
	}
	return p, e, false
}

func isValueEnd(c byte) bool {
	return c <= ' ' || strings.IndexByte(",;&|)}]\"'`<>", c) >= 0
}

// typeNames are what follows "password:" in code (a type annotation),
// not a password.
var typeNames = map[string]bool{
	"str": true, "string": true, "int": true, "bool": true, "boolean": true, "number": true,
	"any": true, "bytes": true, "object": true, "char": true, "&str": true, "secretstr": true,
	"optional": true, "unknown": true, "void": true, "text": true, "varchar": true,
}

// plausibleValue rejects empty values, placeholders and, unquoted, what
// reads as code or prose rather than a secret. whole tells that an
// unquoted value must be the rest of its line, rest is what follows it.
func plausibleValue(v string, quoted, whole bool, rest string) bool {
	if len(v) < 3 || isPlaceholder(v) {
		return false
	}
	if isDigits(v) && len(v) < 6 {
		return false
	}
	if quoted {
		return true
	}
	for strings.HasPrefix(v, marker) {
		// Judged by what follows the marker.
		rest, ok := afterBracket(v)
		if !ok {
			break
		}
		v = rest
	}
	fv := foldString(v)
	if typeNames[fv] || strings.ContainsAny(v, "([{") || isIdentChain(v) || classify(v) != 0 {
		return false
	}
	if strings.Contains(v, "://") {
		return false // a URL; its password is url-password's
	}
	if whole {
		// YAML "password: x" holds the rest of the line; prose
		// "password: the one you chose" and code "apiKey = await f()"
		// go on.
		for i := 0; i < len(rest) && rest[i] != '\n' && i < 256; i++ {
			if c := rest[i]; c == '#' {
				break
			} else if c != ' ' && c != '\t' && c != '\r' && c != ',' {
				return false
			}
		}
	}
	return true
}

func isDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if !isDigit(s[i]) {
			return false
		}
	}
	return s != ""
}

// isIdentChain reports code such as os.environ, self.token or
// config.db.password: identifiers joined by dots.
func isIdentChain(v string) bool {
	if !strings.Contains(v, ".") {
		return false
	}
	for _, part := range strings.Split(v, ".") {
		if part == "" || isDigit(part[0]) {
			return false
		}
		for i := 0; i < len(part); i++ {
			if !isWord(part[i]) {
				return false
			}
		}
	}
	return true
}

// placeholders are values that stand for a secret rather than being one.
var placeholders = map[string]bool{
	"null": true, "none": true, "nil": true, "undefined": true, "true": true, "false": true,
	"empty": true, "secret": true, "password": true, "passwd": true, "token": true, "pass": true,
	"required": true, "optional": true, "hidden": true, "masked": true, "redacted": true,
	"placeholder": true, "changeme": true, "example": true, "dummy": true, "test": true,
}

// isPlaceholder reports values such as "", <token>, ${TOKEN}, $TOKEN,
// {{ token }}, %s, xxxx, ****, your-api-key, [REDACTED:token],
// ***REDACTED***. A value that starts with a bracketed placeholder
// ("[REDACTED:x] hunter2", "<redacted>hunter2") is judged by what
// follows it: a marker-looking prefix hides nothing.
func isPlaceholder(v string) bool {
	for depth := 0; v != "" && depth < 8; depth++ {
		rest, ok := afterBracket(v)
		if !ok {
			break
		}
		if rest != "" && !isBlank(rest[0]) && !isWord(rest[0]) && rest[0] != '-' {
			return true // what follows goes on otherwise: "[REDACTED:x]@host"
		}
		if v = strings.Trim(rest, " \t\"'`,;:"); len(v) < 3 {
			return true // nothing, or too little to be a secret ("\n")
		}
	}
	if v == "" || strings.IndexByte("<$%{[*#(", v[0]) >= 0 {
		return true
	}
	fv := foldString(v)
	if placeholders[fv] || onlyWord(fv, "redacted") {
		return true
	}
	for _, p := range [...]string{"your", "my_", "my-", "example", "placeholder", "insert", "replace", "enter"} {
		if strings.HasPrefix(fv, p) {
			return true
		}
	}
	for _, p := range [...]string{"xxxx", "****", "...", "…", "•", "{{", "${", "<", ">", "example"} {
		if strings.Contains(fv, p) {
			return true
		}
	}
	return strings.Count(v, v[:1]) == len(v) // "aaaa", "0000"
}

// afterBracket returns what follows the bracketed group v starts with
// ("[...]", "<...>", "{...}", "(...)", "${...}", "{{...}}"), or false.
func afterBracket(v string) (string, bool) {
	open := 0
	if strings.HasPrefix(v, "${") {
		open = 1
	}
	closer := ""
	switch v[open] {
	case '[':
		closer = "]"
	case '<':
		closer = ">"
	case '{':
		closer = "}"
	case '(':
		closer = ")"
	default:
		return "", false
	}
	if strings.HasPrefix(v[open:], "{{") {
		closer = "}}"
	}
	i := strings.Index(v[open+1:], closer)
	if i < 0 {
		return "", false
	}
	return v[open+1+i+len(closer):], true
}

// onlyWord reports whether the letters of fv are word alone, whatever
// surrounds them ("***redacted***", "-redacted-").
func onlyWord(fv, word string) bool {
	i := strings.Index(fv, word)
	if i < 0 {
		return false
	}
	for _, part := range [...]string{fv[:i], fv[i+len(word):]} {
		for j := 0; j < len(part); j++ {
			if isAlnum(part[j]) {
				return false
			}
		}
	}
	return true
}
