package redact_test

import (
	"strings"
	"testing"
	"time"
)

// TestHostileTime runs the rules on 256 KB of text dense with what they
// look for: each finder must stay about linear (the quadratic ones took
// seconds to minutes here).
func TestHostileTime(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("slow, or timed under the race detector")
	}
	r := testRedactor()
	units := []string{
		"/home/a ", "-----BEGIN RSA PRIVATE KEY-----", "password=", "password=\"", "sk-",
		"password=password=", "AKIAQZA4RKNNGCWHCMWU ", "Bearer ", "a://", "u://a:b@",
		"token: x\n", "[REDACTED:", "eyJaaaaaaaaa.", `C:\Users\`, "AB=", "key=1", "basic QUJDOkRFRg== ",
	}
	for _, unit := range units {
		s := strings.Repeat(unit, 256<<10/len(unit))
		start := time.Now()
		r.String(s)
		if d := time.Since(start); d > 3*time.Second {
			t.Errorf("%q: %v", unit, d)
		}
	}
}
