package session

import (
	"bytes"
	"testing"
)

// isBlobRef on a long string costs nothing like the string: it is
// judged by its length first (an image's base64 is asked about on every
// append that holds it).
func TestIsBlobRefOfLongStrings(t *testing.T) {
	long := bytes.Repeat([]byte("A"), 32<<20)
	allocs := testing.AllocsPerRun(3, func() { isBlobRef(long) })
	if allocs > 0 {
		t.Errorf("%v allocations to judge a 32 MiB string", allocs)
	}
	ref := []byte(BlobRef([]byte("x")))
	if !isBlobRef(ref) || isBlobRef(ref[:len(ref)-1]) || isBlobRef(append(ref[:len(ref)-1:len(ref)-1], 'G')) {
		t.Error("isBlobRef judges references wrongly")
	}
}
