package redact

import (
	"math/rand/v2"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentsession/session/internal/longtest"
)

// TestGitleaksRules: every rule of gitleaks' default configuration that
// applies to text is here, and compiles with Go's regexp, allowlists
// included.
func TestGitleaksRules(t *testing.T) {
	if !strings.HasPrefix(GitleaksVersion(), "v8.") {
		t.Errorf("gitleaks version %q", GitleaksVersion())
	}
	if len(gitleaksRules) < 200 {
		t.Errorf("only %d gitleaks rules", len(gitleaksRules))
	}
	ids := map[string]bool{}
	for _, g := range gitleaksRules {
		if ids[g.id] {
			t.Errorf("%s twice", g.id)
		}
		ids[g.id] = true
		if _, err := regexp.Compile(g.regex); err != nil {
			t.Errorf("%s: %v", g.id, err)
		}
		if len(g.keywords) == 0 {
			t.Errorf("%s: no keywords: it would run on every string", g.id)
		}
		for _, a := range g.allow {
			for _, re := range a.regexes {
				if _, err := regexp.Compile(re); err != nil {
					t.Errorf("%s: allowlist: %v", g.id, err)
				}
			}
		}
	}
	fast := 0
	for _, r := range gitleaksCompiled() {
		if r.Pattern == nil || r.find == nil {
			t.Errorf("%s: not compiled", r.Name)
		}
	}
	for _, g := range gitleaksRules {
		if analyze(g.regex, regexp.MustCompile(g.regex)).anchored != nil {
			fast++
		}
	}
	t.Logf("gitleaks %s: %d rules, %d searched from their literal prefixes", GitleaksVersion(), len(gitleaksRules), fast)
}

// fastPathInputs returns texts made of the pieces the rules look for
// (their keywords and literal prefixes, operators, quotes, runs of
// letters, digits and hex, the Unicode letters that fold to k and s),
// from a fixed seed.
func fastPathInputs(g glRule, lits []string, n int, seed uint64) []string {
	rng := rand.New(rand.NewPCG(seed, uint64(len(g.id))))
	pieces := append(slices.Clone(g.keywords), lits...)
	pieces = append(pieces, " ", " = ", "=", ":", ": ", ":=", "=>", "\"", "'", "`", "\n", "_", "-", ".", "/", "+", ",", ";",
		"\\n", "\u212a", "\u017f", "\t", "==", "?=", "||", "-----BEGIN", "PRIVATE KEY-----", "-----END ")
	const alnum = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
	const hex = "0123456789abcdef"
	var out []string
	for range n {
		var b strings.Builder
		for range 1 + rng.IntN(24) {
			switch k := rng.IntN(10); {
			case k < 5:
				b.WriteString(pieces[rng.IntN(len(pieces))])
			case k < 8:
				for range 1 + rng.IntN(80) {
					b.WriteByte(alnum[rng.IntN(len(alnum))])
				}
			default:
				for range 1 + rng.IntN(70) {
					b.WriteByte(hex[rng.IntN(len(hex))])
				}
			}
		}
		out = append(out, b.String())
	}
	return out
}

// TestGitleaksFastPath: the matches glRegex finds from the literal
// prefixes are those of the whole expression, groups included.
func TestGitleaksFastPath(t *testing.T) {
	inputs := 20 // a fifth of the inputs: most of a minute under the race detector
	if longtest.Enabled() {
		inputs = 100
	}
	for _, g := range gitleaksRules {
		full := regexp.MustCompile(g.regex)
		fast := analyze(g.regex, full)
		if fast.anchored == nil {
			continue
		}
		for _, s := range fastPathInputs(g, fast.lits.lits, inputs, 1) {
			if got, want := fast.findAll(s), full.FindAllStringSubmatchIndex(s, -1); !sameMatches(got, want) {
				t.Errorf("%s on %q:\n got %v\nwant %v", g.id, s, got, want)
				break
			}
		}
	}
}

func sameMatches(a, b [][]int) bool {
	return len(a) == len(b) && slices.EqualFunc(a, b, func(x, y []int) bool { return slices.Equal(x, y) })
}

// FuzzGitleaksFastPath compares glRegex with the whole expression on
// arbitrary text, for the rule the first byte picks.
func FuzzGitleaksFastPath(f *testing.F) {
	for i, g := range gitleaksRules {
		if i%8 == 0 {
			full := regexp.MustCompile(g.regex)
			for _, s := range fastPathInputs(g, analyze(g.regex, full).lits.lits, 2, 2) {
				f.Add(byte(i), s)
			}
		}
	}
	f.Add(byte(0), "api_key = \"0123456789abcdefABCDEF\"")
	fasts := make([]*glRegex, len(gitleaksRules))
	f.Fuzz(func(t *testing.T, pick byte, s string) {
		if len(s) > 4<<10 {
			return
		}
		i := int(pick) % len(gitleaksRules)
		g := gitleaksRules[i]
		if fasts[i] == nil {
			fasts[i] = analyze(g.regex, regexp.MustCompile(g.regex))
		}
		fast := fasts[i]
		if got, want := fast.findAll(s), fast.full.FindAllStringSubmatchIndex(s, -1); !sameMatches(got, want) {
			t.Fatalf("%s on %q:\n got %v\nwant %v", g.id, s, got, want)
		}
	})
}

// TestGitleaksRuleTime runs each gitleaks rule on 64 KB dense with what it
// looks for: none may be catastrophically slow (Go's regexp is linear,
// but a large program over every byte is a hundred times slower than
// the rest).
func TestGitleaksRuleTime(t *testing.T) {
	longtest.Skip(t, "times every gitleaks rule on 64 KB")
	if testing.Short() || raceDetector {
		t.Skip("slow, or timed under the race detector")
	}
	var slowest time.Duration
	var slowestID string
	for i, r := range gitleaksCompiled() {
		g := gitleaksRules[i]
		fast := analyze(g.regex, r.Pattern)
		s := strings.Join(fastPathInputs(g, fast.lits.lits, 400, 3), " ")
		for len(s) < 64<<10 {
			s += s
		}
		s = s[:64<<10]
		start := time.Now()
		r.find(s, func(int, int) {})
		d := time.Since(start)
		if d > slowest {
			slowest, slowestID = d, r.Name
		}
		if d > 2*time.Second {
			t.Errorf("%s: %v on 64 KB", r.Name, d)
		}
	}
	t.Logf("slowest rule: %s, %v on 64 KB", slowestID, slowest)
}
