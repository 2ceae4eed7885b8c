package session

import "hash/maphash"

// idIndex finds a tree's node by its entry's id (tree.byID).
//
// Open addressing with linear probing over slots that hold 32 bits of the
// id's hash beside the node's index; the ids themselves are the nodes'.
// Two things make it cheaper than a map[string]int32 for a tree that
// grows one append at a time:
//   - Growing rehashes from the slots alone. A Go map hashes every key
//     again, reading each id's bytes, which lie scattered over the heap.
//   - A miss (a new id: every append checks one) almost never reads an
//     id: the hash bits tell the slots of other ids apart.
//
// At most half the slots are used. Entries are never removed: a tree
// that loses entries is built again.
type idIndex struct {
	slots []uint64 // hash<<32 | index+1; 0 is an empty slot
	n     int
}

// idSeed seeds hashID, the hash of entry ids that idIndex and idSet
// (filestore_session.go) keep.
var idSeed = maphash.MakeSeed()

// hashID is the hash of an entry id. The file reader takes it for each
// entry while the line is in the cache (Entry.idHash); otherwise it is
// taken when needed.
func hashID(id string) uint64 { return maphash.String(idSeed, id) }

// newIDIndex returns an index with room for n ids before it grows.
func newIDIndex(n int) idIndex {
	size := 16
	for size < 2*n {
		size *= 2
	}
	return idIndex{slots: make([]uint64, size)}
}

// get returns the index of the node with this id among nodes; hash is
// hashID(id).
func (x *idIndex) get(id string, hash uint64, nodes []node) (int32, bool) {
	if len(x.slots) == 0 {
		return 0, false
	}
	h := uint32(hash)
	mask := uint32(len(x.slots) - 1)
	for p := h & mask; ; p = (p + 1) & mask {
		s := x.slots[p]
		if s == 0 {
			return 0, false
		}
		if uint32(s>>32) == h {
			if i := int32(uint32(s)) - 1; nodes[i].e.id == id {
				return i, true
			}
		}
	}
}

// set makes id (whose hashID is hash) lead to node i (nodes[i] holds
// it), replacing the node it led to, if any.
func (x *idIndex) set(id string, hash uint64, i int32, nodes []node) {
	if 2*(x.n+1) > len(x.slots) {
		x.grow()
	}
	h := uint32(hash)
	mask := uint32(len(x.slots) - 1)
	for p := h & mask; ; p = (p + 1) & mask {
		s := x.slots[p]
		if s == 0 {
			x.slots[p] = uint64(h)<<32 | uint64(uint32(i)+1)
			x.n++
			return
		}
		if uint32(s>>32) == h && nodes[int32(uint32(s))-1].e.id == id {
			x.slots[p] = uint64(h)<<32 | uint64(uint32(i)+1)
			return
		}
	}
}

// grow doubles the slots, placing each id by the hash bits its slot kept.
func (x *idIndex) grow() {
	old := x.slots
	x.slots = make([]uint64, max(2*len(old), 16))
	mask := uint32(len(x.slots) - 1)
	for _, s := range old {
		if s == 0 {
			continue
		}
		p := uint32(s>>32) & mask
		for x.slots[p] != 0 {
			p = (p + 1) & mask
		}
		x.slots[p] = s
	}
}
