package redact_test

import (
	"strings"
	"testing"

	"github.com/agentsession/session/redact"
)

// The secrets below are made up: they have the shapes of real ones.

// shapes are texts holding one secret each, and the rule that must find
// it.
var shapes = []struct {
	name, in, secret, rule string
}{
	{"anthropic api key in env", "ANTHROPIC_API_KEY=sk-ant-api03-1MULwJodFX1GOZrhrztAQpiN0k8s0Rc3VgTg9VaZEoBFUhIiJyqGNSOvQmIQbgSc7I8gzNHj-crZ-YxzGtoBgNOOgu1lNAA", "sk-ant-api03-1MULwJodFX1GOZ", "anthropic-api-key"},
	{"anthropic admin key in prose", "use sk-ant-admin01-GZ9jkECHuLg-Y-C04j6BD9OyUd2gQvDOVwBM3T5lnbyw575r85bLHxb7RQBgImbdo8MAmd6CdZp2hhyH now", "GZ9jkECHuLg", "anthropic-key"},
	{"openai project key", `client = OpenAI(api_key="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")`, "ITS1ZaRkeKPPpQqF", "openai-api-key"},
	{"openai legacy key", "openai.api_key = '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'", "qEimkqjc2hsCdf5s2NPq", "openai-api-key"},
	{"openai service account key", "key: sk-svcacct-hJLS9BnfVV95Q_UCboStWokfYo7sz4gIcnmr8CNMMQc3lXa7nPP6h-l7Mptj", "hJLS9BnfVV95Q", "openai-key"},
	{"sk- key of 32 hex", "DEEPSEEK=sk-a1469d23c1fdd87c47a7afa636e6edbd", "a1469d23c1fdd87c", "openai-key"},
	{"openrouter key", "Authorization: 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", "16370818bdc100aa", "openrouter-key"},
	{"aws access key id", "aws_access_key_id = AKIAQZA4RKNNGCWHCMWU", "AKIAQZA4RKNNGCWHCMWU", "aws-access-token"},
	{"aws session key id", `"AccessKeyId": "ASIAONLKA7C522V5DBFE",`, "ASIAONLKA7C522V5DBFE", "aws-access-token"},
	{"aws secret in credentials file", "aws_secret_access_key = vKWetKxQuRO/D6L1Bv2N7NhQrPeaMmkUoBlVu+8O", "vKWetKxQuRO/D6L1", "aws-secret-key"},
	{"aws secret in env", "export AWS_SECRET_ACCESS_KEY=\"vKWetKxQuRO/D6L1Bv2N7NhQrPeaMmkUoBlVu+8O\"", "vKWetKxQuRO/D6L1", "aws-secret-key"},
	{"github personal token", "git push https://ghp_7i0C02E9nMoZ6AbYpZJ50mXHPeALpErLsIlv@github.com/o/r", "ghp_7i0C02E9nMoZ6AbY", "github-pat"},
	{"github oauth token", "token gho_CjQu9Xqre9U1Eq6CyZRaHXkARvanPVdEshNZ", "gho_CjQu9Xqre9U1Eq6C", "github-oauth"},
	{"github user token", "ghu_OOx6qGxStSocpbFeWB0czP8Uw31N0oW965MP", "ghu_OOx6qGxStSocpbFe", "github-app-token"},
	{"github app token in url", "git clone https://x-access-token:ghs_4qr6GsK7I0daq8OZxaSLUoJ0iRCc71uZfNXM@github.com/o/r.git", "ghs_4qr6GsK7I0daq8OZ", "github-app-token"},
	{"github refresh token", `{"refresh": "ghr_xcmtGZ6qJUnGaxBgqX9V4QU6KrO7JGIyILnN"}`, "ghr_xcmtGZ6qJUnGaxBg", "github-refresh-token"},
	{"github fine-grained token", "GH_PAT=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", "ICLTSRkgPWvFzSHaHADm", "github-fine-grained-pat"},
	{"google api key", "https://maps.googleapis.com/maps/api/geocode/json?key=AIzaNkl9M01QzFEMIXMvyZRCIcyRTL7VZZJuBeH", "AIzaNkl9M01QzFEMIXMv", "gcp-api-key"},
	{"google oauth token", "access ya29.a00SEuP9gFwyBmp2OhFqsSGcBS1lGPk1SVEBPs83ehv1ghiR0vVTJed3-wdPCrkvh28FgQjDdcaslRAPdh9qws2ihRDPzJ-yBF5rr2", "a00SEuP9gFwyBmp2OhFq", "google-oauth-token"},
	{"slack bot token", "SLACK_BOT_TOKEN=xoxb-776116294410-3280622225504-yOV6qcOqKFtIlHTTpGfZcLK9", "yOV6qcOqKFtIlHTTpGfZ", "slack-bot-token"},
	{"slack user token", "xoxp-845766203707-401488624018-7318864505578-09dc935877ca44a22a54a9d66c3c0fe8", "09dc935877ca44a22a54", "slack-user-token"},
	{"slack app token", "xapp-1-AZ5JYT4UDTP-3890166648346-7d67d4a65e61fb599a6e15ce947afd608c90d497b628e96dd093a304e27eb9ff", "7d67d4a65e61fb599a6e", "slack-app-token"},
	{"slack webhook", "curl -X POST https://hooks.slack.com/services/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 -d @msg.json", "rqE8gQwtB9Aqu8g8cZOs", "slack-webhook-url"},
	{"stripe live key", "Stripe.api_key = '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'", "510aiDCIaACaQkHoov", "stripe-access-token"},
	{"stripe test key", "sk_test_51hz0ax66OCL0kboP37W1tbAFBLUOcEKBREUZetpQpaBiR0HxxTA51L9NWAsdd", "51hz0ax66OCL0kboP37W", "stripe-access-token"},
	{"stripe restricted key", "rk_live_51RNCbsooheo0bgdJ9E5AaZ3yZq8BYkssUcfIKn06egkf72ClmAyyvWbc0cA6N", "51RNCbsooheo0bgdJ9E5", "stripe-access-token"},
	{"stripe webhook secret", "endpoint secret whsec_RQN8P1fJLxYNtoOknTE8z40fFUHTIVnz", "RQN8P1fJLxYNtoOknTE8", "stripe-key"},
	{"npm token in npmrc", "//registry.npmjs.org/:_authToken=npm_fE1Yii5xogPNqsQWIcQ5cFHA0eksuRDz3lVh", "fE1Yii5xogPNqsQWIcQ5", "npm-access-token"},
	{"huggingface token", "huggingface-cli login --token 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", "XKZaYKODpKgkjDTSprME", "huggingface-access-token"},
	{"gitlab token", "PRIVATE-TOKEN: glpat-3yATdEX_IcCynU7WzFv7", "3yATdEX_IcCynU7WzFv7", "gitlab-pat"},
	{"sendgrid key", "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", "R3Wx3SNcYjvGTFr_I1NAWd", "sendgrid-api-token"},
	{"digitalocean token", "doctl auth init -t dop_v1_2b14bfb665a05a67b2a6b1b7afcb9f7307d832a34d6816b808440a77f00bedc0", "2b14bfb665a05a67b2a6", "digitalocean-pat"},
	{"pypi token", "password = pypi-AgEIcHlwaS5vcmciLDzj68yenbnN3G-2tTjkY-zbx-lRT2bFivGfwkku5oq5DKmUTKZ-q7bMh8Afk2X2zJf3u", "LDzj68yenbnN3G", "pypi-upload-token"},
	{"shopify token", "X-Shopify-Access-Token: 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", "375d45c62d6d0e9408e5", "shopify-access-token"},
	{"groq key", "GROQ=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", "dihTbXxpoDiTW03kVmIF", "groq-key"},
	{"xai key", "xai-Zsas60VSUYjFu8PHB2ELFKhPu1hDBcz2le9vcyjNNidNUI5lwyE2ZPAIzLgGY7glDdhHQUqzQAf17Qtl", "Zsas60VSUYjFu8PHB2EL", "xai-key"},
	{"perplexity key", "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", "Sb8Vzk6q5jI9QJXC8JBl", "perplexity-api-key"},
	{"rsa private key", "$ cat id_rsa\n-----BEGIN RSA PRIVATE KEY-----\n" + pemBody + "\n-----END RSA PRIVATE KEY-----\n$ ", "qNVVlJVAZMTVFCx3bImr", "private-key"},
	{"openssh private key", "-----BEGIN OPENSSH PRIVATE KEY-----\n" + pemBody + "\n-----END OPENSSH PRIVATE KEY-----", "ZlkJzGBhgy+Jf/H35Erp", "private-key"},
	{"private key with escaped newlines", `"private_key": "-----BEGIN PRIVATE KEY-----\n` + strings.ReplaceAll(pemBody, "\n", `\n`) + `\n-----END PRIVATE KEY-----\n",`, "WoMBA5TLOHJ1kIPKzkfB", "private-key"},
	{"truncated private key", "-----BEGIN EC PRIVATE KEY-----\n" + pemBody[:200], "jU4mM31GUzteRYUv8yFU", "private-key"},
	{"jwt", "id_token eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkphbmUgRG9lIiwiaWF0IjoxNzE2MjM5MDIyfQ.GCnBWK-ULlNPMXKDxzVk2KcIgwrQha8foymmdawE5wf", "eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6", "jwt"},
	{"bearer header", `curl -H "Authorization: Bearer i9FESYimoDhN8yXyfxxFdW_OjhLw6_glUXMhQanK" https://api.example.com`, "i9FESYimoDhN8yXyfxxF", "curl-auth-header"},
	{"basic auth header", "Authorization: Basic ZGVwbG95OjFTWVMwQkI3VjlXRHdRcTU=", "ZGVwbG95OjFTWVMwQkI3", "basic-auth"},
	{"postgres url", "DATABASE_URL=postgres://app:Vq8%23mZ2pLr@db.internal:5432/prod", "Vq8%23mZ2pLr", "url-password"},
	{"redis url without user", "redis://:Zk3vQ9wLp2@cache:6379/0", "Zk3vQ9wLp2", "url-password"},
	{"password assignment", "password=hunter2", "hunter2", "password"},
	{"password in json text", `{"user": "bob", "password": "correct horse battery staple"}`, "correct horse battery staple", "password"},
	{"password in yaml", "database:\n  db_password: s3cr3tP4ss\n  host: db", "s3cr3tP4ss", "password"},
	{"password env quoted with space", "DB_PASSWORD='p@ss w0rd'", "p@ss w0rd", "password"},
	{"password in ini", "[client]\nuser = root\npassword = Kq2!vL9x\n", "Kq2!vL9x", "password"},
	{"password flag", "mysqldump --password=Kx9vLq2w prod > dump.sql", "Kx9vLq2w", "password"},
	{"camel case api key", `const apiKey = "a8f5f167f44f4964e6c998dee827110c";`, "a8f5f167f44f4964e6c9", "api-key"},
	{"api key header", "X-API-Key: 4f3c2b1a9e8d7c6b5a4f3e2d1c0b9a8f", "4f3c2b1a9e8d7c6b5a4f", "api-key"},
	{"client secret", `client_secret: "Zx8Kq2Lm9Np4Rs7Tv1Wy"`, "Zx8Kq2Lm9Np4Rs7Tv1Wy", "secret"},
	{"django secret key", "SECRET_KEY = 'django-insecure-7h$k2@q9!m4z'", "django-insecure-7h$k2@q9!m4z", "secret"},
	{"token in yaml", "token: 9f8e7d6c5b4a3f2e1d0c", "9f8e7d6c5b4a3f2e1d0c", "token"},
	{"access token in query", "GET /api/me?access_token=Qm9wLzR8dXN0&x=1", "Qm9wLzR8dXN0", "token"},
	{"ruby hash token", `config[:auth] = { "auth_token" => "Tk7pQ2mZ9xL4" }`, "Tk7pQ2mZ9xL4", "token"},
	{"go short assignment", `sessionToken := "a1b2c3d4e5f6g7h8"`, "a1b2c3d4e5f6g7h8", "token"},
	{"high entropy env line", "# service\nMY_SERVICE_CRED=1KYTlojxXhc2qYoWZfdZjo93yXsdcDV6\n", "1KYTlojxXhc2qYoWZfdZ", "high-entropy"},
	{"linux home", "open /home/alice/projects/app/main.go", "alice", "home-path"},
	{"macos home", "file:///Users/bob/Library/Logs/x.log", "bob", "home-path"},
	{"windows home", `C:\Users\carol\Desktop\notes.txt`, "carol", "home-path"},
	{"windows home escaped", `"C:\\Users\\dave\\AppData"`, "dave", "home-path"},
	{"windows home with slashes", "C:/Users/frank/go/bin", "frank", "home-path"},
	{"configured home", "cd /srv/people/erin/src", "erin", "home-path"},
}

const pemBody = "qNVVlJVAZMTVFCx3bImr+MS0njxWnIJnezaYz27sMAdJ8tybftmQnIuYxzpcKo+x\nZlkJzGBhgy+Jf/H35ErpNX+/JmRL17QV9OuVAu+RmZtsNHz1Ta4aSyZIFeyhwKlF\njU4mM31GUzteRYUv8yFU/F8MrB3II818HCp4mcJOpuvIvokcBIgR4V2jUKOXdO09\nWoMBA5TLOHJ1kIPKzkfBP5eXCpOiyxojSkQByfyt/Yp0rmCIPnnak/CW+bSzeVQy"

// lookAlikes must come out unchanged.
var lookAlikes = []struct{ name, in string }{
	{"git sha", "commit 3f786850e387550fdab836ed7e6dc881de23001b\nAuthor: A <a@example.com>"},
	{"uuid", "session 550e8400-e29b-41d4-a716-446655440000 created"},
	{"image data url", "![x](data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==)"},
	{"sk-learn", "pip install sk-learn scikit-learn; see sk-learn-docs"},
	{"task-ant", "task-ant-colony-optimization-with-many-parts-2024 is a task-antler"},
	{"short tokens", "ghp_abc sk-abc123 xoxb-1 AIza12 glpat-short hf_x npm_1"},
	{"package versions", "react@18.2.0 and v1.2.3-beta.4+build.5, go1.26.8"},
	{"npm lockfile integrity", `"integrity": "sha512-z4PhNX7vuL3xVChQ1m2AB9Yg5AULVxXcg/SpIdNs6c5H0NE8XYXysP+DGNKHfuwvY7kxvUdBeoGlODJ6+SfaPg=="`},
	{"go.sum hash", "golang.org/x/sys v0.38.0 h1:3yZWxaJjBmCWXqhN1qh02AkOnCQ1poK6oF+a7xWL6Gc="},
	{"cargo lock checksum", `checksum = "4bc2f8a9c6e8c1a0e3b0a8f3f2e9d1c7b6a5f4e3d2c1b0a9f8e7d6c5b4a3f2e1"`},
	{"password in prose", "Enter your password to continue; the password is never stored."},
	{"password prompt", "Password: "},
	{"password prompt then prose", "Password: the one you chose at signup"},
	{"empty token", "token="},
	{"angle placeholder", "token=<your-token>"},
	{"shell placeholder", "export GITHUB_TOKEN=${TOKEN}"},
	{"x placeholder", "api_key=xxxx-xxxx"},
	{"stars placeholder", "password: ********"},
	{"your placeholder", `api_key = "YOUR_API_KEY"`},
	{"max tokens", "max_tokens: 4096\ntotalTokens=123456"},
	{"type annotations", "def login(username: str, password: str) -> bool:"},
	{"environment lookup", `password = os.environ["DB_PASSWORD"]`},
	{"attribute", "token = self.token"},
	{"token type", `"token_type": "bearer"`},
	{"tokenizer", "tokenizer: cl100k_base"},
	{"bearer in prose", "use a Bearer token in the Authorization header"},
	{"basic in prose", "Basic authentication is configured on this server"},
	{"public key and certificate", "-----BEGIN PUBLIC KEY-----\n" + pemBody + "\n-----END PUBLIC KEY-----\n-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----"},
	{"private key template", "-----BEGIN PRIVATE KEY-----\n...\n-----END PRIVATE KEY-----"},
	{"urls without password", "https://github.com/org/repo git@github.com:org/repo.git ssh://git@host/x https://user@host/"},
	{"url with placeholder password", "postgres://user:password@localhost/db mysql://root:${PASS}@db/x"},
	{"low entropy env", "GOPATH=/go/pkg\nAPP_NAME=MyAwesomeApplicationName2024\nGIT_COMMIT=3f786850e387550fdab836ed7e6dc881de23001b"},
	{"home in a url path", "https://example.com/home/about and https://example.com/Users/list"},
	{"jwt header alone", "header eyJhbGciOiJIUzI1NiJ9 only"},
	{"akia in prose", "keys start with AKIA or ASIA"},
	{"pwd variable", "PWD=/srv/app\nOLDPWD=/srv"},
	{"code assignment", "const apiKey = await getApiKeyForModel(model);\nconst token = tokens[0]; let password = prompt()"},
	{"comparison", `if password == "" { return }`},
}

func testRedactor() *redact.Redactor {
	return redact.New(&redact.Options{Home: []string{"/srv/people/erin"}})
}

func TestShapes(t *testing.T) {
	if len(shapes) < 40 {
		t.Fatalf("only %d shapes", len(shapes))
	}
	r := testRedactor()
	for _, c := range shapes {
		t.Run(c.name, func(t *testing.T) {
			out, rep := r.String(c.in)
			if strings.Contains(out, c.secret) {
				t.Errorf("secret %q left in %q", c.secret, out)
			}
			if rep.Counts[c.rule] != 1 || rep.Total() != 1 {
				t.Errorf("counts %v, want one of %s (out %q)", rep.Counts, c.rule, out)
			}
			want := "[REDACTED:" + c.rule + "]"
			if c.rule == "home-path" {
				want = "~"
			}
			if !strings.Contains(out, want) {
				t.Errorf("%q lacks %q", out, want)
			}
			again, rep2 := r.String(out)
			if again != out || rep2.Total() != 0 {
				t.Errorf("second pass changed %q to %q (%v)", out, again, rep2.Counts)
			}
		})
	}
}

func TestLookAlikes(t *testing.T) {
	if len(lookAlikes) < 20 {
		t.Fatalf("only %d look-alikes", len(lookAlikes))
	}
	r := testRedactor()
	for _, c := range lookAlikes {
		if out, rep := r.String(c.in); out != c.in || rep.Total() != 0 {
			t.Errorf("%s: changed to %q (%v)", c.name, out, rep.Counts)
		}
	}
}

// TestConcurrent shares one Redactor between goroutines (run with -race).
func TestConcurrent(t *testing.T) {
	r := testRedactor()
	done := make(chan string)
	for g := range 4 {
		go func() {
			for i := range shapes {
				c := shapes[(i+g)%len(shapes)]
				if out, _ := r.String(c.in); strings.Contains(out, c.secret) {
					done <- c.name
					return
				}
			}
			done <- ""
		}()
	}
	for range 4 {
		if name := <-done; name != "" {
			t.Errorf("%s: secret left", name)
		}
	}
}
