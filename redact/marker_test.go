package redact_test

import (
	"strings"
	"testing"

	"github.com/agentsession/session/redact"
)

// A made-up Anthropic key of the published shape (sk-ant-api03-, 93
// characters, AA) and a GitHub token.
const (
	antKey  = "sk-ant-api03-Xq7vN2pLk9RtY4wZbC6mF1sHjD8gE3aK5uQoVxI0lPzT7nBcM2yR4eW9hJ6fA1dS3gK8qL5vN0xZ7bT2mY4pR9wC6jH1kF3sD8gA5eQuOAA"
	ghToken = "ghp_7i0C02E9nMoZ6AbYpZJ50mXHPeALpErLsIlv"
)

// noSecret fails the test when redacting in leaves one of the secrets,
// or when redacting the result again changes it.
func noSecret(t *testing.T, r *redact.Redactor, in string, secrets ...string) {
	t.Helper()
	out, rep := r.String(in)
	for _, sec := range secrets {
		if strings.Contains(out, sec) {
			t.Errorf("secret %q left: %q -> %q (%v)", sec, in, out, rep.Counts)
		}
	}
	if again, rep2 := r.String(out); again != out || rep2.Total() != 0 {
		t.Errorf("not idempotent: %q -> %q -> %q", in, out, again)
	}
}

// TestMarkerDoesNotShield: text that looks like a replacement marker
// hides nothing after it or inside it; only the markers the redactor
// writes itself are left as they are (so that redacting is idempotent).
func TestMarkerDoesNotShield(t *testing.T) {
	r := testRedactor()
	for _, in := range []string{
		"[REDACTED: " + antKey + " ]",
		"[REDACTED:x " + antKey + " ]",
		"[REDACTED:x] then " + antKey,
		"[REDACTED:" + antKey + "]",
		"[REDACTED:" + ghToken + "]",
		"[REDACTED:anthropic-api-key " + ghToken + "]",
		"quoting [REDACTED: the tool said\n" + ghToken + "\nand then]",
		"[REDACTED:[REDACTED:x] " + ghToken + "]",
		"unbalanced [REDACTED: " + ghToken,
		"[REDACTED:password]" + ghToken,
		"token=[REDACTED:" + ghToken,
		strings.Repeat("[REDACTED:", 50) + ghToken + strings.Repeat("]", 50),
	} {
		noSecret(t, r, in, "Xq7vN2pLk9RtY4wZbC6m", "7i0C02E9nMoZ6AbY")
	}
	// A value that starts with a marker, or names one, is still judged
	// by what else it holds.
	for _, in := range []string{
		`password="[REDACTED:x] hunter2-Zq81"`,
		`password=[REDACTED:x]hunter2-Zq81`,
		`DB_PASSWORD: "[redacted] hunter2-Zq81"`,
		`password=redacted-hunter2-Zq81`,
		`{"password": "[REDACTED:password] hunter2-Zq81"}`,
	} {
		noSecret(t, r, in, "hunter2-Zq81")
	}
	// The redactor's own markers are kept, and nothing is taken across
	// them; placeholders that say a value was redacted stay.
	for _, in := range []string{
		"password=[REDACTED:password] user=bob",
		"postgres://app:[REDACTED:url-password]@db/x",
		"Authorization: Bearer [REDACTED:bearer-token]",
		"[REDACTED:github-pat] [REDACTED:anthropic-api-key]",
		"password=[REDACTED:password]",
		`password: "<redacted>"`,
		"password=***REDACTED***",
		`"password": "[REDACTED]"`,
	} {
		if out, rep := r.String(in); out != in || rep.Total() != 0 {
			t.Errorf("%q -> %q (%v)", in, out, rep.Counts)
		}
	}
}
