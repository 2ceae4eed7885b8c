package redact

import "strings"

// The prefilter spares the rules text they cannot match: it finds in one
// pass which rules' keywords a text holds, and only those rules run.
// Text without any keyword (most of a session) costs one table lookup
// per byte.

// ruleMask is a set of rules by index; the rules from the 64th on share
// the last bit (they all run when one of them may match).
type ruleMask uint64

func bit(i int) ruleMask { return 1 << min(i, 63) }

func (m ruleMask) has(i int) bool { return m&bit(i) != 0 }

// keyword is a folded keyword of the rules in mask; pair is its first two
// bytes.
type keyword struct {
	s    string
	pair uint16
	mask ruleMask
}

type prefilter struct {
	// always holds the rules without keywords.
	always ruleMask
	// single holds the one-byte keywords, looked for with IndexByte.
	single []keyword
	// pairs is a bit set of the first two bytes of every longer
	// keyword; bucket the keywords by a hash of those two bytes.
	pairs  [1 << 16 / 64]uint64
	bucket [256][]keyword
	// hidden: a keyword holds a byte that a short JSON escape stands for
	// (quote, backslash, control), so the raw bytes of an escaped JSON
	// string cannot be searched for it.
	hidden bool
}

func newPrefilter(kws [][]string) *prefilter {
	p := &prefilter{}
	for i, list := range kws {
		if len(list) == 0 {
			p.always |= bit(i)
			continue
		}
		for _, k := range list {
			p.add(k, bit(i))
		}
	}
	return p
}

func (p *prefilter) add(k string, m ruleMask) {
	if k == "" {
		p.always |= m
		return
	}
	f := foldString(k)
	for i := 0; i < len(f); i++ {
		if c := f[i]; c == '"' || c == '\\' || c < 0x20 {
			p.hidden = true
		}
	}
	if len(f) == 1 {
		p.single = append(p.single, keyword{s: f, mask: m})
		return
	}
	pair := uint16(f[0])<<8 | uint16(f[1])
	p.pairs[pair>>6] |= 1 << (pair & 63)
	h := pairHash(pair)
	for j, w := range p.bucket[h] {
		if w.s == f {
			p.bucket[h][j].mask |= m
			return
		}
	}
	p.bucket[h] = append(p.bucket[h], keyword{s: f, pair: pair, mask: m})
}

func pairHash(k uint16) uint8 { return uint8((uint32(k) * 2654435761) >> 24) }

// scan returns the rules whose keywords s holds.
func (p *prefilter) scan(s string) ruleMask {
	m := p.always
	for _, w := range p.single {
		if m&w.mask != w.mask && indexFoldByte(s, w.s[0]) {
			m |= w.mask
		}
	}
	if len(s) < 2 {
		return m
	}
	prev := fold[s[0]]
	for i := 1; i < len(s); i++ {
		c := fold[s[i]]
		k := uint16(prev)<<8 | uint16(c)
		prev = c
		if p.pairs[k>>6]&(1<<(k&63)) == 0 {
			continue
		}
		for _, w := range p.bucket[pairHash(k)] {
			if w.pair == k && m&w.mask != w.mask && hasFoldPrefix(s[i-1:], w.s) {
				m |= w.mask
			}
		}
	}
	return m
}

func indexFoldByte(s string, c byte) bool {
	if strings.IndexByte(s, c) >= 0 {
		return true
	}
	if u := upper(c); u != c {
		return strings.IndexByte(s, u) >= 0
	}
	return false
}

// fold maps ASCII capitals to small letters and every other byte to
// itself.
var fold = func() (t [256]byte) {
	for i := range t {
		t[i] = byte(i)
		if i >= 'A' && i <= 'Z' {
			t[i] = byte(i) + 'a' - 'A'
		}
	}
	return t
}()

func upper(c byte) byte {
	if c >= 'a' && c <= 'z' {
		return c - 'a' + 'A'
	}
	return c
}

func foldString(s string) string {
	b := []byte(s)
	for i, c := range b {
		b[i] = fold[c]
	}
	return string(b)
}

// hasFoldPrefix reports whether s starts with the folded w, ignoring
// ASCII case.
func hasFoldPrefix(s, w string) bool {
	if len(s) < len(w) {
		return false
	}
	for i := 0; i < len(w); i++ {
		if fold[s[i]] != w[i] {
			return false
		}
	}
	return true
}

// indexFold returns the index of the first w (folded) in s ignoring
// ASCII case, from byte from on, or -1.
func indexFold(s, w string, from int) int {
	for i := from; i+len(w) <= len(s); i++ {
		if fold[s[i]] == w[0] && hasFoldPrefix(s[i:], w) {
			return i
		}
	}
	return -1
}
