package redact

import "strings"

// The prefilter spares the rules text they cannot match: it finds in one
// pass which rules' keywords a text holds, and only those rules run.
// Text without any keyword (most of a session) costs one table lookup
// per byte.

// ruleMask is a set of rules by index; the rules from the last bit's on
// share it (they all run when one of them may match).
type ruleMask [8]uint64

const maskBits = len(ruleMask{}) * 64

func bit(i int) ruleMask {
	var m ruleMask
	m.set(i)
	return m
}

func (m *ruleMask) set(i int) {
	i = min(i, maskBits-1)
	m[i/64] |= 1 << (i % 64)
}

func (m ruleMask) has(i int) bool {
	i = min(i, maskBits-1)
	return m[i/64]&(1<<(i%64)) != 0
}

func (m *ruleMask) or(o *ruleMask) {
	for i := range m {
		m[i] |= o[i]
	}
}

func (m *ruleMask) empty() bool { return *m == ruleMask{} }

// keyword is a folded keyword of the rules in mask; pair is its first two
// bytes.
type keyword struct {
	s    string
	pair uint16
	mask ruleMask
}

// maxSeen is how many keywords a scan remembers having found (the others
// are looked at every time they occur).
const maxSeen = 1024

type prefilter struct {
	// always holds the rules without keywords.
	always ruleMask
	kws    []keyword
	// single holds the one-byte keywords, looked for with IndexByte.
	single []int
	// pairs is a bit set of the first two bytes of every longer
	// keyword; bucket the keywords by a hash of those two bytes.
	pairs  [1 << 16 / 64]uint64
	bucket [256][]int
	// byPair lists the keywords of each pair in the bit set, at
	// pairIndex[pair]-1.
	byPair    [][]int
	pairIndex []uint16
	// hidden: a keyword holds a byte that a short JSON escape stands for
	// (quote, backslash, control), so the raw bytes of an escaped JSON
	// string cannot be searched for it.
	hidden bool
}

func newPrefilter(kws [][]string) *prefilter {
	p := &prefilter{}
	for i, list := range kws {
		if len(list) == 0 {
			p.always.set(i)
			continue
		}
		for _, k := range list {
			p.add(k, i)
		}
	}
	return p
}

func (p *prefilter) add(k string, rule int) {
	if k == "" {
		p.always.set(rule)
		return
	}
	f := foldString(k)
	for i := 0; i < len(f); i++ {
		if c := f[i]; c == '"' || c == '\\' || c < 0x20 {
			p.hidden = true
		}
	}
	for _, id := range p.lookup(f) {
		if p.kws[id].s == f {
			p.kws[id].mask.set(rule)
			return
		}
	}
	id := len(p.kws)
	kw := keyword{s: f}
	kw.mask.set(rule)
	if len(f) == 1 {
		p.kws = append(p.kws, kw)
		p.single = append(p.single, id)
		return
	}
	kw.pair = uint16(f[0])<<8 | uint16(f[1])
	p.kws = append(p.kws, kw)
	p.pairs[kw.pair>>6] |= 1 << (kw.pair & 63)
	h := pairHash(kw.pair)
	p.bucket[h] = append(p.bucket[h], id)
	if p.pairIndex == nil {
		p.pairIndex = make([]uint16, 1<<16)
	}
	if p.pairIndex[kw.pair] == 0 {
		p.byPair = append(p.byPair, nil)
		p.pairIndex[kw.pair] = uint16(len(p.byPair))
	}
	pi := p.pairIndex[kw.pair] - 1
	p.byPair[pi] = append(p.byPair[pi], id)
}

// lookup returns the ids of the keywords that may be f.
func (p *prefilter) lookup(f string) []int {
	if len(f) == 1 {
		return p.single
	}
	return p.bucket[pairHash(uint16(f[0])<<8|uint16(f[1]))]
}

func pairHash(k uint16) uint8 { return uint8((uint32(k) * 2654435761) >> 24) }

// scan returns the rules whose keywords s holds.
func (p *prefilter) scan(s string) ruleMask {
	m := p.always
	for _, id := range p.single {
		if w := &p.kws[id]; indexFoldByte(s, w.s[0]) {
			m.or(&w.mask)
		}
	}
	if len(s) < 2 {
		return m
	}
	var seen [maxSeen / 64]uint64
	// In a long text, a pair whose keywords have all been found is
	// taken out of a copy of the set: it costs one bit test after.
	pairs := &p.pairs
	var local [1 << 16 / 64]uint64
	if len(s) > 8<<10 {
		local = p.pairs
		pairs = &local
	}
	prev := fold[s[0]]
	for i := 1; i < len(s); i++ {
		c := fold[s[i]]
		k := uint16(prev)<<8 | uint16(c)
		prev = c
		if pairs[k>>6]&(1<<(k&63)) == 0 {
			continue
		}
		all := true
		for _, id := range p.byPair[p.pairIndex[k]-1] {
			if id < maxSeen && seen[id/64]&(1<<(id%64)) != 0 {
				continue
			}
			if w := &p.kws[id]; hasFoldPrefix(s[i-1:], w.s) {
				m.or(&w.mask)
				if id < maxSeen {
					seen[id/64] |= 1 << (id % 64)
					continue
				}
			}
			all = false
		}
		if all && pairs == &local {
			local[k>>6] &^= 1 << (k & 63)
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

// foldCursor finds a word (folded) in s ignoring ASCII case, from
// positions that never decrease, and remembers the last one it found: a
// finder that looks for the first of several words reads s once for each
// word, not once for each occurrence of another (which was quadratic on
// text dense with one of them and without the other).
type foldCursor struct {
	w       string
	at      int // the last occurrence found, -1 when there is none left
	started bool
}

// from returns the index of the first w in s at or after i, or -1; i
// must not be less than in the call before.
func (c *foldCursor) from(s string, i int) int {
	if !c.started || c.at >= 0 && c.at < i {
		c.at, c.started = indexFold(s, c.w, i), true
	}
	return c.at
}
