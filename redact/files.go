package redact

import (
	"encoding/base64"
	"strings"
	"unicode/utf8"
)

// Credentials in the files and headers an agent prints: .netrc, .pgpass,
// Docker's config.json ("auth": base64 of user:password), the
// Authorization header of any scheme, session cookies, and hex secrets
// assigned to names no rule knows.

// findNetrc finds the password of a .netrc entry: machine HOST [login
// USER] [account A] password SECRET (or default ...), on one line or
// several.
func findNetrc(s string, add func(start, end int)) {
	for i := 0; ; {
		k := indexFold(s, "password", i)
		if k < 0 {
			return
		}
		i = k + len("password")
		if k > 0 && !isBlank(s[k-1]) || i >= len(s) || !isBlank(s[i]) {
			continue
		}
		// The words before it must be an entry's: machine, login,
		// account, port, each with its value, or default.
		if !netrcBefore(s, k) {
			continue
		}
		vs, ve, _, ok := shellWord(s, i)
		if !ok || vs >= ve || isPlaceholder(s[vs:ve]) {
			continue
		}
		add(vs, ve)
		i = ve
	}
}

// netrcBefore reports whether "password" at k follows the tokens of a
// .netrc entry that starts with machine or default.
func netrcBefore(s string, k int) bool {
	e := k
	for pairs := 0; pairs < 6; pairs++ {
		// The token before e, then the one before it.
		ve, vs := prevToken(s, e)
		if vs < 0 {
			return false
		}
		if s[vs:ve] == "default" {
			return true
		}
		ke, ks := prevToken(s, vs)
		if ks < 0 {
			return false
		}
		switch s[ks:ke] {
		case "machine":
			return true
		case "login", "account", "port":
			e = ks
		default:
			return false
		}
	}
	return false
}

// prevToken returns the bounds (end, start) of the blank-separated token
// that ends before e, start -1 when there is none.
func prevToken(s string, e int) (int, int) {
	for e > 0 && isBlank(s[e-1]) {
		e--
	}
	b := e
	for b > 0 && !isBlank(s[b-1]) && e-b < 256 {
		b--
	}
	if b == e {
		return e, -1
	}
	return e, b
}

// findPgpass finds the password of .pgpass lines:
// host:port:database:user:password, the port digits or *.
func findPgpass(s string, add func(start, end int)) {
	for ls := 0; ls < len(s); {
		le := strings.IndexByte(s[ls:], '\n')
		if le < 0 {
			le = len(s)
		} else {
			le += ls
		}
		line := s[ls:le]
		if strings.Count(line, ":") >= 4 && len(line) < 1024 {
			if ps, pe, ok := pgpassLine(line); ok {
				add(ls+ps, ls+pe)
			}
		}
		ls = le + 1
	}
}

// pgpassLine returns the bounds of the password in a .pgpass line.
func pgpassLine(line string) (int, int, bool) {
	line = strings.TrimRight(line, "\r")
	var fields [5][2]int
	n, start := 0, 0
	for i := 0; i < len(line); i++ {
		switch line[i] {
		case '\\':
			i++
		case ':':
			if n == 4 {
				return 0, 0, false // more fields than .pgpass has
			}
			fields[n] = [2]int{start, i}
			n++
			start = i + 1
		case ' ', '\t':
			if n < 4 {
				return 0, 0, false
			}
		}
	}
	if n != 4 {
		return 0, 0, false
	}
	fields[4] = [2]int{start, len(line)}
	f := func(k int) string { return line[fields[k][0]:fields[k][1]] }
	host, port := f(0), f(1)
	if host == "" || port == "" || f(2) == "" || f(3) == "" || fields[4][0] == fields[4][1] {
		return 0, 0, false
	}
	if port != "*" && (!isDigits(port) || len(port) > 5) {
		return 0, 0, false
	}
	letter := host == "*"
	for i := 0; i < len(host); i++ {
		c := host[i]
		if !isAlnum(c) && c != '.' && c != '-' && c != '_' && c != '*' && c != '[' && c != ']' {
			return 0, 0, false
		}
		letter = letter || isLower(c) || isUpper(c)
	}
	if !letter || isPlaceholder(f(4)) {
		return 0, 0, false
	}
	return fields[4][0], fields[4][1], true
}

// userPassB64 accepts base64 that decodes to user:password (Docker's
// "auth", .npmrc's _auth).
func userPassB64(v string) bool {
	v = strings.TrimRight(v, "=")
	if len(v) < 6 || len(v) > maxValue {
		return false
	}
	dec, err := base64.RawStdEncoding.DecodeString(v)
	if err != nil {
		dec, err = base64.RawURLEncoding.DecodeString(v)
	}
	if err != nil || !utf8.Valid(dec) || !printable(dec) {
		return false
	}
	c := strings.IndexByte(string(dec), ':')
	return c > 0 && c < len(dec)-1
}

// skipQuote returns the index past the quote at j, escaped or not (\"
// in the text of a JSON string), or j when there is none.
func skipQuote(s string, j int) int {
	if j < len(s) && isQuote(s[j]) {
		return j + 1
	}
	if _, n := escapedQuote(s, j); n > 0 {
		return j + n
	}
	return j
}

// findAuthorization finds the credentials of an Authorization (or
// Proxy-Authorization) header, whatever its scheme: "Token X", "Bot X",
// "SSWS X", "Digest username=..., response=...", "AWS4-HMAC-SHA256
// Credential=..., Signature=...", or a bare token. Header lines, JSON
// members ("Authorization": "Token X") and calls
// (.set("Authorization", "Token X")) alike.
func findAuthorization(s string, add func(start, end int)) {
	for i := 0; ; {
		k := indexFold(s, "authorization", i)
		if k < 0 {
			return
		}
		i = k + len("authorization")
		if k > 0 && isAlnum(s[k-1]) && !strings.HasSuffix(foldString(s[max(0, k-6):k]), "proxy-") {
			continue
		}
		// The separator: ':' or '=' (a header, a member), or ',' between
		// the quoted name and the quoted value of a call.
		j := skipQuote(s, i)
		j = skipBlanks(s, j)
		if j >= len(s) || (s[j] != ':' && s[j] != '=' && s[j] != ',') {
			continue
		}
		call := s[j] == ','
		j = skipBlanks(s, j+1)
		quote := byte(0)
		closer, n := escapedQuote(s, j)
		switch {
		case n > 0:
			j += n // \"value\" in the text of a JSON string
		case j < len(s) && isQuote(s[j]):
			quote = s[j]
			j++
		case call:
			continue
		}
		// The value: to the closing quote, or to the end of the line.
		e := j
		for e < len(s) && s[e] != '\n' && s[e] != '\r' && e-j < maxValue {
			if quote != 0 && s[e] == quote && s[e-1] != '\\' {
				break
			}
			if n > 0 && s[e] == '\\' && strings.HasPrefix(s[e:], closer) {
				break
			}
			if quote == 0 && (isQuote(s[e]) || s[e] == '\\' && e+1 < len(s) && (s[e+1] == 'n' || s[e+1] == 'r')) {
				break // the end of a quoted argument, an escaped newline in a JSON text
			}
			e++
		}
		if cs, ce, ok := authCredentials(s, j, e); ok {
			add(cs, ce)
		}
		i = max(i, e) // resume after what was read
	}
}

// authCredentials returns the bounds of the credentials in the header
// value s[vs:ve]: what follows the scheme, when it is one token or a
// list of auth-params; the token itself when there is no scheme.
func authCredentials(s string, vs, ve int) (int, int, bool) {
	for vs < ve && isBlank(s[vs]) {
		vs++
	}
	for ve > vs && (isBlank(s[ve-1]) || s[ve-1] == ',' || s[ve-1] == ';') {
		ve--
	}
	v := s[vs:ve]
	if v == "" || isPlaceholder(v) || strings.ContainsAny(v[:1], "+`") {
		return 0, 0, false
	}
	sp := strings.IndexAny(v, " \t")
	if sp < 0 {
		// A bare token: not a scheme's name alone, nor a word or a
		// name of words ("AuthHeaderValue"): with digits, or random.
		if len(v) >= 8 && tokenAt(v, 0) == len(v) && !authSchemes[foldString(v)] && !proseWords[foldString(v)] &&
			(hasDigit(v) || len(v) >= 12 && entropy(v) >= 3.5 && !wordsOnly(v)) {
			return vs, ve, true
		}
		return 0, 0, false
	}
	scheme := v[:sp]
	for i := 0; i < len(scheme); i++ {
		if c := scheme[i]; !isAlnum(c) && c != '-' && c != '_' {
			return 0, 0, false
		}
	}
	cs := vs + sp
	for cs < ve && isBlank(s[cs]) {
		cs++
	}
	cred := s[cs:ve]
	if len(cred) < 6 || isPlaceholder(cred) || proseWords[foldString(cred)] {
		return 0, 0, false
	}
	if strings.ContainsAny(cred, " \t") && !strings.Contains(cred, "=") {
		return 0, 0, false // prose: "Authorization: the header carries it"
	}
	if !strings.Contains(cred, "=") && tokenAt(cred, 0) != len(cred) {
		return 0, 0, false
	}
	if !hasDigit(cred) && !strings.Contains(cred, "=") && entropy(cred) < 3 {
		return 0, 0, false // a word
	}
	return cs, ve, true
}

// authSchemes are the names of HTTP authentication schemes, which an
// Authorization header may hold alone (prose, a template).
var authSchemes = map[string]bool{
	"bearer": true, "basic": true, "digest": true, "negotiate": true, "ntlm": true, "oauth": true,
	"token": true, "bot": true, "ssws": true, "hoba": true, "mutual": true, "vapid": true,
	"scram-sha-256": true, "scram-sha-1": true, "aws4-hmac-sha256": true, "apikey": true, "required": true,
	"optional": true, "header": true, "authorization": true,
}

// wordsOnly reports a name made of words ("AuthHeaderValue",
// "requestToken"): letters whose words average four or more.
func wordsOnly(v string) bool {
	words, letters := 0, 0
	for i := 0; i < len(v); i++ {
		if !isLetter(v[i]) {
			return false
		}
	}
	splitWords(v, func(a, b int) { words++; letters += b - a })
	return words > 0 && letters >= 4*words
}

// sessionish are the parts of cookie names that hold a session or a
// credential.
var sessionish = []string{"sess", "sid", "token", "auth", "jwt", "login", "remember", "csrf", "xsrf",
	"secret", "key", "credential", "cred", "user_id", "uid", "ticket", "saml", "oidc", "oauth", "identity"}

// findCookies finds the values of session cookies: in Cookie and
// Set-Cookie headers (also as JSON members), and in curl's -b and
// --cookie.
func findCookies(s string, add func(start, end int)) {
	for i := 0; ; {
		k := indexFold(s, "cookie", i)
		if k < 0 {
			return
		}
		i = k + len("cookie")
		setCookie := k >= 4 && strings.EqualFold(s[k-4:k], "set-")
		if !setCookie && k > 0 && isAlnum(s[k-1]) {
			continue
		}
		j := skipQuote(s, i)
		j = skipBlanks(s, j)
		var vs, ve int
		switch {
		case j < len(s) && (s[j] == ':' || s[j] == '='):
			// Cookie: a=b; c=d (a header, a member, document.cookie =)
			j = skipBlanks(s, j+1)
			quote := byte(0)
			closer, n := escapedQuote(s, j)
			if n > 0 {
				j += n // \"a=b\" in the text of a JSON string
			} else if j < len(s) && isQuote(s[j]) {
				quote = s[j]
				j++
			}
			vs, ve = j, j
			for ve < len(s) && s[ve] != '\n' && s[ve] != '\r' && ve-vs < maxValue && (quote == 0 || s[ve] != quote) {
				if quote == 0 && s[ve] == '\\' && (n > 0 && strings.HasPrefix(s[ve:], closer) || ve+1 < len(s) && s[ve+1] == 'n') {
					break
				}
				ve++
			}
		case !setCookie && k >= 2 && s[k-2:k] == "--" && j > i:
			// curl --cookie 'a=b; c=d'
			var ok bool
			if vs, ve, _, ok = shellWord(s, i); !ok {
				continue
			}
		default:
			continue
		}
		cookiePairs(s, vs, ve, setCookie, add)
		i = max(i, ve) // resume after what was read: each byte is read once
	}
}

// findCurlCookies finds curl's -b 'a=b; c=d' (a file name has no '=').
func findCurlCookies(s string, add func(start, end int)) {
	for at := range indices(s, "curl") {
		if !isCommandStart(s, at) || at+4 < len(s) && !isWordEnd(s[at+4]) {
			continue
		}
		i := at + 4
		for n := 0; n < maxArgs; n++ {
			vs, ve, next, ok := shellWord(s, i)
			if !ok {
				break
			}
			i = next
			if w := s[vs:ve]; w == "-b" || w == "--cookie" {
				cs, ce, cnext, ok := shellWord(s, i)
				if !ok {
					break
				}
				cookiePairs(s, cs, ce, false, add)
				i = cnext
			} else if strings.HasPrefix(w, "-b") && strings.Contains(w, "=") {
				cookiePairs(s, vs+2, ve, false, add)
			}
		}
	}
}

// cookiePairs reports the values of the session cookies in the cookie
// list s[vs:ve] ("a=b; c=d"); of a Set-Cookie header only the first pair
// is a cookie, the rest its attributes.
func cookiePairs(s string, vs, ve int, setCookie bool, add func(start, end int)) {
	for p := vs; p < ve; {
		e := strings.IndexByte(s[p:ve], ';')
		if e < 0 {
			e = ve
		} else {
			e += p
		}
		pair := s[p:e]
		if eq := strings.IndexByte(pair, '='); eq > 0 {
			name := strings.TrimSpace(pair[:eq])
			val0 := p + eq + 1
			val1 := e
			for val0 < val1 && isBlank(s[val0]) {
				val0++
			}
			for val1 > val0 && isBlank(s[val1-1]) {
				val1--
			}
			if val1-val0 >= 2 && s[val0] == '"' && s[val1-1] == '"' {
				val0, val1 = val0+1, val1-1
			}
			if v := s[val0:val1]; v != "" && !isPlaceholder(v) && sessionCookie(name, v) {
				add(val0, val1)
			}
		}
		if setCookie {
			return
		}
		p = e + 1
	}
}

// sessionCookie reports a cookie that holds a session or a credential:
// by its name, or by a value that looks generated.
func sessionCookie(name, v string) bool {
	fn := foldString(name)
	for _, w := range sessionish {
		if strings.Contains(fn, w) {
			return len(v) >= 4
		}
	}
	return len(v) >= 16 && hasDigit(v) && entropy(v) >= 3.5
}

// hashWords name what a hex value is when it is no secret: a hash, a
// commit, an id.
var hashWords = map[string]bool{
	"sha": true, "sha1": true, "sha256": true, "sha384": true, "sha512": true, "md5": true, "hash": true,
	"digest": true, "checksum": true, "sum": true, "commit": true, "rev": true, "revision": true, "head": true,
	"ref": true, "oid": true, "tree": true, "parent": true, "blob": true, "object": true, "etag": true,
	"fingerprint": true, "integrity": true, "id": true, "ids": true, "uuid": true, "guid": true, "version": true,
	"build": true, "trace": true, "span": true, "request": true, "color": true, "colour": true, "hex": true,
	"sri": true, "crc": true, "crc32": true, "mac": true, "address": true, "addr": true, "txid": true,
	"tx": true, "block": true, "cid": true, "image": true, "layer": true, "container": true, "run": true,
	"tag": true, "nonce": true, "commitid": true, "hashsum": true, "shasum": true, "sha1sum": true,
	"sha256sum": true, "sha512sum": true, "md5sum": true, "b2sum": true, "blake2b": true, "blake2s": true,
	"blake3": true, "sha3": true, "sha224": true, "keccak": true, "xxhash": true, "before": true, "after": true,
	"base": true, "node": true, "parents": true, "revert": true, "reverts": true, "reverted": true,
	"drc": true, "uid": true, "changeset": true, "cset": true, "revs": true, "hashes": true, "sums": true,
	"merge": true, "upstream": true, "origin": true, "oids": true,
}

// hexKey accepts the key of a hex secret: any name but those of hashes
// and ids.
func hexKey(key string) bool {
	if key == "" || len(key) > 64 {
		return false
	}
	words, hash := 0, hashWords[foldString(strings.TrimLeft(key, "-_$"))]
	splitWords(key, func(a, b int) {
		words++
		hash = hash || hashWords[foldString(key[a:b])]
	})
	return words > 0 && !hash
}

// hexSecret accepts 32 to 128 hex digits, letters and digits mixed, of
// one case.
func hexSecret(v string) bool {
	if len(v) < 32 || len(v) > 128 {
		return false
	}
	lower, upper, digit := false, false, false
	for i := 0; i < len(v); i++ {
		switch c := v[i]; {
		case isDigit(c):
			digit = true
		case c >= 'a' && c <= 'f':
			lower = true
		case c >= 'A' && c <= 'F':
			upper = true
		default:
			return false
		}
	}
	return digit && lower != upper && entropy(v) >= 3
}

// findHexSecrets finds hex secrets assigned to names no other rule knows
// (SESSION_KEY=<32 hex>), but those of hashes and ids.
func findHexSecrets(s string, add func(start, end int)) {
	// The value first: 32 hex digits are rarer than keys.
	for p := 0; p < len(s); p++ {
		c := s[p]
		if c != '=' && c != ':' {
			continue
		}
		v := p + 1
		for v < len(s) && v-p < 8 && (s[v] == ' ' || s[v] == '\t' || isQuote(s[v])) {
			v++
		}
		e := v
		for e < len(s) && e-v <= 128 && (isDigit(s[e]) || s[e] >= 'a' && s[e] <= 'f' || s[e] >= 'A' && s[e] <= 'F') {
			e++
		}
		if e-v < 32 {
			continue
		}
		// The key before, and the rest of the line after (a value must
		// be the whole of an unquoted "key: value").
		le := e
		for le < len(s) && s[le] != '\n' && le-e < 512 {
			le++
		}
		from := max(0, p-80)
		findAssignKeys(s[from:min(len(s), le+1)], hexKey, hexSecret, func(start, end int) {
			add(start+from, end+from)
		})
		p = e
	}
}
