package redact

import (
	"regexp"
	"strings"
	"sync"
)

// DefaultRules returns the built-in rules, most specific first (see the
// package documentation for the list). The slice is the caller's: filter
// it (say, without "high-entropy") and pass it as Options.Rules.
func DefaultRules() []Rule { return slicesClone(defaultRules()) }

func slicesClone(r []Rule) []Rule { return append([]Rule(nil), r...) }

var defaultRules = sync.OnceValue(func() []Rule {
	var gl, generic []Rule
	for _, r := range gitleaksCompiled() {
		if r.Name == "generic-api-key" {
			generic = append(generic, r)
		} else {
			gl = append(gl, r)
		}
	}
	// Where matches overlap, the earlier rule wins: the most specific
	// first, gitleaks' rules for tokens of a known shape before ours,
	// ours for the structures gitleaks does not read before its generic
	// rule, and the catch-alls last.
	out := []Rule{privateKeyRule()}
	out = append(out, gl...)
	out = append(out, ownTokens()...)
	out = append(out, ownStructures()...)
	out = append(out, generic...)
	return append(out,
		Rule{Name: "high-entropy", Keywords: []string{"="}, find: findEnvEntropy},
		Rule{Name: "home-path", Keywords: []string{"home/", "users"}, Replace: "~", find: findHomes},
	)
})

// privateKeyRule finds PEM private keys, also with escaped newlines and
// cut short (without their END line), which gitleaks' private-key does
// not. Its Pattern (and Valid) say what it finds, to read; its finder
// (findPrivateKeys) finds the same in one pass.
func privateKeyRule() Rule {
	return Rule{
		Name:     "private-key",
		Keywords: []string{"private key", "static key"},
		find:     findPrivateKeys,
		Pattern:  privateKeyPattern(),
		Valid:    pemBody,
	}
}

// privateKeyPattern is the private-key rule's expression.
func privateKeyPattern() *regexp.Regexp {
	return regexp.MustCompile(`-----BEGIN[A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----` +
		`(?:[\s\S]*?-----END[A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----|[A-Za-z0-9+/=\s\\:,.\-]*)` +
		// RFC 4716's armour (ssh.com, PuTTY's exports), and OpenVPN's
		// static keys (tls-auth, tls-crypt).
		`|---- BEGIN SSH2 (?:ENCRYPTED )?PRIVATE KEY ----` +
		`(?:[\s\S]*?---- END SSH2 (?:ENCRYPTED )?PRIVATE KEY ----|[A-Za-z0-9+/=\s\\:,.\-"]*)` +
		`|-----BEGIN OpenVPN Static key V1-----(?:[\s\S]*?-----END OpenVPN Static key V1-----|[0-9a-fA-F\s\\n]*)`)
}

// ownTokens are tokens of a known shape that gitleaks lacks, or that its
// rules take only at their exact published length (a key cut short, an
// older or newer length still reads as one).
func ownTokens() []Rule {
	return []Rule{
		prefixed("anthropic-key", `sk-ant-[A-Za-z0-9_\-]{20,}`, looksRandom, "sk-ant-"),
		prefixed("openrouter-key", `sk-or-v1-[0-9a-f]{64}`, nil, "sk-or-"),
		prefixed("openai-key", `sk-(?:(?:proj|svcacct|admin)-[A-Za-z0-9_\-]{20,}|[A-Za-z0-9]{32,}\b)`, looksRandom, "sk-"),
		prefixed("aws-access-key-id", `A(?:KIA|SIA)[A-Z0-9]{16}\b`, notExample, "akia", "asia"),
		prefixed("github-token", `g(?:h[pousr]_[A-Za-z0-9]{36,255}\b|ithub_pat_[A-Za-z0-9_]{22,255})`, nil,
			"ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
		prefixed("gitlab-token", `glpat-[A-Za-z0-9_\-]{20,}`, nil, "glpat-"),
		prefixed("google-oauth-token", `ya29\.[0-9A-Za-z_\-]{20,}`, nil, "ya29."),
		prefixed("google-oauth-client-secret", `GOCSPX-[A-Za-z0-9_\-]{24,32}`, nil, "gocspx-"),
		prefixed("slack-token", `x(?:ox[abposre]|app)-[0-9A-Za-z\-]{10,}`, hasDigit, "xox", "xapp-"),
		prefixed("stripe-key", `(?:(?:sk|rk)_(?:live|test)_[0-9A-Za-z]{16,}|whsec_[0-9A-Za-z]{24,})`, nil,
			"sk_live_", "sk_test_", "rk_live_", "rk_test_", "whsec_"),
		prefixed("huggingface-token", `hf_[A-Za-z0-9]{30,}\b`, mixedCase, "hf_"),
		prefixed("groq-key", `gsk_[A-Za-z0-9]{48,}`, nil, "gsk_"),
		prefixed("xai-key", `xai-[A-Za-z0-9]{70,}`, nil, "xai-"),
		prefixed("vault-token", `hv[sbr]\.[A-Za-z0-9_\-]{20,}`, looksRandom, "hvs.", "hvb.", "hvr."),
		prefixed("crates-io-token", `cio[A-Za-z0-9]{30,40}\b`, mixedCase, "cio"),
		prefixed("jwt", `eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]*`, nil, "eyj"),
		{Name: "telegram-bot-token", Keywords: []string{":aa"},
			Pattern: regexp.MustCompile(`(?:\b|bot)(?P<secret>[0-9]{6,12}:AA[A-Za-z0-9_\-]{30,40})\b`)},
		{Name: "discord-webhook", Keywords: []string{"/api/webhooks/"},
			Pattern: regexp.MustCompile(`(?i)https://(?:(?:ptb|canary)\.)?discord(?:app)?\.com/api/webhooks/[0-9]{5,25}/(?P<secret>[A-Za-z0-9_\-]{30,})`)},
		{Name: "azure-sas", Keywords: []string{"sig="},
			Pattern: regexp.MustCompile(`[?&;]sig=(?P<secret>[A-Za-z0-9%+/=_\-]{16,})`)},
	}
}

// ownStructures find secrets by where they stand, which no token rule
// can: in headers, URLs, command lines, credential files, cookies and
// assignments.
func ownStructures() []Rule {
	return []Rule{
		{Name: "bearer-token", Keywords: []string{"bearer"}, find: findBearer},
		{Name: "basic-auth", Keywords: []string{"basic"}, find: findBasic},
		{Name: "authorization", Keywords: []string{"authorization"}, find: findAuthorization},
		{Name: "url-password", Keywords: []string{"://"}, find: findURLPassword},
		{Name: "cli-password", Keywords: cliKeywords(), find: findCLI},
		{Name: "cli-password", Keywords: []string{"curl"}, find: findCurlCookies},
		{Name: "cli-password", Keywords: []string{"config"}, find: findConfigSet},
		{Name: "cli-flag", Keywords: []string{"pass", "pwd", "secret", "token", "key", "auth"}, find: findFlagValues},
		{Name: "session-cookie", Keywords: []string{"cookie"}, find: findCookies},
		{Name: "netrc-password", Keywords: []string{"machine", "default"}, find: findNetrc},
		{Name: "private-key", Keywords: []string{"private-lines", "private-mac", "private-hash"}, find: findPuTTY},
		{Name: "url-password", Keywords: []string{"jdbc:oracle:"}, find: findOracleJDBC},
		{Name: "xml-secret", Keywords: []string{"</"}, find: findXMLElements},
		{Name: "session-cookie", Keywords: []string{"\ttrue\t", "\tfalse\t"}, find: findCookieJar},
		{Name: "sql-password", Keywords: []string{"password", "identified "}, find: findSQLPasswords},
		{Name: "password", Keywords: []string{"requirepass", "masterauth", "rootpw", "env", "set"}, find: findDirectives},
		{Name: "named-value", Keywords: []string{"value"}, find: findNamedValues},
		{Name: "pgpass-password", Keywords: []string{":"}, find: findPgpass},
		assignRule("aws-secret-key", keyAWS, awsSecret, "aws"),
		assignRule("password", keyPassword, nil, "pass", "pwd", "psk", "cred"),
		assignRule("secret", keySecret, nil, "secret", "key"),
		assignRule("token", keyToken, nil, "token"),
		assignRule("api-key", keyAPI, nil, "key"),
		assignRule("auth-credentials", keyAuth, userPassB64, "auth"),
		{Name: "hex-secret", Keywords: []string{"=", ":"}, find: findHexSecrets},
	}
}

// prefixed is a rule for a token with a known prefix, which must start a
// word.
func prefixed(name, pattern string, valid func(string) bool, keywords ...string) Rule {
	return Rule{
		Name:      name,
		Keywords:  keywords,
		Pattern:   regexp.MustCompile(pattern),
		Valid:     valid,
		wordStart: true,
	}
}

// isWord reports ASCII letters, digits and '_'.
func isWord(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_'
}

func isAlnum(c byte) bool { return c != '_' && isWord(c) }

func hasDigit(s string) bool { return strings.ContainsAny(s, "0123456789") }

// looksRandom tells a generated key from words that happen to share its
// prefix ("sk-learn-..."): digits and letters, and little repetition.
func looksRandom(s string) bool {
	if !hasDigit(s) {
		return false
	}
	return entropy(s) >= 3.2
}

// mixedCase tells a generated key of letters from a word: capitals and
// small letters, and little repetition.
func mixedCase(s string) bool {
	return strings.IndexFunc(s, func(r rune) bool { return r >= 'A' && r <= 'Z' }) >= 0 &&
		strings.IndexFunc(s, func(r rune) bool { return r >= 'a' && r <= 'z' }) >= 0 &&
		entropy(s) >= 3.5
}

// pemBody accepts a private key block with a body, not a template such
// as "-----BEGIN PRIVATE KEY-----\n...\n-----END PRIVATE KEY-----".
func pemBody(m string) bool {
	body := m[strings.Index(m[5:], "----")+9:] // past the BEGIN line
	if i := strings.Index(body, "---- END"); i >= 0 {
		body = body[:i]
	} else if i := strings.Index(body, "-----END"); i >= 0 {
		body = body[:i]
	}
	if c := strings.Index(body, "Comment:"); c >= 0 {
		body = body[c+lineEnd(body[c:], 0):] // RFC 4716's headers
	}
	n := 0
	for i := 0; i < len(body); i++ {
		if isAlnum(body[i]) || body[i] == '+' || body[i] == '/' {
			n++
		}
	}
	return n >= 40
}

// notExample rejects the keys of documentation: AWS's end in EXAMPLE
// (AKIAIOSFODNN7EXAMPLE, wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY).
func notExample(v string) bool { return !strings.Contains(v, "EXAMPLE") }

// awsSecret accepts the shape of an AWS secret access key: 40 characters
// of base64.
func awsSecret(v string) bool {
	if len(v) != 40 || !notExample(v) {
		return false
	}
	for i := 0; i < len(v); i++ {
		if c := v[i]; !isAlnum(c) && c != '/' && c != '+' {
			return false
		}
	}
	return looksRandom(v)
}
