// Package redact finds secrets and personal paths in text and JSON and
// replaces them before a session leaves the machine (export --redact) or
// reaches disk at all (session.Redact, the Store middleware).
//
// It imports nothing of this module but internal/jsonx (the standard
// library's peer), so that the session package can use it.
//
// # Use
//
// New(nil) gives a Redactor with the default rules and the current
// user's home directory. String redacts a text; JSON redacts every string
// of a JSON value in place, keeping every other byte as it was (so a
// session's lines keep their member order, numbers and escapes), and
// returns its input itself when nothing changed. Both return a Report:
// counts per rule name, never the secrets.
//
// A secret is replaced by "[REDACTED:<rule>]"; keys, prefixes and
// punctuation around it stay, so the text still reads:
// "password=[REDACTED:password]", "Authorization: Bearer
// [REDACTED:bearer-token]", "postgres://app:[REDACTED:url-password]@db".
// Home directories become "~": "/home/alice/src" is "~/src". Options.Custom
// runs the host's own redactor after the rules, counted as "custom".
//
// # Rules
//
// DefaultRules, in order (where matches overlap the earlier rule wins):
//
//	private-key         -----BEGIN ... PRIVATE KEY----- to its END line (or to
//	                    the end of its base64 when cut short); RSA, EC, DSA,
//	                    OPENSSH, ENCRYPTED, PGP ... PRIVATE KEY BLOCK
//	anthropic-key       sk-ant-api03-..., sk-ant-admin01-..., sk-ant-oat01-...
//	openrouter-key      sk-or-v1-<64 hex>
//	openai-key          sk-proj-..., sk-svcacct-..., sk-admin-..., sk-<32+
//	                    letters and digits> (also other providers' sk- keys)
//	aws-access-key-id   AKIA... and ASIA... (20 characters)
//	github-token        ghp_, gho_, ghu_, ghs_, ghr_ and github_pat_ tokens
//	gitlab-token        glpat-...
//	google-api-key      AIza + 35 characters
//	google-oauth-token  ya29....
//	slack-token         xoxb-, xoxp-, xoxa-, xoxo-, xoxr-, xoxs-, xoxe-, xapp-
//	slack-webhook       https://hooks.slack.com/services|workflows|triggers/...
//	stripe-key          sk_live_, sk_test_, rk_live_, rk_test_, whsec_
//	                    (publishable pk_ keys are not secrets)
//	npm-token           npm_ + 36
//	huggingface-token   hf_...
//	sendgrid-key        SG.<22>.<43>
//	digitalocean-token  dop_v1_, doo_v1_, dor_v1_ + 64 hex
//	pypi-token          pypi-AgEIcHlwaS5vcmc...
//	shopify-token       shpat_, shpca_, shppa_, shpss_ + 32 hex
//	groq-key            gsk_...
//	xai-key             xai-...
//	perplexity-key      pplx-...
//	jwt                 eyJ<header>.<payload>.<signature>, base64url
//	bearer-token        the token after "Bearer " (12+ characters, a digit)
//	basic-auth          the credentials after "Basic " when they decode to
//	                    user:password
//	url-password        the password of scheme://user:password@host
//	aws-secret-key      40 characters of base64 assigned to a key naming an
//	                    AWS secret (aws_secret_access_key = ...)
//	password            values assigned to keys ending in password, passwd,
//	                    passphrase, pass or pwd (not the shell's PWD)
//	secret              ... to keys ending in secret, secret_key, private_key,
//	                    signing_key, encryption_key
//	token               ... to keys ending in token (not token_type, max_tokens)
//	api-key             ... to keys ending in api_key, apiKey, access_key,
//	                    auth_key, app_key, X-API-Key
//	high-entropy        the value of NAME=value at the start of a line (an env
//	                    file, an export; NAME in capitals, digits and _) when
//	                    it is 20+ characters of mixed case and digits with a
//	                    Shannon entropy of 3.5 bits or more per byte, whatever
//	                    NAME
//	home-path           /home/<user>, /Users/<user>, C:\Users\<user> (also
//	                    C:\\Users\\<user> and C:/Users/<user>), replaced by "~"
//
// Options.Home adds the given directories (by default the current user's
// home), also replaced by "~" and counted as home-path.
//
// # Assignments
//
// The assignment rules (password, secret, token, api-key, aws-secret-key)
// read a key, an operator and a value in the forms of code, configuration
// files and shells: key=value, key: value, key := value, key => value,
// "key": "value", KEY='value', --key=value, ?key=value&. A key is judged by
// its last word or two, whatever the case and separators ("DB_PASSWORD",
// "clientSecret", "x-api-key"). Only the value is replaced. Values that
// stand for a secret rather than being one are kept: empty, <your-token>,
// ${TOKEN}, $TOKEN, {{ token }}, %s, xxxx, ****, YOUR_API_KEY, null, and,
// unquoted, what reads as code (os.environ["X"], self.token, a type as in
// "password: str") or as prose ("Password: the one you chose").
//
// In JSON (Redactor.JSON), a member whose key names a secret has its whole
// string value judged the same way: {"password": "hunter2"} becomes
// {"password": "[REDACTED:password]"}.
//
// # Cost
//
// Each rule has keywords; one pass over a string finds which of them it
// holds (a table lookup per byte), and only those rules run. A string
// without any (most of a session) costs that pass and nothing more, and
// JSON decodes only the strings that may match. Every finder is linear in
// its input, hostile input included.
//
// # Own rules
//
// A host adds rules of its own to DefaultRules (or filters them, say
// without high-entropy) and passes the list as Options.Rules:
//
//	rules := append(redact.DefaultRules(), redact.Rule{
//		Name:     "employee-id",
//		Keywords: []string{"emp-"},
//		Pattern:  regexp.MustCompile(`\bemp-(?P<secret>[0-9]{6})\b`),
//	})
//	r := redact.New(&redact.Options{Rules: rules})
package redact
