package jsonx

import (
	"encoding/binary"
	"encoding/json"
	"math/bits"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

// This file keeps an experiment that did not pay, so that it can be run
// again rather than tried again: unescapeMasks is unescapeFast the way
// SIMD parsers go about it, in scalar Go. It takes each 64 bytes'
// backslashes, quotes and control bytes as three 64-bit masks and walks
// the escapes by their bits, copying the runs between them a word at a
// time, to take one unpredictable branch per block rather than one per
// escape. On code it is about half again as slow as unescapeFast
// (BenchmarkUnescapeMasks: 7.1 against 4.8 µs for 5 kB of code, medians
// of 6): building the masks costs more than the branches save.
func unescapeMasks(b []byte, j int, buf []byte) (_ []byte, _ int, canon bool, _ error) {
	from := len(buf)
	var high uint64
	slash := false
	for j+72 <= len(b) { // the words copied past a block's last run stay in b
		var bs, qu, ct uint64
		for w := range 8 {
			x := binary.LittleEndian.Uint64(b[j+8*w:])
			high |= x
			bs |= movemask(eqBytes(x, '\\')) << (8 * w)
			qu |= movemask(eqBytes(x, '"')) << (8 * w)
			ct |= movemask(ctlBytes(x)) << (8 * w)
		}
		buf = slices.Grow(buf, 64+8)
		n := len(buf)
		out := buf[n : n+64+8]
		o, p := 0, 0
		for p < 64 {
			k := bits.TrailingZeros64(bs)
			q := bits.TrailingZeros64(qu)
			stop := min(k, q)
			if bits.TrailingZeros64(ct) < stop {
				return buf[:n+o], j + p, false, errSlowPath
			}
			binary.LittleEndian.PutUint64(out[o:], binary.LittleEndian.Uint64(b[j+p:]))
			for i := p + 8; i < stop; i += 8 {
				binary.LittleEndian.PutUint64(out[o+i-p:], binary.LittleEndian.Uint64(b[j+i:]))
			}
			o += stop - p
			if q < k {
				buf = buf[:n+o]
				if high&msb != 0 && !utf8.Valid(buf[from:]) {
					return buf, j + q, false, errSlowPath
				}
				return buf, j + q + 1, !slash, nil
			}
			if k == 64 {
				p = 64
				break
			}
			e := escapeByte[b[j+k+1]]
			if e == 0 {
				return buf[:n+o], j + k, false, errSlowPath
			}
			out[o] = e
			o++
			slash = slash || b[j+k+1] == '/'
			bs &^= 3 << k // the backslash and what it escapes
			qu &^= 3 << k
			ct &^= 3 << k
			p = k + 2
		}
		buf = buf[:n+o]
		j += p
	}
	if high&msb != 0 && !utf8.Valid(buf[from:]) {
		return buf, j, false, errSlowPath
	}
	buf, end, canon, err := unescapeFast(b, j, buf)
	return buf, end, canon && !slash, err
}

// movemask gathers the top bit of each byte of m (the other bits clear)
// into its low 8 bits, byte 0 to bit 0.
func movemask(m uint64) uint64 { return (m * 0x0002040810204081) >> 56 }

// eqBytes sets the top bit of each byte of x equal to c, exactly.
func eqBytes(x uint64, c byte) uint64 {
	t := x ^ (lsb * uint64(c))
	return ^(((t &^ msb) + ^uint64(msb)) | t) & msb
}

// ctlBytes sets the top bit of each byte of x below 0x20, exactly.
func ctlBytes(x uint64) uint64 { return ^(((x &^ msb) + lsb*0x60) | x) & msb }

// unescapeInputs are string tokens past their opening quote: code, prose
// with a few escapes, and the block edges (an escape across two blocks).
func unescapeInputs() map[string][]byte {
	code := strings.Repeat("\tfmt.Fprintf(w, \"%d\\t%q\\n\", i, line) // 123\n", 100)
	quoted := strings.Repeat("the session \"tree\" keeps every branch of the conversation, then goes on\n", 20)
	in := map[string][]byte{}
	for name, s := range map[string]string{"code": code, "quoted": quoted} {
		tok, _ := json.Marshal(s)
		in[name] = append(tok[1:], ",\"next\":1}"...)
	}
	// Escaped slashes, which AppendString would not write (canon false):
	// the string ends inside a block, and in the tail.
	in["slash"] = []byte(strings.Repeat(`a\/b`, 5) + strings.Repeat("c", 20) + `"` + strings.Repeat("x", 100))
	in["slash-tail"] = []byte(strings.Repeat(`a\/b\n`, 30) + `"}`)
	for pre := 56; pre < 72; pre++ {
		tok, _ := json.Marshal(strings.Repeat("a", pre) + "\"\\é" + strings.Repeat("b", 80) + "/\n")
		in["edge"+strings.Repeat("+", pre-56)] = append(tok[1:], '}')
	}
	return in
}

// TestUnescapeMasks: the experiment gives what unescapeFast gives, so
// that its benchmark compares like with like.
func TestUnescapeMasks(t *testing.T) {
	for name, b := range unescapeInputs() {
		want, wend, wcanon, werr := unescapeFast(b, 0, nil)
		got, end, canon, err := unescapeMasks(b, 0, nil)
		if string(got) != string(want) || end != wend || canon != wcanon || err != werr {
			t.Errorf("%s: got %q %d %v %v, want %q %d %v %v", name, got, end, canon, err, want, wend, wcanon, werr)
		}
	}
}

func BenchmarkUnescapeMasks(b *testing.B) {
	in := unescapeInputs()
	for _, name := range []string{"code", "quoted"} {
		tok := in[name]
		buf := make([]byte, 0, len(tok)+128)
		for _, f := range []struct {
			name string
			fn   func([]byte, int, []byte) ([]byte, int, bool, error)
		}{{"fast", unescapeFast}, {"masks", unescapeMasks}} {
			b.Run(name+"/"+f.name, func(b *testing.B) {
				b.SetBytes(int64(len(tok)))
				for b.Loop() {
					f.fn(tok, 0, buf[:0])
				}
			})
		}
	}
}
