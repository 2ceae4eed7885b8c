package session

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// idIndexRig keeps an idIndex beside the map it stands for, over nodes
// that hold the ids, as a tree does.
type idIndexRig struct {
	x     idIndex
	want  map[string]int32
	nodes []node
}

func (r *idIndexRig) set(id string) {
	i := int32(len(r.nodes))
	r.nodes = append(r.nodes, node{e: Entry{id: id}})
	r.x.set(id, hashID(id), i, r.nodes)
	r.want[id] = i
}

func (r *idIndexRig) check(t *testing.T, id string) {
	t.Helper()
	got, ok := r.x.get(id, hashID(id), r.nodes)
	want, wantOK := r.want[id]
	if ok != wantOK || got != want {
		t.Fatalf("get(%q) = %d, %v; want %d, %v", id, got, ok, want, wantOK)
	}
}

// The index answers as a map would, through its growth from empty and
// from a size given, with ids set again (the later node wins) and ids
// never set.
func TestIDIndex(t *testing.T) {
	for _, start := range []int{0, 1, 100, 5000} {
		t.Run(fmt.Sprint(start), func(t *testing.T) {
			r := &idIndexRig{want: map[string]int32{}}
			if start > 0 {
				r.x = newIDIndex(start)
			}
			rng := rand.New(rand.NewPCG(1, uint64(start)))
			var ids []string
			for k := range 20000 {
				id := fmt.Sprintf("%08x", rng.Uint32())
				if len(ids) > 0 && k%10 == 0 {
					id = ids[rng.IntN(len(ids))] // a duplicate line
				}
				ids = append(ids, id)
				r.set(id)
				r.check(t, id)
				r.check(t, ids[rng.IntN(len(ids))])
				r.check(t, fmt.Sprintf("absent-%d", k))
			}
			for _, id := range ids {
				r.check(t, id)
			}
			if r.x.n != len(r.want) || 2*r.x.n > len(r.x.slots) {
				t.Fatalf("%d ids in %d slots; want %d ids, at most half the slots", r.x.n, len(r.x.slots), len(r.want))
			}
		})
	}
	var empty idIndex
	if _, ok := empty.get("x", hashID("x"), nil); ok {
		t.Fatal("the zero index holds an id")
	}
}

// Ids whose hashes agree in the 32 bits a slot keeps are told apart by
// the ids themselves.
func TestIDIndexSameHashBits(t *testing.T) {
	seen := map[uint32]string{}
	var a, b string
	for k := 0; a == ""; k++ {
		id := fmt.Sprintf("id-%d", k)
		h := uint32(hashID(id))
		if other, ok := seen[h]; ok {
			a, b = other, id
		}
		seen[h] = id
	}
	for _, order := range [][2]string{{a, b}, {b, a}} {
		r := &idIndexRig{want: map[string]int32{}}
		r.set(order[0])
		r.check(t, order[1]) // absent, behind a slot with its hash bits
		r.set(order[1])
		r.set(order[0]) // again: the first one's slot is replaced
		for _, id := range order {
			r.check(t, id)
		}
		if r.x.n != 2 {
			t.Fatalf("%d ids, want 2", r.x.n)
		}
	}
}

// An entry made here carries its id's hash, and one made again with
// another id (copyAs) the hash of that id, never the first one's: a
// stale hash would hide the entry from the tree and the store's id set.
func TestBuiltEntryIDHash(t *testing.T) {
	e, err := newMessageEntry("a1", "", "2026-01-15T10:00:00.000Z", &Message{Role: RoleUser, Content: []Block{{Type: BlockText, Text: "hi"}}})
	if err != nil {
		t.Fatal(err)
	}
	c, err := e.copyAs("b2", "a1")
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range []Entry{e, c} {
		if x.idHash() != hashID(x.id) || (x.idh != 0 && x.idh != hashID(x.id)) {
			t.Errorf("entry %s: idh %x, want %x", x.id, x.idh, hashID(x.id))
		}
	}
	if e.idh == 0 {
		t.Error("a built entry has no hash")
	}
}
