package redact_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf16"

	"github.com/agentsession/session/redact"
)

// The shapes a hostile review of the redaction found in clear (each
// reproduced through session.Redact and export --redact), with the
// secret (or a part only it has) that must not be left. Made-up secrets.
const (
	reviewPW  = "Tr0ub4dor9zQ"
	reviewKey = "Zq8fVbH2kLmN4pR7sT9wYz1aB3cD5eF"
	reviewHex = "3f9a2c7e8b1d4f6a0c5e9b2d7f1a3c8e"
)

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

// reviewPEM is a made-up RSA private key body.
const reviewPEM = "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gunVTLw7onLRnrq0/IzW7yWR7QkrmBL7jTKEn5u+qKhbwKfBstIs+bMY2Zkp18gnTxKLxoS2tFczGkPLPgizskuemMghRniWaoLcyehkd3qqGElvW/VDL5AaWTg0nLVkjRo9z+40RQzuVaE8AkAFmxZzow3x+VJYKdjykkJ0iT9wCS0DRTXu269V264Vf/3jvredZiKRkgwlL9xNAwxXFg0x/XFw005UWVRIkdgcKWTjpBP2dPwVZ4WWC+9aGVd+Gyn1o0CLelf4rEjGoXbAAEgAqeGUxrcIlbjXfbcmwIDAQAB\n-----END RSA PRIVATE KEY-----\n"

var reviewLeaks = []struct{ name, in, secret string }{
	// 1. A marker glued before a secret shields it from no rule.
	{"marker bearer", "Authorization: Bearer [REDACTED:x]" + reviewKey, reviewKey},
	{"marker token scheme", "Authorization: Token [REDACTED:x]" + reviewPW, reviewPW},
	{"marker hex", "SESSION_KEY=[REDACTED:x]" + reviewHex, reviewHex},
	{"marker high entropy", "MYVAR=[REDACTED:x]" + reviewKey, reviewKey},
	{"marker generic api key", `my_service_key = "[REDACTED:x]` + reviewKey + `"`, reviewKey},
	{"marker slack webhook", "https://hooks.slack.com/services/T01ABCDEF/B02GHIJKL/[REDACTED:x]aBcDeFgHiJkLmNoPqRsTuVwX", "aBcDeFgHiJkLmNoPqRsTuVwX"},
	{"marker discord webhook", "https://discord.com/api/webhooks/123456789012345678/[REDACTED:x]" + reviewKey + "gH6iJ8kL0mN2oP4qR6sT8uV0", reviewKey},
	{"marker sas", "?sv=2022-11-02&sig=[REDACTED:x]" + reviewKey + "%3D", reviewKey},
	{"marker pgpass", "db:5432:app:user:[REDACTED:x]" + reviewPW, reviewPW},
	{"marker after", "MYVAR=" + reviewKey + "[REDACTED:x]", reviewKey},
	{"marker inside", "Authorization: Bearer Zq8fVbH2kLmN4p[REDACTED:x]R7sT9wYz1aB3cD5eF", "Zq8fVbH2kLmN4p"},
	{"marker unbalanced", "Authorization: Bearer [REDACTED:" + reviewKey, reviewKey},
	{"marker run", "SESSION_KEY=[REDACTED:x][REDACTED:y]" + reviewHex, reviewHex},

	// 2. JSON inside a JSON string, and escaped JSON in a text.
	{"secretsmanager text", `{"Name": "prod/db", "SecretString": "{\"username\":\"admin\",\"password\":\"` + reviewPW + `\"}"}`, reviewPW},
	{"body text", `{"level":"info","msg":"POST /login","body":"{\"username\":\"bob\",\"password\":\"` + reviewPW + `\"}"}`, reviewPW},
	{"escaped client secret", `{"body":"{\"client_secret\":\"` + reviewKey + `\"}"}`, reviewKey},
	{"escaped authorization", `{"body":"{\"Authorization\":\"Token ` + reviewKey + `\"}"}`, reviewKey},
	{"escaped json in a log line", `2025-01-01 INFO request body={\"user\":\"bob\",\"password\":\"` + reviewPW + `\"}`, reviewPW},
	{"doubly escaped json", `{"a":"{\"b\":\"{\\\"db_password\\\":\\\"` + reviewPW + `\\\"}\"}"}`, reviewPW},

	// 3. Base64 text whatever its declared type.
	{"data uri octet-stream", "data:application/octet-stream;base64," + b64("password="+reviewPW), b64("password=" + reviewPW)},

	// 4. Base64 credentials in Kubernetes files.
	{"kubeconfig client key", "users:\n- name: admin\n  user:\n    client-certificate-data: LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCg==\n    client-key-data: " + b64(reviewPEM) + "\n", b64(reviewPEM)[:60]},
	{"kubeconfig token", "users:\n- name: admin\n  user:\n    token: " + reviewKey + "\n", reviewKey},
	{"k8s secret password", "apiVersion: v1\ndata:\n  db-password: " + b64(reviewPW) + "\nkind: Secret\n", b64(reviewPW)},
	{"k8s secret url", "apiVersion: v1\ndata:\n  DATABASE_URL: " + b64("postgres://app:"+reviewPW+"@db:5432/app") + "\nkind: Secret\n", b64("postgres://app:" + reviewPW + "@db:5432/app")[20:]},
	{"k8s dockerconfigjson", "data:\n  .dockerconfigjson: " + b64(`{"auths":{"ghcr.io":{"auth":"`+b64("bob:"+reviewPW)+`"}}}`) + "\ntype: kubernetes.io/dockerconfigjson\n", b64(`{"auths":{"ghcr.io":{"auth":"` + b64("bob:"+reviewPW) + `"}}}`)[24:]},
	{"k8s secret json", `{"data": {"api-token": "` + b64(reviewKey) + `"}, "kind": "Secret"}`, b64(reviewKey)},

	// 5. Key formats.
	{"putty ppk", "PuTTY-User-Key-File-3: ssh-ed25519\nEncryption: none\nComment: eddsa-key-20240101\nPublic-Lines: 2\nAAAAC3NzaC1lZDI1NTE5AAAAIK8j3dQ1z4p0kWmH1n2vB6x9yTqR3sLcF0aE7uJ5oPdM\nPrivate-Lines: 1\nAAAAIFq3vX8nR2kL9mT4wY1cZ6bH0jD5sA7eG3uN8pQ2rK4f\nPrivate-MAC: 7c2a7e9d1b3f5a6c8e0d2b4f6a8c0e2d4b6f8a0c2e4d6b8f0a2c4e6d8b0f2a4c", "AAAAIFq3vX8nR2kL9mT4wY1c"},
	{"putty ppk mac", "PuTTY-User-Key-File-2: ssh-rsa\nEncryption: aes256-cbc\nComment: k\nPublic-Lines: 1\nAAAAB3NzaC1yc2E\nPrivate-Lines: 2\nZq8fVbH2kLmN4pR7sT9wYz1aB3cD5eFgH6iJ8kL0mN2oP4qR6sT8uV0wX2yZ4aB6\ncD8eF0gH2iJ4kL6mN8oP0qR2sT4uV6wX8yZ0\nPrivate-MAC: 7c2a7e9d1b3f5a6c8e0d2b4f6a8c0e2d4b6f8a0c", "cD8eF0gH2iJ4kL6mN8oP0qR2"},
	{"putty ppk mac only", "Private-Lines: 2\nZq8fVbH2kLmN4pR7sT9wYz1aB3cD5eFgH6iJ8kL0mN2oP4qR6sT8uV0wX2yZ4aB6\ncD8eF0gH2iJ4kL6mN8oP0qR2sT4uV6wX8yZ0\nPrivate-MAC: 7c2a7e9d1b3f5a6c8e0d2b4f6a8c0e2d4b6f8a0c", "7c2a7e9d1b3f5a6c8e0d2b4f"},
	{"ssh2 encrypted key", "---- BEGIN SSH2 ENCRYPTED PRIVATE KEY ----\nComment: \"rsa-key-20240101\"\nP2/56wAAA+4AAAA3aWYtbW9kbntzaWdue3JzYS1wa2NzMS1zaGExfSxlbmNyeXB0e3JzYS1wa2NzMXYyLW9hZXB9fQAAAARub25lAAAD\n---- END SSH2 ENCRYPTED PRIVATE KEY ----", "aWYtbW9kbntzaWdue3JzYS1w"},
	{"openvpn static key", "#\n# 2048 bit OpenVPN static key\n#\n-----BEGIN OpenVPN Static key V1-----\ne5e4d6af39289d53171b3fa4e2f3e1a0c8b7d6e5f4a3b2c1d0e9f8a7b6c5d4e3\nf2e1d0c9b8a7f6e5d4c3b2a1f0e9d8c7b6a5f4e3d2c1b0a9f8e7d6c5b4a3f2e1\n-----END OpenVPN Static key V1-----\n", "e5e4d6af39289d53171b3fa4"},

	// 6. Connection strings.
	{"oracle jdbc", "spring.datasource.url=jdbc:oracle:thin:scott/" + reviewPW + "@dbhost:1521:ORCL", reviewPW},
	{"sqlplus", "sqlplus system/" + reviewPW + "@//db.example.com:1521/ORCLPDB1", reviewPW},
	{"sqlplus silent", "sqlplus -s scott/" + reviewPW + "@ORCL @script.sql", reviewPW},
	{"expdp", "expdp hr/" + reviewPW + "@orcl directory=dp dumpfile=hr.dmp", reviewPW},
	{"odbc PWD", "Provider=SQLOLEDB;Data Source=db;User ID=sa;PWD=" + reviewPW + ";", reviewPW},
	{"odbc Pwd", "Server=myServerAddress;Database=myDataBase;Uid=myUsername;Pwd=" + reviewPW + ";", reviewPW},
	{"odbc json", `{"ConnectionStrings": {"Default": "Driver={ODBC Driver 18 for SQL Server};Server=tcp:db,1433;Uid=sa;Pwd=` + reviewPW + `;Encrypt=yes;"}}`, reviewPW},

	// 7. Name/value pairs.
	{"name value json", `{"name": "DB_PASSWORD", "value": "` + reviewPW + `"}`, reviewPW},
	{"name value yaml", "- name: DB_PASSWORD\n  value: " + reviewPW, reviewPW},
	{"name value k8s env", "      containers:\n      - name: api\n        env:\n        - name: DB_PASSWORD\n          value: " + reviewPW + "\n", reviewPW},
	{"ssm securestring", "{\n    \"Parameter\": {\n        \"Name\": \"/prod/db/conn\",\n        \"Type\": \"SecureString\",\n        \"Value\": \"" + reviewPW + "\",\n        \"Version\": 3\n    }\n}", reviewPW},
	{"ssm password name", `{"Parameter": {"Name": "/prod/db/password", "Type": "String", "Value": "` + reviewPW + `"}}`, reviewPW},
	{"cookie json", `{"name": "sessionid", "value": "` + reviewPW + `", "domain": ".x.com"}`, reviewPW},
	{"Name Value", `{"Name": "API_TOKEN", "Value": "` + reviewPW + `"}`, reviewPW},
	{"key value", `{"key": "API_TOKEN", "value": "` + reviewPW + `"}`, reviewPW},

	// 8. Files and code.
	{"maven settings", "<settings>\n  <servers>\n    <server>\n      <id>nexus</id>\n      <username>deploy</username>\n      <password>" + reviewPW + "</password>\n    </server>\n  </servers>\n</settings>\n", reviewPW},
	{"maven encrypted", "<password>{AQAAABAAAAAQZq8fVbH2kLmN4pR7sT9wYz1aB3cD5eF=}</password>", "AQAAABAAAAAQZq8fVbH2kLmN"},
	{"xml secret element", "<client_secret>" + reviewKey + "</client_secret>", reviewKey},
	{"netscape cookies", "# Netscape HTTP Cookie File\n#HttpOnly_.example.com\tTRUE\t/\tTRUE\t0\tsessionid\t" + reviewPW + "Xy9\n", reviewPW},
	{"php define", "define( 'DB_PASSWORD', '" + reviewPW + "' );", reviewPW},
	{"wordpress salt", "define('AUTH_KEY', 'Zq8f|VbH2kLm N4pR7sT9wYz1aB3cD5eF');", "N4pR7sT9wYz1aB3cD5eF"},
	{"os.environ", `os.environ["DB_PASSWORD"] = "` + reviewPW + `"`, reviewPW},
	{"subscript single", `config['api_token'] = '` + reviewPW + `'`, reviewPW},
	{"dockerfile env", "ENV DB_PASSWORD " + reviewPW, reviewPW},
	{"fish set", "set -x DB_PASSWORD " + reviewPW, reviewPW},
	{"csh setenv", "setenv DB_PASSWORD " + reviewPW, reviewPW},
	{"set property", `System.setProperty("db.password", "` + reviewPW + `");`, reviewPW},
	{"props put", `props.put("password", "` + reviewPW + `");`, reviewPW},
	{"set env var", `[Environment]::SetEnvironmentVariable("DB_PASSWORD", "` + reviewPW + `", "User")`, reviewPW},
	{"setter", `conn.setPassword("` + reviewPW + `")`, reviewPW},
	{"redis requirepass", "bind 127.0.0.1\nrequirepass " + reviewPW + "\n", reviewPW},
	{"redis masterauth", "masterauth " + reviewPW, reviewPW},
	{"wpa psk", "network={\n    ssid=\"HomeWifi\"\n    psk=\"" + reviewPW + "\"\n}", reviewPW},
	{"sql create user", "CREATE USER app WITH PASSWORD '" + reviewPW + "';", reviewPW},
	{"sql alter identified", "ALTER USER 'root'@'localhost' IDENTIFIED BY '" + reviewPW + "';", reviewPW},
	{"sql grant identified", "GRANT ALL ON *.* TO 'app'@'%' IDENTIFIED BY '" + reviewPW + "';", reviewPW},
	{"sql oracle identified", "ALTER USER scott IDENTIFIED BY " + reviewPW + ";", reviewPW},
	{"sql role password", "ALTER ROLE app LOGIN PASSWORD '" + reviewPW + "';", reviewPW},
	{"mongo pwd", `db.createUser({user: "app", pwd: "` + reviewPW + `", roles: ["readWrite"]})`, reviewPW},

	// 9. Command lines.
	{"aws configure set", "aws configure set aws_secret_access_key 9dRk2LmN4pR7sT9wYz1aB3cD5eFgH6iJ8kL0mN2o", "9dRk2LmN4pR7sT9wYz1a"},
	{"gh secret set", "gh secret set DB_PASSWORD --body " + reviewPW, reviewPW},
	{"gh secret set -b", "gh secret set DB_PASSWORD -b " + reviewPW + " --repo acme/app", reviewPW},
	{"cargo login", "cargo login " + reviewKey, reviewKey},
	{"crates.io token", "CARGO_REGISTRY_TOKEN is cioAbCdEfGhIjKlMnOpQrStUvWxYz0123456", "cioAbCdEfGhIjKlMnOpQrStUvWxYz0123456"},
	{"cargo login cio", "cargo login cioAbCdEfGhIjKlMnOpQrStUvWxYz0123456", "cioAbCdEfGhIjKlMnOpQrStUvWxYz0123456"},
	{"twine", "twine upload -u bob -p " + reviewPW + " dist/*", reviewPW},
	{"poetry http-basic", "poetry config http-basic.private bob " + reviewPW, reviewPW},
	{"poetry pypi-token", "poetry config pypi-token.pypi " + reviewKey, reviewKey},
	{"npm config set", "npm config set //registry.npmjs.org/:_authToken " + reviewKey, reviewKey},
	{"yarn config set", "yarn config set npmAuthToken " + reviewKey, reviewKey},
	{"net user", "net user admin " + reviewPW + " /add", reviewPW},
	{"rabbitmqctl add_user", "rabbitmqctl add_user admin " + reviewPW, reviewPW},
	{"rabbitmqctl change_password", "rabbitmqctl change_password admin " + reviewPW, reviewPW},
	{"ConvertTo-SecureString", `ConvertTo-SecureString "` + reviewPW + `" -AsPlainText -Force`, reviewPW},
	{"ConvertTo-SecureString nested", `$cred = New-Object PSCredential("admin", (ConvertTo-SecureString "` + reviewPW + `" -AsPlainText -Force))`, reviewPW},
	{"ConvertTo-SecureString -String", `convertto-securestring -String '` + reviewPW + `' -AsPlainText -Force`, reviewPW},
	{"ssh-keygen -N", "ssh-keygen -t ed25519 -N " + reviewPW + " -f k", reviewPW},
	{"ssh-keygen -P", "ssh-keygen -p -P " + reviewPW + " -N " + reviewPW + "x -f k", reviewPW},
	{"url token userinfo", `git config --global url."https://` + reviewKey + `@github.com/".insteadOf "https://github.com/"`, reviewKey},

	// 10. Key names.
	{"password1", `{"password1": "` + reviewPW + `", "password2": "` + reviewPW + `"}`, reviewPW},
	{"password1 query", "curl -d \"username=bob&password1=" + reviewPW + "&password2=" + reviewPW + "\" https://x/signup", reviewPW},
	{"qualified key", "DB_PASSWORD_PROD=" + reviewPW, reviewPW},
	{"SecretString", `{"SecretString": "` + reviewPW + `"}`, reviewPW},
	{"secretValue", `{"secretValue": "` + reviewPW + `"}`, reviewPW},
	{"token_value", `{"token_value": "` + reviewPW + `"}`, reviewPW},
	{"credentials", `{"credentials": "` + reviewPW + `"}`, reviewPW},
	{"passcode", `{"passcode": "` + reviewPW + `"}`, reviewPW},
	{"bare authorization", "Authorization: " + reviewPW, reviewPW},
	{"bare authorization json", `{"Authorization": "` + reviewPW + `"}`, reviewPW},
	{"bare authorization letters", "Authorization: ZqfVbHkLmNpRsTwYzaBcDeF", "ZqfVbHkLmNpRsTwYzaBcDeF"},
	// A bare "key" holds hashes (cache keys, object names) as often as
	// secrets; 40 hex digits under it are taken for a secret, as
	// gitleaks' generic rule takes them: a key that stays is worse than a
	// hash that goes.
	{"hex under key", `"key": "3f9a2c7e8b1d4f6a0c5e9b2d7f1a3c8e5b6d7e8f"`, "3f9a2c7e8b1d4f6a0c5e"},
}

// reviewLookAlikes must come out unchanged: what the review found
// replaced that is no secret, and the look-alikes of the new rules.
var reviewLookAlikes = []string{
	// 16. Hashes under names that say so.
	`"shasum": "3f9a2c7e8b1d4f6a0c5e9b2d7f1a3c8e5b6d7e8f"`,
	"sha1sum: 3f9a2c7e8b1d4f6a0c5e9b2d7f1a3c8e5b6d7e8f",
	"blake2b: 3f9a2c7e8b1d4f6a0c5e9b2d7f1a3c8e5b6d7e8f3f9a2c7e8b1d4f6a0c5e9b2d",
	`"before": "3f9a2c7e8b1d4f6a0c5e9b2d7f1a3c8e5b6d7e8f", "after": "8b1d4f6a0c5e9b2d7f1a3c8e5b6d7e8f3f9a2c7e"`,
	`"base": "3f9a2c7e8b1d4f6a0c5e9b2d7f1a3c8e5b6d7e8f"`,
	`"node": "3f9a2c7e8b1d4f6a0c5e9b2d7f1a3c8e5b6d7e8f"`,
	`"uid": "3f9a2c7e8b1d4f6a0c5e9b2d7f1a3c8e"`,
	"Reverts: 3f9a2c7e8b1d4f6a0c5e9b2d7f1a3c8e5b6d7e8f",
	"https://source.chromium.org/chromium/chromium/src/+/main:v8/src/objects/js-array-buffer.h;l=34;drc=1946212ac0100668f14eb9e2843bdd846e510a1e",
	// Paths.
	"TMPDIR=/var/folders/7x/k9f2mq3n1vb8w0c5r4t6y2zh0000gn/T/",
	"SSH_AUTH_SOCK=/tmp/ssh-XXXXzQ8fVb/agent.1234",
	"SSH_AUTH_SOCK=/private/tmp/com.apple.launchd.Kq8fVbH2kL/Listeners",
	// Code.
	"        self.username, self.password = credentials",
	"        self.passwd = password_mgr",
	"    'password' => 'required|min:8',",
	`    "password": "required|string|min:8|confirmed",`,
	// New rules' look-alikes.
	"PWD=/srv/app\nOLDPWD=/srv",
	`{"PWD": "/srv/app", "SHELL": "/bin/bash"}`,
	"sqlplus / as sysdba",
	"sqlplus -s /nolog @script.sql",
	"expdp directory=dp dumpfile=hr.dmp",
	"cargo login",
	"net user admin",
	"net user admin * /add",
	"gh secret set DB_PASSWORD < secret.txt",
	"ssh-keygen -t ed25519 -N '' -f k",
	`{"name": "DB_HOST", "value": "db.internal"}`,
	`{"name": "author", "value": "Ada Lovelace"}`,
	"- name: LOG_LEVEL\n  value: debug",
	"<password>${env.DB_PASSWORD}</password>",
	"<passwordPolicy>strict</passwordPolicy>",
	"ENV NODE_ENV production",
	"set -x PATH /usr/local/bin $PATH",
	"CREATE USER app WITH PASSWORD NULL;",
	"the password is required",
	"Authorization: Bearer",
	"Authorization: required",
	"Authorization: Negotiate",
	"git clone https://github.com/acme/app.git https://git@gitlab.com/x",
	"-----BEGIN OpenVPN Static key V1-----\n...\n-----END OpenVPN Static key V1-----",
	"setenv EDITOR vim",
	"# requirepass foobared",
	`"SecretString": "{{resolve:secretsmanager:prod/db:SecretString:password}}"`,
	"aws configure set region us-east-1",
	"npm config set registry https://registry.npmjs.org/",
	// Base64 that decodes to text holding nothing secret, and binary.
	"config: " + b64("log_level: debug\nport: 8080\nhost: example.com\n"),
	"sig: " + b64(string([]byte{0x89, 'P', 'N', 'G', 13, 10, 26, 10, 0, 0, 0, 13, 'I', 'H', 'D', 'R', 1, 2, 3, 4, 5, 6, 7, 8})),
}

func TestReviewLeaks(t *testing.T) {
	r := testRedactor()
	for _, c := range reviewLeaks {
		t.Run(c.name, func(t *testing.T) { noSecret(t, r, c.in, c.secret) })
	}
}

func TestReviewLookAlikes(t *testing.T) {
	r := testRedactor()
	for _, in := range reviewLookAlikes {
		if out, rep := r.String(in); out != in {
			t.Errorf("%q changed to %q (%v)", in, out, rep.Counts)
		}
	}
}

// JSON strings that hold JSON are redacted as JSON, whatever their
// depth; the value stays a string, and the rest of its bytes are kept.
func TestJSONInJSONString(t *testing.T) {
	r := testRedactor()
	for _, in := range []string{
		`{"Name": "prod/db", "SecretString": "{\"username\":\"admin\",\"password\":\"` + reviewPW + `\"}"}`,
		`{"body":"{\"client_secret\":\"` + reviewKey + `\"}"}`,
		`{"body":"{\"Authorization\":\"Token ` + reviewKey + `\"}"}`,
		`["[{\"name\":\"DB_PASSWORD\",\"value\":\"` + reviewPW + `\"}]"]`,
		`{"a":"{\"b\":\"{\\\"apiKey\\\":\\\"` + reviewPW + `\\\"}\"}"}`,
	} {
		out, rep, err := r.JSON([]byte(in))
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(out, []byte(reviewPW)) || bytes.Contains(out, []byte(reviewKey)) || rep.Total() == 0 {
			t.Errorf("%s -> %s (%v)", in, out, rep.Counts)
		}
		if !json.Valid(out) {
			t.Errorf("invalid: %s", out)
		}
	}
	// What is kept of the inner JSON is kept byte for byte.
	in := `{"s":"{ \"user\" : \"admin\",\n \"password\":\"` + reviewPW + `\" }"}`
	out, _, _ := r.JSON([]byte(in))
	if want := `{"s":"{ \"user\" : \"admin\",\n \"password\":\"[REDACTED:password]\" }"}`; string(out) != want {
		t.Errorf("got %s, want %s", out, want)
	}
}

// Member judges a value's key (with its qualifiers) and name/value pairs
// as JSON does.
func TestNamedValue(t *testing.T) {
	r := testRedactor()
	for _, c := range []struct {
		name, value string
		secure      bool
		redacted    bool
	}{
		{"DB_PASSWORD", reviewPW, false, true},
		{"/prod/db/password", reviewPW, false, true},
		{"/prod/db/conn", reviewPW, true, true},
		{"sessionid", reviewPW, false, true},
		{"DB_HOST", "db.internal", false, false},
		{"author", "Ada Lovelace", false, false},
		{"DB_PASSWORD", "${DB_PASSWORD}", false, false},
	} {
		out, rep := r.NamedValue(c.name, c.value, c.secure)
		if got := out != c.value; got != c.redacted || (rep.Total() > 0) != c.redacted {
			t.Errorf("NamedValue(%q, %q, %v) = %q %v", c.name, c.value, c.secure, out, rep.Counts)
		}
	}
}

func latin1(s string) []byte {
	var b []byte
	for _, r := range s {
		b = append(b, byte(r))
	}
	return b
}

func utf16le(s string, bom bool) []byte {
	var b []byte
	if bom {
		b = append(b, 0xff, 0xfe)
	}
	for _, u := range utf16.Encode([]rune(s)) {
		b = append(b, byte(u), byte(u>>8))
	}
	return b
}

func utf16be(s string) []byte {
	b := []byte{0xfe, 0xff}
	for _, u := range utf16.Encode([]rune(s)) {
		b = append(b, byte(u>>8), byte(u))
	}
	return b
}

// Base64 is judged by what it decodes to, not by the media type it
// claims: text (UTF-8 with escapes, Latin-1, UTF-16, base64 again) is
// redacted in its own encoding; binary formats stay as they are.
func TestBase64ByContent(t *testing.T) {
	r := testRedactor()
	env := "DB_PASSWORD=" + reviewPW + "\n"
	for _, c := range []struct {
		name, mediaType string
		data            []byte
	}{
		{"octet-stream", "application/octet-stream", []byte(env)},
		{"pdf that is text", "application/pdf", []byte(env)},
		{"image that is text", "image/png", []byte(env)},
		{"ansi", "text/plain", []byte("\x1b[32mOK\x1b[0m connecting with " + env)},
		{"latin-1 declared", "text/plain; charset=iso-8859-1", latin1("# configuración\n" + env)},
		{"latin-1 undeclared", "", latin1("# configuración\n" + env)},
		{"utf-16le bom", "text/plain", utf16le(env, true)},
		{"utf-16le", "", utf16le("# config\r\n"+env, false)},
		{"utf-16be bom", "", utf16be(env)},
		{"base64 of base64", "text/plain", []byte(b64(env))},
		{"svg", "image/svg+xml", []byte(`<svg xmlns="http://www.w3.org/2000/svg"><!-- api_key=` + reviewPW + ` --></svg>`)},
	} {
		data := b64(string(c.data))
		out, rep := r.Base64Text(data, c.mediaType)
		if out == data || rep.Total() == 0 {
			t.Errorf("%s: not redacted (%v)", c.name, rep.Counts)
			continue
		}
		dec, err := base64.StdEncoding.DecodeString(out)
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if bytes.Contains(dec, []byte(reviewPW)) || bytes.Contains(dec, latin1(reviewPW)) ||
			bytes.Contains(dec, utf16le(reviewPW, false)) || bytes.Contains(dec, utf16be(reviewPW)[2:]) {
			t.Errorf("%s: secret left in %q", c.name, dec)
		}
		if strings.Contains(c.name, "base64") {
			if inner, err := base64.StdEncoding.DecodeString(string(dec)); err != nil || bytes.Contains(inner, []byte(reviewPW)) {
				t.Errorf("%s: %q %v", c.name, inner, err)
			}
		}
		// The same through Bytes.
		bout, brep := r.Bytes(c.data, c.mediaType)
		if bytes.Equal(bout, c.data) || brep.Total() == 0 {
			t.Errorf("%s: Bytes did not redact", c.name)
		}
	}
	// Binary formats stay whole, whatever text they hold.
	for _, c := range []struct {
		name string
		data []byte
	}{
		{"png", append([]byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR"), env...)},
		{"jpeg", append([]byte("\xff\xd8\xff\xe0\x00\x10JFIF\x00"), env...)},
		{"pdf", []byte("%PDF-1.7\n%\xe2\xe3\xcf\xd3\n1 0 obj\n<< /Title (" + env + ") >>\nendobj\n")},
		{"zip", append([]byte("PK\x03\x04\x14\x00\x00\x00\x08\x00"), env...)},
		{"gzip", append([]byte("\x1f\x8b\x08\x00\x00\x00\x00\x00"), env...)},
		{"random", []byte("\x00\x01\x02\xfe\xfd" + env + "\x00\x00")},
	} {
		data := b64(string(c.data))
		if out, rep := r.Base64Text(data, ""); out != data || rep.Total() != 0 {
			t.Errorf("%s: changed (%v)", c.name, rep.Counts)
		}
		if out, rep := r.Bytes(c.data, ""); !bytes.Equal(out, c.data) || rep.Total() != 0 {
			t.Errorf("%s: Bytes changed (%v)", c.name, rep.Counts)
		}
	}
}

// TestMarkerVariantsCorpus: for every secret shape of the corpus, a
// marker glued before the secret, inside it, after it, a run of markers
// and an unclosed one shield nothing.
func TestMarkerVariantsCorpus(t *testing.T) {
	r := redact.New(&redact.Options{Home: []string{}})
	n := 0
	for _, c := range loadCorpus(t) {
		if c.kind != "secret" {
			continue
		}
		at := strings.Index(c.text, c.secret)
		if at < 0 {
			continue // a secret judged decoded (base64 text)
		}
		pre, sec, post := c.text[:at], c.secret, c.text[at+len(c.secret):]
		half := len(sec) / 2
		for _, v := range []struct{ name, text string }{
			{"before", pre + "[REDACTED:x]" + sec + post},
			{"run before", pre + "[REDACTED:x][REDACTED:password]" + sec + post},
			{"after", pre + sec + "[REDACTED:x]" + post},
			{"unclosed", pre + "[REDACTED:" + sec + post},
			{"inside", pre + sec[:half] + "[REDACTED:x]" + sec[half:] + post},
		} {
			n++
			out, rep := r.String(v.text)
			parts := []string{sec}
			if v.name == "inside" {
				parts = []string{sec[:half], sec[half:]}
			}
			for _, p := range parts {
				if len(p) >= 4 && leaked(out, p) {
					t.Errorf("%s %s: %q -> %q (%v)", c.format, v.name, v.text, out, rep.Counts)
					break
				}
			}
			if again, rep2 := r.String(out); again != out || rep2.Total() != 0 {
				t.Errorf("%s %s: not idempotent: %q -> %q", c.format, v.name, out, again)
			}
		}
	}
	if n < 500 {
		t.Errorf("only %d variants", n)
	}
}
