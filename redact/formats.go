package redact

import (
	"strings"
	"sync"
)

// Secrets in the files of other tools an agent prints: PuTTY keys,
// Oracle connect strings, XML configuration (Maven's settings.xml),
// Netscape cookie jars, SQL that sets a password, configuration
// directives (Redis, Dockerfiles, csh and fish), and objects that name
// their value in another member ({"name": "DB_PASSWORD", "value": ...},
// Kubernetes' env lists).

// lineEnd returns the end of the line that holds i (before its newline,
// and before an escaped newline "\n" of a JSON text).
func lineEnd(s string, i int) int {
	for i < len(s) && s[i] != '\n' && s[i] != '\r' {
		if s[i] == '\\' && i+1 < len(s) && (s[i+1] == 'n' || s[i+1] == 'r') {
			return i
		}
		i++
	}
	return i
}

// nextLine returns the start of the line after the one that ends at e,
// or -1 at the end of s.
func nextLine(s string, e int) int {
	switch {
	case e >= len(s):
		return -1
	case s[e] == '\r' && e+1 < len(s) && s[e+1] == '\n':
		return e + 2
	case s[e] == '\\':
		if e+3 < len(s) && s[e+1] == 'r' && s[e+2] == '\\' && s[e+3] == 'n' {
			return e + 4
		}
		return e + 2
	}
	return e + 1
}

// findPuTTY finds the private part of a PuTTY key (.ppk): the lines
// after "Private-Lines: N", and the MAC that checks them.
func findPuTTY(s string, add func(start, end int)) {
	for i := 0; ; {
		k := indexFold(s, "private-", i)
		if k < 0 {
			return
		}
		i = k + len("private-")
		var field string
		switch {
		case hasFoldPrefix(s[i:], "lines:"):
			field = "lines:"
		case hasFoldPrefix(s[i:], "mac:"):
			field = "mac:"
		case hasFoldPrefix(s[i:], "hash:"):
			field = "hash:"
		default:
			continue
		}
		j := skipBlanks(s, i+len(field))
		e := lineEnd(s, j)
		i = e
		if field != "lines:" {
			if v := strings.TrimSpace(s[j:e]); len(v) >= 16 && isHexString(v) {
				add(j, j+len(v))
			}
			continue
		}
		n := 0
		for p := j; p < e && isDigit(s[p]) && n < 1000; p++ {
			n = n*10 + int(s[p]-'0')
		}
		if n == 0 || n > 256 {
			continue
		}
		start := nextLine(s, e)
		if start < 0 {
			continue
		}
		end, p := start, start
		for line := 0; line < n; line++ {
			le := lineEnd(s, p)
			if le == p {
				break
			}
			end = le
			if p = nextLine(s, le); p < 0 {
				break
			}
		}
		if end > start {
			add(start, end)
			i = end
		}
	}
}

func isHexString(v string) bool {
	for i := 0; i < len(v); i++ {
		if c := v[i]; !isDigit(c) && (c < 'a' || c > 'f') && (c < 'A' || c > 'F') {
			return false
		}
	}
	return v != ""
}

// findOracleJDBC finds the password of an Oracle JDBC URL with its
// credentials: jdbc:oracle:thin:user/password@host:1521:SID.
func findOracleJDBC(s string, add func(start, end int)) {
	for i := 0; ; {
		k := indexFold(s, "jdbc:oracle:", i)
		if k < 0 {
			return
		}
		i = k + len("jdbc:oracle:")
		d := i
		for d < len(s) && d-i < 8 && isAlnum(s[d]) {
			d++
		}
		if d >= len(s) || s[d] != ':' {
			continue
		}
		if ps, pe, ok := oracleLogin(s, d+1, len(s)); ok {
			add(ps, pe)
			i = pe
		}
	}
}

// oracleLogin returns the bounds of the password in the Oracle login
// user/password[@connect] that starts at i (and ends by limit): a user
// of a name's characters, a password up to '@' or the word's end.
func oracleLogin(s string, i, limit int) (int, int, bool) {
	u := i
	for u < limit && u-i < 128 && (isWord(s[u]) || s[u] == '$' || s[u] == '#') {
		u++
	}
	if u == i || u >= limit || s[u] != '/' || !isLetter(s[i]) {
		return 0, 0, false
	}
	ps := u + 1
	pe := ps
	for pe < limit && pe-ps <= maxValue && s[pe] != '@' && s[pe] != '/' && !isWordEnd(s[pe]) && !isQuote(s[pe]) {
		pe++
	}
	if pe == ps || pe < limit && s[pe] == '/' {
		return 0, 0, false // a path, not a login
	}
	if v := s[ps:pe]; isPlaceholder(v) || cliPlaceholder(v) {
		return 0, 0, false
	}
	return ps, pe, true
}

// findXMLElements finds the text of XML elements whose name names a
// secret: <password>x</password> (Maven's settings.xml, and Maven's
// encrypted {...} passwords), <client_secret>x</client_secret>.
func findXMLElements(s string, add func(start, end int)) {
	for i := 0; ; {
		k := strings.Index(s[i:], "</")
		if k < 0 {
			return
		}
		k += i
		i = k + 2
		ne := i
		for ne < len(s) && ne-i < 64 && (isKeyChar(s[ne]) || s[ne] == ':') {
			ne++
		}
		if ne == i || ne >= len(s) || s[ne] != '>' {
			continue
		}
		name := s[i:ne]
		local := name[strings.LastIndexByte(name, ':')+1:]
		if classify(local) == 0 {
			continue
		}
		// The element's text: back to its start tag, <name> or <name ...>.
		vs := k
		for vs > 0 && k-vs <= maxValue && s[vs-1] != '>' && s[vs-1] != '<' {
			vs--
		}
		if vs == 0 || s[vs-1] != '>' {
			continue
		}
		open := strings.LastIndexByte(s[max(0, vs-1-512):vs-1], '<')
		if open < 0 {
			continue
		}
		open += max(0, vs-1-512)
		tag := s[open+1 : vs-1]
		if !strings.HasPrefix(tag, name) || len(tag) > len(name) && !isBlank(tag[len(name)]) || strings.HasSuffix(tag, "/") {
			continue
		}
		v := strings.TrimSpace(s[vs:k])
		if v == "" {
			continue
		}
		start := vs + strings.Index(s[vs:k], v)
		if mavenEncrypted(v) || plausibleValue(v, true, false, "") && !namesSecret(v) {
			add(start, start+len(v))
		}
	}
}

// mavenEncrypted reports a password Maven encrypted with the master
// password: {base64}, which the master password decrypts.
func mavenEncrypted(v string) bool {
	if len(v) < 18 || v[0] != '{' || v[len(v)-1] != '}' {
		return false
	}
	for i := 1; i < len(v)-1; i++ {
		if c := v[i]; !isAlnum(c) && c != '+' && c != '/' && c != '=' {
			return false
		}
	}
	return true
}

// findCookieJar finds the values of a Netscape cookie file (curl's -c,
// wget's, browsers' exports): domain, TRUE|FALSE, path, TRUE|FALSE,
// expiry, name, value, separated by tabs.
func findCookieJar(s string, add func(start, end int)) {
	trues, falses := foldCursor{w: "\ttrue\t"}, foldCursor{w: "\tfalse\t"}
	for i := 0; ; {
		k := trues.from(s, i)
		if f := falses.from(s, i); f >= 0 && (k < 0 || f < k) {
			k = f
		}
		if k < 0 {
			return
		}
		ls := strings.LastIndexByte(s[:k], '\n') + 1
		le := lineEnd(s, k)
		i = max(le, k+1)
		fields := strings.Split(strings.TrimRight(s[ls:le], "\r"), "\t")
		if len(fields) != 7 || !isBool(fields[1]) || !isBool(fields[3]) || !isDigits(fields[4]) && fields[4] != "0" {
			continue
		}
		name, v := fields[5], fields[6]
		if v == "" || isPlaceholder(v) || !sessionCookie(name, v) && len(v) < 8 {
			continue
		}
		vs := ls + len(strings.TrimRight(s[ls:le], "\r")) - len(v)
		add(vs, vs+len(v))
	}
}

func isBool(s string) bool { return strings.EqualFold(s, "true") || strings.EqualFold(s, "false") }

// findSQLPasswords finds the passwords SQL sets: CREATE|ALTER USER|ROLE
// ... [WITH] [ENCRYPTED] PASSWORD 'x', IDENTIFIED BY 'x' (or unquoted,
// Oracle's), IDENTIFIED WITH plugin BY 'x', SET PASSWORD = PASSWORD('x').
func findSQLPasswords(s string, add func(start, end int)) {
	pw, id := foldCursor{w: "password"}, foldCursor{w: "identified "}
	for i := 0; ; {
		k := pw.from(s, i)
		b := id.from(s, i)
		if k < 0 && b < 0 {
			return
		}
		if b >= 0 && (k < 0 || b < k) {
			i = b + len("identified ")
			if b > 0 && isWord(s[b-1]) {
				continue
			}
			j := skipBlanks(s, i)
			if hasFoldPrefix(s[j:], "with ") {
				// IDENTIFIED WITH plugin BY 'x'
				p := skipBlanks(s, j+5)
				for p < len(s) && p-j < 80 && (isWord(s[p]) || s[p] == '\'' || s[p] == '"') {
					p++
				}
				j = skipBlanks(s, p)
			}
			if !hasFoldPrefix(s[j:], "by ") {
				continue
			}
			j = skipBlanks(s, j+3)
			if hasFoldPrefix(s[j:], "password ") {
				j = skipBlanks(s, j+len("password "))
			}
			if vs, ve, ok := sqlValue(s, j, true); ok {
				add(vs, ve)
				i = ve
			}
			continue
		}
		i = k + len("password")
		if k > 0 && isWord(s[k-1]) || i < len(s) && isWord(s[i]) {
			continue
		}
		j := skipBlanks(s, i)
		if j < len(s) && s[j] == '(' {
			j++ // PASSWORD('x')
		} else if j == i {
			continue
		}
		if j < len(s) && s[j] == '\'' {
			if vs, ve, ok := sqlValue(s, j, false); ok {
				add(vs, ve)
				i = ve
			}
		}
	}
}

// sqlValue returns the bounds of the SQL literal at j ('x', "x", or, when
// bare is allowed, a word), false for NULL and placeholders.
func sqlValue(s string, j int, bare bool) (int, int, bool) {
	if j >= len(s) {
		return 0, 0, false
	}
	var vs, ve int
	if q := s[j]; q == '\'' || q == '"' {
		e := j + 1
		for e < len(s) && s[e] != q && s[e] != '\n' && e-j <= maxValue {
			e++
		}
		if e >= len(s) || s[e] != q {
			return 0, 0, false
		}
		vs, ve = j+1, e
	} else if bare {
		e := j
		for e < len(s) && !isWordEnd(s[e]) && s[e] != ',' && !isQuote(s[e]) && e-j <= maxValue {
			e++
		}
		vs, ve = j, e
		if v := s[vs:ve]; strings.EqualFold(v, "values") || strings.EqualFold(v, "password") || strings.EqualFold(v, "the") {
			return 0, 0, false
		}
	} else {
		return 0, 0, false
	}
	v := s[vs:ve]
	if v == "" || strings.EqualFold(v, "null") || isPlaceholder(v) || cliPlaceholder(v) {
		return 0, 0, false
	}
	return vs, ve, true
}

// directives are the configuration lines "<directive> <value>" that set
// a password (Redis, OpenLDAP, Dovecot), and those that set a variable,
// "<directive> NAME VALUE" (Dockerfile's ENV, csh's setenv, fish's set).
var directives = map[string]bool{"requirepass": true, "masterauth": true, "rootpw": true}

var varDirectives = map[string]bool{"env": true, "setenv": true, "set": true}

var directiveNames = sync.OnceValue(func() *litSet {
	ls := newLitSet([]string{"requirepass", "masterauth", "rootpw", "env", "setenv", "set"})
	return &ls
})

// findDirectives finds the values of configuration directives that set
// a password, or a variable whose name names a secret: "requirepass X",
// "ENV DB_PASSWORD X", "setenv DB_PASSWORD X", "set -gx DB_PASSWORD X".
func findDirectives(s string, add func(start, end int)) {
	next := 0
	directiveNames().each(s, func(at, n int) {
		if at < next {
			return
		}
		// At a line's start, past its indentation (or after a shell's
		// separator).
		b := at
		for b > 0 && (s[b-1] == ' ' || s[b-1] == '\t') {
			b--
		}
		if b > 0 && s[b-1] != '\n' && s[b-1] != ';' && s[b-1] != '&' && s[b-1] != '|' && !(b > 1 && s[b-2] == '\\' && s[b-1] == 'n') {
			return
		}
		e := at + n
		if e >= len(s) || s[e] != ' ' && s[e] != '\t' {
			return
		}
		word := foldString(s[at:e])
		le := lineEnd(s, e)
		next = le
		j := skipBlanks(s, e)
		if directives[word] {
			if vs, ve, ok := lineValue(s, j, le); ok {
				add(vs, ve)
			}
			return
		}
		if !varDirectives[word] {
			return
		}
		if word == "set" {
			// fish: set [-gxUl...] NAME VALUE
			sawFlag := false
			for j < le && s[j] == '-' {
				sawFlag = true
				for j < le && !isBlank(s[j]) {
					j++
				}
				j = skipBlanks(s, j)
			}
			if !sawFlag {
				return
			}
		}
		ne := j
		for ne < le && isKeyChar(s[ne]) {
			ne++
		}
		if ne == j || ne >= le || s[ne] != ' ' && s[ne] != '\t' || classify(s[j:ne]) == 0 {
			return
		}
		if vs, ve, ok := lineValue(s, skipBlanks(s, ne), le); ok {
			add(vs, ve)
		}
	})
}

// lineValue returns the bounds of the value that is the rest of a line
// (from j to le), without its quotes; false when it is no secret.
func lineValue(s string, j, le int) (int, int, bool) {
	e := le
	for e > j && isBlank(s[e-1]) {
		e--
	}
	if e-j >= 2 && isQuote(s[j]) && s[e-1] == s[j] {
		j, e = j+1, e-1
	}
	v := s[j:e]
	if !plausibleValue(v, true, false, "") || strings.ContainsAny(v, " \t") && !strings.HasPrefix(s[j-1:], `"`) && !strings.HasPrefix(s[j-1:], "'") {
		return 0, 0, false
	}
	return j, e, true
}

// findNamedValues finds the values of objects that name them in another
// member, in a text: JSON ({"name": "DB_PASSWORD", "value": "x"}) that is
// no JSON value as a whole (JSON redacts those), and YAML's lists of
// such objects ("- name: DB_PASSWORD\n  value: x", a Kubernetes
// container's env).
func findNamedValues(s string, add func(start, end int)) {
	prev := 0 // the end of the last value looked at: no window goes back past it
	for i := 0; ; {
		k := indexFold(s, "value", i)
		if k < 0 {
			return
		}
		i = k + len("value")
		if k > 0 && isWord(s[k-1]) || i < len(s) && isWord(s[i]) {
			continue
		}
		quoted := k > 0 && s[k-1] == '"' && i < len(s) && s[i] == '"'
		var vs, ve int
		var ok bool
		if quoted {
			vs, ve, ok = memberString(s, i+1)
		} else {
			vs, ve, ok = yamlValue(s, k, i)
		}
		if !ok {
			continue
		}
		from := max(prev, k-512)
		prev = ve
		i = ve
		var name string
		var secure, found bool
		if quoted {
			name, secure, found = jsonName(s[from:k])
		} else {
			name, found = yamlName(s, from, k)
		}
		if !found && !secure {
			continue
		}
		v := s[vs:ve]
		if plausibleValue(v, true, false, "") && len(v) <= maxValue &&
			(classify(name) != 0 || secure || sessionName(name)) && !namesSecret(v) {
			add(vs, ve)
		}
	}
}

// memberString returns the bounds of the string after the member name
// that ends at i (past ':' and blanks).
func memberString(s string, i int) (int, int, bool) {
	j := skipBlanks(s, i)
	if j >= len(s) || s[j] != ':' {
		return 0, 0, false
	}
	j = skipBlanks(s, j+1)
	if j >= len(s) || s[j] != '"' {
		return 0, 0, false
	}
	for e := j + 1; e < len(s) && e-j <= maxValue && s[e] != '\n'; e++ {
		if s[e] == '\\' {
			e++
			continue
		}
		if s[e] == '"' {
			return j + 1, e, true
		}
	}
	return 0, 0, false
}

// jsonName returns the "name" (or "Name", "key", "label") member of the
// innermost object that w (the text before a "value" member) is in, and
// whether it has a "Type" of "SecureString" or "CONCEALED".
func jsonName(w string) (name string, secure, ok bool) {
	if open := strings.LastIndexByte(w, '{'); open >= 0 {
		w = w[open:]
	} else {
		return "", false, false
	}
	if strings.IndexByte(w, '}') >= 0 {
		return "", false, false
	}
	for _, key := range []string{`"name"`, `"Name"`, `"key"`, `"Key"`, `"label"`, `"Label"`} {
		if at := strings.Index(w, key); at >= 0 {
			if vs, ve, found := memberString(w, at+len(key)); found {
				name, ok = w[vs:ve], true
				break
			}
		}
	}
	for _, key := range []string{`"Type"`, `"type"`} {
		if at := strings.Index(w, key); at >= 0 {
			if vs, ve, found := memberString(w, at+len(key)); found && (w[vs:ve] == "SecureString" || w[vs:ve] == "CONCEALED") {
				secure = true
			}
		}
	}
	return name, secure, ok
}

// yamlValue returns the bounds of the value of a YAML "value:" key at k
// (ending at i), the rest of its line without quotes.
func yamlValue(s string, k, i int) (int, int, bool) {
	if i >= len(s) || s[i] != ':' {
		return 0, 0, false
	}
	b := k
	for b > 0 && (s[b-1] == ' ' || s[b-1] == '\t') {
		b--
	}
	if b > 1 && s[b-1] == '-' && s[b-2] == ' ' || b > 0 && s[b-1] == '-' {
		b-- // "- value: x"
		for b > 0 && (s[b-1] == ' ' || s[b-1] == '\t') {
			b--
		}
	}
	if b > 0 && s[b-1] != '\n' && !(b > 1 && s[b-2] == '\\' && s[b-1] == 'n') {
		return 0, 0, false
	}
	j := skipBlanks(s, i+1)
	le := lineEnd(s, j)
	e := le
	for e > j && isBlank(s[e-1]) {
		e--
	}
	if e-j >= 2 && (s[j] == '"' || s[j] == '\'') && s[e-1] == s[j] {
		j, e = j+1, e-1
	}
	if e <= j || s[j] == '|' || s[j] == '>' || s[j] == '&' || s[j] == '*' {
		return 0, 0, false
	}
	return j, e, true
}

// yamlName returns the name of the YAML list item (or mapping) a
// "value:" key at k belongs to: a "name:" (or "key:") key of the lines
// before it, no deeper than two lines back, from on.
func yamlName(s string, from, k int) (string, bool) {
	ls := k
	for ls > from && s[ls-1] != '\n' {
		ls--
	}
	for lines := 0; lines < 3 && ls > from; lines++ {
		pe := ls - 1 // the newline ending the line before
		ps := strings.LastIndexByte(s[from:pe], '\n') + 1 + from
		if ps < from {
			return "", false
		}
		line := strings.TrimLeft(s[ps:pe], " \t-")
		for _, key := range []string{"name:", "key:", "Name:", "Key:"} {
			if rest, ok := strings.CutPrefix(line, key); ok {
				v := strings.Trim(strings.TrimSpace(rest), `"'`)
				return v, v != ""
			}
		}
		ls = ps
	}
	return "", false
}
