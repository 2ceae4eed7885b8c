package redact_test

import (
	"bufio"
	"encoding/base64"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/agentsession/session/redact"
)

// The secret corpus (testdata/secrets.txt, whose header gives the
// format and the provenance of each shape): realistic secrets of
// published formats in the places coding sessions hold them, and
// look-alikes, filled from a fixed seed. TestSecretCorpus measures the
// default Redactor's recall (secrets of which nothing is left) and
// false-positive rate (look-alikes changed) and holds both to floors.
const (
	corpusSeeds   = 2 // instances of each secret template
	alikeSeeds    = 3 // instances of each look-alike template
	minRecall     = 0.99
	maxFalsePos   = 0.01
	minSecrets    = 200
	minLookAlikes = 200
)

var corpusClasses = map[string]string{
	"hex": "0123456789abcdef", "HEX": "0123456789ABCDEF", "dig": "0123456789",
	"b62":   "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789",
	"low":   "abcdefghijklmnopqrstuvwxyz0123456789",
	"up":    "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789",
	"b64":   "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/",
	"url":   "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-",
	"b32":   "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567",
	"bech":  "QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L",
	"alpha": "abcdefghijklmnopqrstuvwxyz",
}

// corpusSample is one filled template.
type corpusSample struct {
	kind, format, text, secret string
}

// fill expands the template with rng.
func fill(tpl string, rng *rand.Rand) (text, secret string, err error) {
	random := func(class string, n int) string {
		chars := corpusClasses[class]
		b := make([]byte, n)
		for i := range b {
			b[i] = chars[rng.IntN(len(chars))]
		}
		return string(b)
	}
	pem := func(sep string) string {
		var lines []string
		for range 6 + rng.IntN(6) {
			lines = append(lines, random("b64", 64))
		}
		lines = append(lines, random("b64", 20+rng.IntN(40))+"==")
		return strings.Join(lines, sep)
	}
	b64 := base64.StdEncoding.EncodeToString
	raw := base64.RawURLEncoding.EncodeToString
	var b strings.Builder
	tpl = strings.NewReplacer(`\n`, "\n", `\t`, "\t").Replace(strings.ReplaceAll(tpl, `\\n`, "\x00"))
	tpl = strings.ReplaceAll(tpl, "\x00", `\n`)
	secretStart := -1
	for i := 0; i < len(tpl); {
		switch {
		case strings.HasPrefix(tpl[i:], "«"):
			secretStart = b.Len()
			i += len("«")
		case strings.HasPrefix(tpl[i:], "»"):
			if secret == "" {
				secret = b.String()[secretStart:]
			}
			i += len("»")
		case tpl[i] == '{' && strings.IndexByte(tpl[i:], '}') > 0 &&
			!strings.ContainsAny(tpl[i+1:i+strings.IndexByte(tpl[i:], '}')], " \"'{«»"):
			end := i + strings.IndexByte(tpl[i:], '}')
			spec := tpl[i+1 : end]
			i = end + 1
			switch {
			case spec == "pem":
				b.WriteString(pem("\n"))
			case spec == "pemesc":
				b.WriteString(pem(`\n`))
			case spec == "jwt":
				h := raw([]byte(`{"alg":"HS256","typ":"JWT"}`))
				p := raw([]byte(fmt.Sprintf(`{"sub":"%s","name":"%s","iat":%s}`, random("dig", 10), random("alpha", 8), random("dig", 10))))
				b.WriteString(h + "." + p + "." + random("url", 43))
			case spec == "b64:user:pass":
				b.WriteString(b64([]byte(random("alpha", 6) + ":" + random("b62", 10))))
			case strings.HasPrefix(spec, "b64text:"):
				// The secret is the text's random part, judged decoded.
				secret = random("b62", 12)
				b.WriteString(b64([]byte(spec[len("b64text:"):] + secret + "\n")))
			default:
				class, n, ok := strings.Cut(spec, ":")
				count, err := strconv.Atoi(n)
				if !ok || err != nil || corpusClasses[class] == "" {
					b.WriteString("{" + spec + "}") // literal braces (code)
					continue
				}
				b.WriteString(random(class, count))
			}
		default:
			b.WriteByte(tpl[i])
			i++
		}
	}
	return b.String(), secret, nil
}

// loadCorpus reads testdata/secrets.txt and fills each template.
func loadCorpus(t testing.TB) []corpusSample {
	t.Helper()
	f, err := os.Open("testdata/secrets.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []corpusSample
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		parts := strings.SplitN(line, "\t", 3)
		if len(parts) != 3 || parts[0] != "secret" && parts[0] != "alike" {
			t.Fatalf("secrets.txt:%d: not kind<TAB>format<TAB>template", n)
		}
		seeds := corpusSeeds
		if parts[0] == "alike" {
			seeds = alikeSeeds
		}
		for seed := range seeds {
			rng := rand.New(rand.NewPCG(uint64(n), uint64(seed)))
			text, secret, err := fill(parts[2], rng)
			if err != nil {
				t.Fatal(err)
			}
			if parts[0] == "secret" && secret == "" {
				t.Fatalf("secrets.txt:%d: a secret template without «»", n)
			}
			out = append(out, corpusSample{parts[0], parts[1], text, secret})
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// leaked reports whether any 12 characters of the secret are left in out
// (the whole secret when it is shorter), or in the text of its data:
// URIs.
func leaked(out, secret string) bool {
	if _, data, ok := strings.Cut(out, ";base64,"); ok {
		if dec, err := base64.StdEncoding.DecodeString(strings.TrimRight(data, ")")); err == nil {
			out += "\n" + string(dec)
		}
	}
	n := min(12, len(secret))
	for i := 0; i+n <= len(secret); i += max(1, n/2) {
		if strings.Contains(out, secret[i:i+n]) {
			return true
		}
	}
	return false
}

func TestSecretCorpus(t *testing.T) {
	samples := loadCorpus(t)
	r := redact.New(&redact.Options{Home: []string{}})
	var secrets, found, alikes, changed int
	for _, c := range samples {
		out, rep := r.String(c.text)
		switch c.kind {
		case "secret":
			secrets++
			if leaked(out, c.secret) {
				t.Logf("missed %s: %q -> %q", c.format, c.text, out)
			} else {
				found++
			}
		case "alike":
			alikes++
			if out != c.text {
				changed++
				t.Logf("false positive %s: %q -> %q (%v)", c.format, c.text, out, rep.Counts)
			}
		}
	}
	recall := float64(found) / float64(secrets)
	fp := float64(changed) / float64(alikes)
	fmt.Printf("secret corpus: recall %.3f (%d of %d secrets), false positives %.3f (%d of %d look-alikes)\n",
		recall, found, secrets, fp, changed, alikes)
	if secrets < minSecrets || alikes < minLookAlikes {
		t.Errorf("the corpus has %d secrets and %d look-alikes, want %d and %d", secrets, alikes, minSecrets, minLookAlikes)
	}
	if recall < minRecall {
		t.Errorf("recall %.3f under %.2f", recall, minRecall)
	}
	if fp > maxFalsePos {
		t.Errorf("false positives %.3f over %.2f", fp, maxFalsePos)
	}
}
