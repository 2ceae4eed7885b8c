package session

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"
)

// keyedLocksEmpty reports whether l holds no key: every lock taken was
// let go, by its holder or by a waiter that gave up.
func keyedLocksEmpty(l *keyedLocks) bool {
	for i := range l.shards {
		sh := &l.shards[i]
		sh.mu.Lock()
		n := len(sh.m)
		sh.mu.Unlock()
		if n > 0 {
			return false
		}
	}
	return true
}

// The holders of one key take turns; other keys do not wait for them;
// nothing is left behind once all are done, and a lock taken again
// (the usual case: one handle writing) allocates nothing.
func TestKeyedLocks(t *testing.T) {
	var l keyedLocks
	ctx := context.Background()
	keys := []writerKey{{id: "a"}, {id: "b"}, {id: "c"}}
	counts := make([]int, len(keys)) // written under the key's lock only: -race sees a lapse
	want := make([]int, len(keys))
	var wg sync.WaitGroup
	for g := range 8 {
		want[g%len(keys)] += 500
		wg.Go(func() {
			k := g % len(keys)
			for range 500 {
				turn, err := l.lock(ctx, keys[k])
				if err != nil {
					t.Error(err)
					return
				}
				counts[k]++
				turn.unlock()
			}
		})
	}
	wg.Wait()
	for k, n := range counts {
		if n != want[k] {
			t.Errorf("key %s: %d turns, want %d", keys[k].id, n, want[k])
		}
	}
	if !keyedLocksEmpty(&l) {
		t.Error("keys left behind")
	}
	if n := testing.AllocsPerRun(100, func() {
		turn, err := l.lock(ctx, keys[0])
		if err != nil {
			t.Fatal(err)
		}
		turn.unlock()
	}); n != 0 {
		t.Errorf("a turn allocates %v times", n)
	}
	heldTurn{}.unlock() // the turn of a handle that takes none
}

// A waiter whose context ends gives up with its error and leaves no
// trace: the holder's unlock then removes the key.
func TestKeyedLocksGiveUp(t *testing.T) {
	var l keyedLocks
	key := writerKey{id: "s"}
	held, err := l.lock(context.Background(), key)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if _, err := l.lock(ctx, key); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("waiting past its deadline: %v", err)
	}
	if keyedLocksEmpty(&l) {
		t.Fatal("the held key is gone")
	}
	held.unlock()
	if !keyedLocksEmpty(&l) {
		t.Fatal("keys left behind")
	}
	again, err := l.lock(context.Background(), key) // the freed lock, reused
	if err != nil {
		t.Fatal(err)
	}
	again.unlock()
}
