package redact

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// TestPrivateKeysAsPattern checks that findPrivateKeys finds what the
// private-key rule's expression and Valid find, on texts made of the
// armour's pieces in any order (END lines missing, BEGIN lines repeated,
// bodies cut short, escaped newlines).
func TestPrivateKeysAsPattern(t *testing.T) {
	body := "MIIEowIBAAKCAQEAxN3kqNVVlJVAZMTVFCx3bImrZlkJzGBhgy+Jf/H35ErpWoMBA5TL"
	pieces := []string{
		"-----BEGIN", "-----END", "---- BEGIN SSH2 ", "---- END SSH2 ", "ENCRYPTED ", "PRIVATE KEY",
		" BLOCK", "-----", "----", " ----", "RSA ", "EC ", "OPENSSH ", strings.Repeat("A", 41), "BEGIN", "END",
		"-----BEGIN OpenVPN Static key V1-----", "-----END OpenVPN Static key V1-----", "OpenVPN Static key V1",
		body, body[:20], "0123456789abcdef0123456789abcdef", "\n", `\n`, " ", "!", `"`, "Comment: x", "-", "A", "n",
	}
	ref := compiled{Rule: Rule{Pattern: privateKeyPattern(), Valid: pemBody}}
	rng := rand.New(rand.NewPCG(1, 2))
	for n := range 50000 {
		var b strings.Builder
		for range 1 + rng.IntN(24) {
			b.WriteString(pieces[rng.IntN(len(pieces))])
		}
		s := b.String()
		if n%3 == 0 {
			// Whole keys among the pieces.
			s = strings.ReplaceAll(s, "!", "-----BEGIN RSA PRIVATE KEY-----\n"+body+"\n"+body+"\n")
		}
		var want, got [][2]int
		ref.each(s, func(start, end int) { want = append(want, [2]int{start, end}) })
		findPrivateKeys(s, func(start, end int) { got = append(got, [2]int{start, end}) })
		if !slices.Equal(got, want) {
			t.Fatalf("%q:\n got %v\nwant %v", s, got, want)
		}
	}
}
