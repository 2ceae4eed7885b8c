package redact

import "strings"

// findPrivateKeys finds what the private-key rule's Pattern matches (see
// privateKeyRule) and its Valid accepts, in one pass: a private key's
// armour, BEGIN line to END line, or, without an END line, BEGIN line and
// the body's characters after it. The expression alone reads the text to
// its end from every BEGIN line whose END line is missing (its lazy
// [\s\S]*? tries each), which is quadratic on text dense with BEGIN lines;
// here each kind of END line is looked for once, forward (endCursor).
func findPrivateKeys(s string, add func(start, end int)) {
	ends := [3]endCursor{{at: pemEnd}, {at: ssh2End}, {at: ovpnEnd}}
	floor := 0 // where the last match ended: the next starts there or after
	for pos := 0; pos < len(s); {
		k := strings.Index(s[pos:], "BEGIN")
		if k < 0 {
			return
		}
		k += pos
		pos = k + 1
		if k-5 < floor {
			continue
		}
		start := k - 5
		var kind, he int
		switch {
		case s[start:k] == "-----":
			if he = pemMarker(s, start, "-----BEGIN"); he >= 0 {
				kind = 0
			} else if he = literalAt(s, start, ovpnBeginLine); he >= 0 {
				kind = 2
			}
		case s[start:k] == "---- ":
			he, kind = ssh2Marker(s, start, "---- BEGIN SSH2 "), 1
		default:
			continue
		}
		if he < 0 {
			continue
		}
		// The END line first (the lazy branch), else the body's run.
		end := -1
		if e := ends[kind].from(s, he); e >= 0 {
			end = e
		} else {
			end = he
			for end < len(s) && pemBodyChar[kind][s[end]] {
				end++
			}
		}
		if pemBody(s[start:end]) {
			add(start, end)
		}
		floor = max(end, start+1)
		pos = floor
	}
}

// The OpenVPN static key's armour.
const (
	ovpnBeginLine = "-----BEGIN OpenVPN Static key V1-----"
	ovpnEndLine   = "-----END OpenVPN Static key V1-----"
)

// pemBodyChar holds, for each kind (PEM, RFC 4716, OpenVPN), the
// characters of a body cut short: base64, blanks, escapes (\n) and the
// headers' punctuation.
var pemBodyChar = func() (t [3][256]bool) {
	for c := 0; c < 256; c++ {
		b := byte(c)
		blank := b == ' ' || b == '\t' || b == '\n' || b == '\f' || b == '\r'
		t[0][c] = isAlnum(b) || blank || strings.IndexByte(`+/=\:,.-`, b) >= 0
		t[1][c] = t[0][c] || b == '"'
		t[2][c] = isDigit(b) || b >= 'a' && b <= 'f' || b >= 'A' && b <= 'F' || blank || b == '\\' || b == 'n'
	}
	return t
}()

// pemMarker returns the end of the armour line "<lead>[A-Z0-9 ]{0,40}
// PRIVATE KEY[ BLOCK]-----" at i (lead "-----BEGIN" or "-----END"), or -1.
// The run and the words are of one class, which a '-' ends: the words
// end where that class does.
func pemMarker(s string, i int, lead string) int {
	if !strings.HasPrefix(s[i:], lead) {
		return -1
	}
	b := i + len(lead)
	q := b
	for q < len(s) && q-b <= 40+len("PRIVATE KEY BLOCK") && (isUpper(s[q]) || isDigit(s[q]) || s[q] == ' ') {
		q++
	}
	if !strings.HasPrefix(s[q:], "-----") {
		return -1
	}
	words := s[b:q]
	for _, w := range [...]string{"PRIVATE KEY BLOCK", "PRIVATE KEY"} {
		if strings.HasSuffix(words, w) {
			if len(words)-len(w) > 40 {
				return -1
			}
			return q + 5
		}
	}
	return -1
}

// ssh2Marker returns the end of RFC 4716's armour line "<lead>[ENCRYPTED
// ]PRIVATE KEY ----" at i, or -1.
func ssh2Marker(s string, i int, lead string) int {
	if !strings.HasPrefix(s[i:], lead) {
		return -1
	}
	j := i + len(lead)
	if strings.HasPrefix(s[j:], "ENCRYPTED ") {
		j += len("ENCRYPTED ")
	}
	return literalAt(s, j, "PRIVATE KEY ----")
}

// literalAt returns the end of lit at i, or -1.
func literalAt(s string, i int, lit string) int {
	if !strings.HasPrefix(s[i:], lit) {
		return -1
	}
	return i + len(lit)
}

func pemEnd(s string, i int) int  { return pemMarker(s, i, "-----END") }
func ssh2End(s string, i int) int { return ssh2Marker(s, i, "---- END SSH2 ") }
func ovpnEnd(s string, i int) int { return literalAt(s, i, ovpnEndLine) }

// endCursor finds the first END line of one kind at or after a position
// that never decreases, and remembers it: the text is read once however
// many BEGIN lines look for it.
type endCursor struct {
	at      func(s string, i int) int // the end of an END line at i, or -1
	start   int                       // the start of the last one found, -1: none is left
	end     int
	scanned int // where the search for the next one resumes
	started bool
}

// from returns the end of the first END line that starts at or after i,
// or -1.
func (c *endCursor) from(s string, i int) int {
	if c.started && (c.start < 0 || c.start >= i) {
		if c.start < 0 {
			return -1
		}
		return c.end
	}
	c.started = true
	p := max(i, c.scanned)
	for {
		k := strings.Index(s[p:], "END")
		if k < 0 {
			c.start, c.scanned = -1, len(s)
			return -1
		}
		k += p
		p = k + 1
		if k < 5 || k-5 < i {
			continue
		}
		if e := c.at(s, k-5); e >= 0 {
			c.start, c.end, c.scanned = k-5, e, p
			return e
		}
	}
}
