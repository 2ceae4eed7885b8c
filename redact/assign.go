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
// name one; "token_type", "max_tokens", "password_hash" do not. A last
// word that only qualifies the one before it is passed over
// ("DB_PASSWORD_PROD", "token_value", "SecretString", "client-key-data"),
// and so are the digits that end a word ("password1").
func classify(key string) keyClass { return classifyAs(key, true) }

// classifyAs is classify; without loose, no word is passed over and no
// digit dropped (a value such as "Wg3tPass1" names nothing).
func classifyAs(key string, loose bool) keyClass {
	if len(key) > 64 {
		return 0
	}
	var buf [64]byte
	fk := buf[:len(key)]
	for i := 0; i < len(key); i++ {
		fk[i] = fold[key[i]]
	}
	var w [3][2]int // the bounds of the last three words
	n := 0
	splitWords(key, func(a, b int) {
		w[0], w[1], w[2] = w[1], w[2], [2]int{a, b}
		n++
	})
	if n == 0 {
		return 0
	}
	word := func(i int) []byte {
		b := fk[w[i][0]:w[i][1]]
		for loose && len(b) > 1 && isDigit(b[len(b)-1]) {
			b = b[:len(b)-1]
		}
		return b
	}
	li := 2
	if loose && n > 1 && qualifiers[string(word(2))] {
		li, n = 1, n-1
	}
	last := word(li)
	var prev []byte
	if n > 1 {
		prev = word(li - 1)
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
	case ends("password", "passwd", "passphrase", "passcode"), string(last) == "pass", string(last) == "pwd",
		string(last) == "psk", string(last) == "credentials", string(last) == "credential", string(last) == "creds":
		c |= keyPassword
	case ends("secret", "secretkey", "privatekey"), keyAfter("secret", "private", "signing", "encryption", "master", "client", "session"),
		string(last) == "certificate" && string(prev) == "client":
		c |= keySecret
	case ends("token"):
		c |= keyToken
	case ends("apikey", "accesskey", "authkey"), keyAfter("api", "access", "auth", "app", "subscription", "license", "account", "service"):
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

// qualifiers are last words of keys that qualify the word before them:
// where or when it is used, or how it is written.
var qualifiers = map[string]bool{
	"prod": true, "production": true, "dev": true, "development": true, "staging": true, "stage": true,
	"stg": true, "test": true, "testing": true, "qa": true, "uat": true, "local": true, "old": true,
	"new": true, "current": true, "cur": true, "prev": true, "previous": true, "next": true, "backup": true,
	"bak": true, "primary": true, "secondary": true, "live": true, "sandbox": true, "value": true,
	"val": true, "string": true, "str": true, "enc": true, "encrypted": true, "plain": true,
	"plaintext": true, "raw": true, "b": true, "base": true, "hex": true, "data": true,
}

// namesSecret reports an identifier of two words or more one of which
// names a secret ("password_mgr", "apiKeyFromEnv"): a variable's name,
// not a value.
func namesSecret(v string) bool {
	if len(v) > 64 || v == "" {
		return false
	}
	for i := 0; i < len(v); i++ {
		if !isWord(v[i]) {
			return false
		}
	}
	words, secret := 0, false
	splitWords(v, func(a, b int) {
		words++
		secret = secret || secretWords[foldString(v[a:b])]
	})
	return words > 1 && secret
}

var secretWords = map[string]bool{
	"password": true, "passwd": true, "pass": true, "pwd": true, "secret": true, "secrets": true,
	"token": true, "tokens": true, "key": true, "keys": true, "apikey": true, "auth": true, "cred": true,
	"creds": true, "credential": true, "credentials": true, "passphrase": true,
}

// looksPath reports a value that is a file's path ("/var/folders/7x/T/",
// "~/.ssh/id_rsa", "./secrets/db", "C:\\keys\\a.pem"): what holds a
// secret, or none, but not a secret itself.
func looksPath(v string) bool {
	switch {
	case strings.HasPrefix(v, "~/"), strings.HasPrefix(v, "./"), strings.HasPrefix(v, "../"):
		return true
	case len(v) > 3 && isLetter(v[0]) && v[1] == ':' && (v[2] == '\\' || v[2] == '/'):
		return true
	case !strings.HasPrefix(v, "/"):
		return false
	}
	for _, p := range strings.Split(strings.Trim(v, "/"), "/") {
		if p == "" {
			return false
		}
		for i := 0; i < len(p); i++ {
			if !isPathChar(p[i]) && p[i] != '@' && p[i] != '+' && p[i] != ':' {
				return false
			}
		}
	}
	return len(v) > 1
}

func isLetter(c byte) bool { return isLower(c) || isUpper(c) }

// isValidationRules reports a framework's validation rules (Laravel's
// 'required|min:8'), which code assigns to a "password" key.
func isValidationRules(v string) bool {
	parts := strings.Split(v, "|")
	if len(parts) < 2 {
		return false
	}
	known := false
	for _, p := range parts {
		name, _, _ := strings.Cut(p, ":")
		if name == "" || !isIdentifier(name) {
			return false
		}
		known = known || validationRules[name]
	}
	return known
}

// plainWord reports a name of small letters and '_' ("email",
// "first_name"): in a call's arguments, another field's name.
func plainWord(s string) bool {
	for i := 0; i < len(s); i++ {
		if !isLower(s[i]) && s[i] != '_' {
			return false
		}
	}
	return true
}

func isIdentifier(s string) bool {
	for i := 0; i < len(s); i++ {
		if !isWord(s[i]) {
			return false
		}
	}
	return s != ""
}

var validationRules = map[string]bool{
	"required": true, "nullable": true, "sometimes": true, "string": true, "confirmed": true, "min": true,
	"max": true, "between": true, "size": true, "email": true, "regex": true, "different": true,
	"same": true, "present": true, "filled": true, "bail": true, "alpha_num": true, "alpha_dash": true,
	"current_password": true, "password": true, "numeric": true, "integer": true,
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
	findAssignKeys(s, func(key string) bool { return classify(key)&class != 0 }, valueOK, add)
}

// findAssignKeys finds the values assigned to the keys keyOK accepts.
func findAssignKeys(s string, keyOK func(string) bool, valueOK func(string) bool, add func(start, end int)) {
	var w watermark
	for p := 0; p < len(s); p++ {
		c := s[p]
		if c == ',' || c == '(' {
			// Calls: define('DB_PASSWORD', 'x'), setPassword("x").
			if key, ok := callKey(s, p); ok && keyOK(key) {
				if vs, ve, quoted := valueAfter(s, p+1, &w); vs >= 0 && quoted {
					if v := s[vs:ve]; plausibleValue(v, true, false, "") && !plainWord(v) && (valueOK == nil || valueOK(v)) {
						add(vs, ve)
						p = ve
					}
				}
			}
			continue
		}
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

// callKey returns the key of a call at p: the first argument, quoted,
// when p is the comma after it (define('DB_PASSWORD', ...),
// System.setProperty("db.password", ...), os.Setenv("API_TOKEN", ...));
// the setter's name when p is its parenthesis (setPassword(...),
// set_api_key(...)).
func callKey(s string, p int) (string, bool) {
	if s[p] == '(' {
		b := p
		for b > 0 && p-b < 64 && isWord(s[b-1]) {
			b--
		}
		name := s[b:p]
		if len(name) < 4 || !strings.HasPrefix(name, "set") && !strings.HasPrefix(name, "Set") ||
			!isUpper(name[3]) && name[3] != '_' {
			return "", false
		}
		return name, true
	}
	e := p
	for e > 0 && p-e < 4 && (s[e-1] == ' ' || s[e-1] == '\t') {
		e--
	}
	if e == 0 || !isQuote(s[e-1]) {
		return "", false
	}
	q := s[e-1]
	b := e - 1
	for b > 0 && e-b < 66 && s[b-1] != q {
		b--
	}
	if b == 0 || s[b-1] != q {
		return "", false
	}
	o := b - 1
	for o > 0 && b-o < 6 && (s[o-1] == ' ' || s[o-1] == '\t') {
		o--
	}
	if o == 0 || s[o-1] != '(' {
		return "", false
	}
	return s[b : e-1], true
}

// keyBefore returns the key that ends before the operator at p (past
// spaces and a closing quote), or "".
func keyBefore(s string, p int) string {
	e := p
	for e > 0 && (s[e-1] == ' ' || s[e-1] == '\t') && p-e < 4 {
		e--
	}
	if e > 1 && s[e-1] == ']' && isQuote(s[e-2]) {
		e-- // a subscript: env["DB_PASSWORD"] = x
	}
	if e > 0 && isQuote(s[e-1]) {
		e--
		for e > 0 && s[e-1] == '\\' && p-e < 16 {
			e-- // an escaped quote: \"key\": in a JSON string's text
		}
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
	if closer, n := escapedQuote(s, p); n > 0 {
		// \"value\": a value quoted in the text of a JSON string.
		if e := quotedEnd(s, p+n, closer); e >= 0 {
			return p + n, e, true
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

// escapedQuote returns the escaped quote at p (backslashes and a quote:
// \" in the text of a JSON string, \\\" one level deeper) and its
// length; 0 when there is none.
func escapedQuote(s string, p int) (string, int) {
	i := p
	for i < len(s) && s[i] == '\\' && i-p < 15 {
		i++
	}
	if i == p || i >= len(s) || s[i] != '"' && s[i] != '\'' {
		return "", 0
	}
	return s[p : i+1], i + 1 - p
}

// quotedEnd returns where the value that starts at i and is closed by
// closer (an escaped quote) ends, or -1: on the same line, within
// maxValue.
func quotedEnd(s string, i int, closer string) int {
	for e := i; e < len(s) && e-i <= maxValue && s[e] != '\n'; e++ {
		if s[e] == '\\' && strings.HasPrefix(s[e:], closer) {
			return e
		}
	}
	return -1
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
	if isDigits(v) && len(v) < 6 || looksPath(v) || isValidationRules(v) {
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
	if typeNames[fv] || strings.ContainsAny(v, "([{") || isIdentChain(v) || classifyAs(v, false) != 0 || namesSecret(v) {
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
