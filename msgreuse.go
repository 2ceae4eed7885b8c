package session

import (
	"fmt"
	"reflect"
	"unsafe"
)

// Copies made once and handed out again (the copy rule, msgcopy.go).
//
// Messages and Context keep, per position of the list they hand out, the
// copy they made of the session's message there. The next call hands the
// same copy out again if it still equals the session's message, and a
// fresh copy otherwise (the caller edited it), so no answer carries what
// a caller did to an earlier one. The check reads the copy once and costs
// no allocation: a copy shares its strings with the session's message,
// so a string compares as its pointer and length; the byte slices
// (arguments, details, citations, unknown members) compare by content,
// and every slice and pointer must be the copy's own (never the
// session's, never spare capacity into which an append would write).
//
// The check compares what reflection finds in Message, field by field
// (eqPlan): a field added to Message, Block, Usage or Field is compared
// with no change here, and a kind of field it has no rule for stops the
// package at init.

// copyCache is what one kind of answer (Messages, Context) handed out
// last: orig[i] is the session's message at position i, cp[i] the copy.
type copyCache struct {
	orig []*Message
	cp   []*Message
}

// copies returns the caller's copy of list: the cached copies that still
// equal the session's messages, fresh ones for the others. It is
// O(len(list)) in reads and one slice, plus the copy of what is new or
// was edited. A list that is the last one with messages appended (a turn)
// reuses by position; a list that changed otherwise (a branch, a
// compaction, a reload) finds the unchanged messages by identity.
func (c *copyCache) copies(list []*Message) []*Message {
	if list == nil {
		c.orig, c.cp = nil, nil
		return nil
	}
	out := make([]*Message, len(list))
	var stale []int
	var moved map[*Message]*Message
	for i, m := range list {
		var cp *Message
		if moved == nil && i < len(c.orig) && c.orig[i] == m {
			cp = c.cp[i]
		} else {
			// From the first change on, by identity only: each old copy
			// goes to one position, even if a message is there twice.
			if moved == nil {
				moved = c.byOrig(i)
			}
			if cp = moved[m]; cp != nil {
				delete(moved, m)
			}
		}
		if cp != nil && sameCopy(cp, m) {
			out[i] = cp
			continue
		}
		stale = append(stale, i)
	}
	if moved != nil && 2*(len(list)-len(stale)) < len(list) {
		// Most of the list is new (a compaction, a reload): copy it all
		// anew, in one allocation per kind, rather than keep the slabs of
		// the old copies alive for the few that are left.
		stale = stale[:0]
		for i := range list {
			stale = append(stale, i)
		}
	}
	if len(stale) > 0 {
		olds := make([]*Message, len(stale))
		for k, i := range stale {
			olds[k] = list[i]
		}
		for k, cp := range copyMessages(olds) {
			out[stale[k]] = cp
		}
	}
	c.remember(list, out)
	return out
}

// byOrig maps the session's messages at positions from on to their
// copies, for a list that changed other than by appends.
func (c *copyCache) byOrig(from int) map[*Message]*Message {
	m := make(map[*Message]*Message, len(c.orig)-min(from, len(c.orig)))
	for i := from; i < len(c.orig); i++ {
		m[c.orig[i]] = c.cp[i]
	}
	return m
}

// remember keeps list and its copies for the next call, in slices of the
// cache's own (out is the caller's).
func (c *copyCache) remember(list, out []*Message) {
	n := len(list)
	if cap(c.orig) < n || cap(c.orig) > 4*n+64 {
		c.orig = make([]*Message, n, n+n/4+16)
		c.cp = make([]*Message, n, n+n/4+16)
	} else {
		if n < len(c.orig) {
			clear(c.orig[n:]) // let go of what the list no longer holds
			clear(c.cp[n:])
		}
		c.orig, c.cp = c.orig[:n], c.cp[:n]
	}
	for i := range n {
		if c.orig[i] != list[i] || c.cp[i] != out[i] {
			c.orig[i], c.cp[i] = list[i], out[i]
		}
	}
}

// sameCopy reports whether cp, a copy handed out, still equals the
// session's message m, with none of m's memory in it.
func sameCopy(cp, m *Message) bool {
	if cp == m {
		return false
	}
	return messagePlan.equal(unsafe.Pointer(cp), unsafe.Pointer(m))
}

// ---- the comparison, planned by reflection ----

type opKind uint8

const (
	opRange opKind = iota // bytes compared as they are: numbers, bools, string headers
	opBytes               // a []byte: content, and the copy's own memory
	opSlice               // a []T of structs: element by element
	opPtr                 // a *T: the pointee
)

type eqOp struct {
	kind opKind
	off  uintptr
	size uintptr // opRange: bytes; opSlice: the element's size
	elem *eqPlan // opSlice, opPtr
}

// eqPlan compares a value of one type in a copy with the session's.
type eqPlan struct{ ops []eqOp }

var messagePlan = planFor(reflect.TypeFor[Message]())

// planFor plans the comparison of values of t. Every field is covered:
// numbers, bools and strings (string headers: the copy shares the
// session's strings, so equal means the same pointer and length) by
// memory; []byte by content; slices of and pointers to structs or
// numbers by their elements. Any other kind panics, so that a field of a
// new kind cannot go unchecked.
func planFor(t reflect.Type) *eqPlan {
	p := &eqPlan{}
	p.add(t, 0, t.String())
	return p
}

func (p *eqPlan) add(t reflect.Type, off uintptr, name string) {
	switch t.Kind() {
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64, reflect.String:
		if n := len(p.ops); n > 0 && p.ops[n-1].kind == opRange && p.ops[n-1].off+p.ops[n-1].size == off {
			p.ops[n-1].size += t.Size()
			return
		}
		p.ops = append(p.ops, eqOp{kind: opRange, off: off, size: t.Size()})
	case reflect.Struct:
		for i := range t.NumField() {
			f := t.Field(i)
			p.add(f.Type, off+f.Offset, name+"."+f.Name)
		}
	case reflect.Slice:
		e := t.Elem()
		switch e.Kind() {
		case reflect.Uint8:
			p.ops = append(p.ops, eqOp{kind: opBytes, off: off})
		case reflect.Struct:
			p.ops = append(p.ops, eqOp{kind: opSlice, off: off, size: e.Size(), elem: planFor(e)})
		default:
			panic(fmt.Sprintf("session: the copy rule has no comparison for %s (%s)", name, t))
		}
	case reflect.Pointer:
		p.ops = append(p.ops, eqOp{kind: opPtr, off: off, elem: planFor(t.Elem())})
	default:
		panic(fmt.Sprintf("session: the copy rule has no comparison for %s (%s)", name, t))
	}
}

type sliceHeader struct {
	data     unsafe.Pointer
	len, cap int
}

func (p *eqPlan) equal(cp, m unsafe.Pointer) bool {
	for i := range p.ops {
		op := &p.ops[i]
		a, b := unsafe.Add(cp, op.off), unsafe.Add(m, op.off)
		switch op.kind {
		case opRange:
			if unsafe.String((*byte)(a), op.size) != unsafe.String((*byte)(b), op.size) {
				return false
			}
		case opBytes:
			x, y := (*sliceHeader)(a), (*sliceHeader)(b)
			if !ownSlice(x, y) ||
				unsafe.String((*byte)(x.data), x.len) != unsafe.String((*byte)(y.data), y.len) {
				return false
			}
		case opSlice:
			x, y := (*sliceHeader)(a), (*sliceHeader)(b)
			if !ownSlice(x, y) {
				return false
			}
			for k := range x.len {
				if !op.elem.equal(unsafe.Add(x.data, uintptr(k)*op.size), unsafe.Add(y.data, uintptr(k)*op.size)) {
					return false
				}
			}
		case opPtr:
			x, y := *(*unsafe.Pointer)(a), *(*unsafe.Pointer)(b)
			if (x == nil) != (y == nil) || x != nil && (x == y || !op.elem.equal(x, y)) {
				return false
			}
		}
	}
	return true
}

// ownSlice reports whether the copy's slice x matches the session's y in
// nil-ness and length, is not y's memory, and has no spare capacity (an
// append to it copies, never writes where another copy could be).
func ownSlice(x, y *sliceHeader) bool {
	if (x.data == nil) != (y.data == nil) || x.len != y.len || x.cap != x.len {
		return false
	}
	return x.len == 0 || x.data != y.data
}

// copyCaches are a session's caches of copies: one for the model list
// (Messages), one for the context's messages (Context, ContextAt at the
// leaf).
type copyCaches struct {
	model, ctx copyCache
}

// forModel and forContext are the copies Messages and Context hand out.
// The two kinds never share a copy: a loop that edits what Messages
// gave it, in its goroutine, and another that asks for Context (a UI)
// must not read each other's copies (a resume copies its messages once
// for each).
func (cc *copyCaches) forModel(list []*Message) []*Message { return cc.model.copies(list) }

func (cc *copyCaches) forContext(list []*Message) []*Message { return cc.ctx.copies(list) }
