package session

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestCopyCacheMovedAndRepeated: a list whose messages moved (a branch, a
// compaction) reuses their copies by identity; a message at two positions
// gets a copy at each, never one copy twice.
func TestCopyCacheMovedAndRepeated(t *testing.T) {
	a, b, c, d := UserText("a"), UserText("b"), UserText("c"), UserText("d")
	var cc copyCache
	first := cc.copies([]*Message{a, b, c, d})
	moved := cc.copies([]*Message{b, c, d, a})
	assert.Same(t, first[1], moved[0])
	assert.Same(t, first[2], moved[1])
	assert.Same(t, first[3], moved[2])
	assert.Same(t, first[0], moved[3])

	twice := cc.copies([]*Message{b, d, d, b})
	require.Len(t, twice, 4)
	assert.NotSame(t, twice[1], twice[2], "one copy per position")
	assert.NotSame(t, twice[0], twice[3], "one copy per position")
	for i, want := range []string{"b", "d", "d", "b"} {
		assert.Equal(t, want, twice[i].Text())
	}
	again := cc.copies([]*Message{b, d, d, b})
	for i := range twice {
		assert.Same(t, twice[i], again[i])
	}
	assert.Nil(t, cc.copies(nil))
}
