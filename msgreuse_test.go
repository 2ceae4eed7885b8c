package session_test

import (
	"context"
	"fmt"
	"reflect"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentsession/session"
)

// The copy rule with reuse (msgreuse.go): Messages and Context hand out
// copies made once and handed out again while they still equal the
// session's messages. These tests edit every field a returned message
// has, found by reflection (so a field added later is edited too), and
// check that no later answer carries the edit.

// step is one move from a value to a part of it.
type step struct {
	field int // >= 0: the struct field of that index
	index int // >= 0: the slice element of that index
	deref bool
}

// edit is one change a host can make to a returned message.
type edit struct {
	name  string
	path  []step
	apply func(v reflect.Value) // v is the settable value at path
}

// settable makes v (a field of an addressable struct, exported or not)
// settable: a host changes unexported fields through methods
// (UnmarshalJSON, the With methods), so they count too.
func settable(v reflect.Value) reflect.Value {
	if v.CanSet() {
		return v
	}
	return reflect.NewAt(v.Type(), unsafe.Pointer(v.UnsafeAddr())).Elem()
}

func at(v reflect.Value, path []step) reflect.Value {
	for _, s := range path {
		switch {
		case s.deref:
			v = v.Elem()
		case s.field >= 0:
			v = settable(v.Field(s.field))
		default:
			v = v.Index(s.index)
		}
	}
	return v
}

// edits lists the changes to v (found at path, named name) and to every
// part of it.
func edits(v reflect.Value, name string, path []step) []edit {
	p := func(s step) []step { return append(append([]step(nil), path...), s) }
	leaf := func(what string, f func(reflect.Value)) edit {
		return edit{name: name + " " + what, path: path, apply: f}
	}
	switch v.Kind() {
	case reflect.String:
		return []edit{leaf("set", func(x reflect.Value) { x.SetString(x.String() + "x") })}
	case reflect.Bool:
		return []edit{leaf("flip", func(x reflect.Value) { x.SetBool(!x.Bool()) })}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return []edit{leaf("inc", func(x reflect.Value) { x.SetInt(x.Int() + 1) })}
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return []edit{leaf("inc", func(x reflect.Value) { x.SetUint(x.Uint() + 1) })}
	case reflect.Float32, reflect.Float64:
		return []edit{leaf("inc", func(x reflect.Value) { x.SetFloat(x.Float() + 1) })}
	case reflect.Struct:
		var out []edit
		for i := 0; i < v.NumField(); i++ {
			out = append(out, edits(v.Field(i), name+"."+v.Type().Field(i).Name, p(step{field: i, index: -1}))...)
		}
		return out
	case reflect.Pointer:
		out := []edit{
			leaf("set nil", func(x reflect.Value) { x.Set(reflect.Zero(x.Type())) }),
			leaf("set new", func(x reflect.Value) { x.Set(reflect.New(x.Type().Elem())) }),
		}
		if !v.IsNil() {
			out = append(out, edits(v.Elem(), name+"*", p(step{field: -1, index: -1, deref: true}))...)
		}
		return out
	case reflect.Slice:
		out := []edit{
			leaf("set nil", func(x reflect.Value) { x.Set(reflect.Zero(x.Type())) }),
			leaf("append", func(x reflect.Value) {
				e := reflect.New(x.Type().Elem()).Elem()
				if e.Kind() == reflect.Uint8 {
					e.SetUint(' ')
				}
				x.Set(reflect.Append(x, e))
			}),
		}
		if v.Len() > 0 {
			out = append(out, leaf("shorten", func(x reflect.Value) { x.Set(x.Slice(0, x.Len()-1)) }))
		}
		for i := 0; i < v.Len(); i++ {
			out = append(out, edits(v.Index(i), fmt.Sprintf("%s[%d]", name, i), p(step{field: -1, index: i}))...)
		}
		return out
	}
	panic("msgreuse_test: no edit for kind " + v.Kind().String() + " at " + name)
}

// fill sets every field of v, exported or not, to a value that is not
// zero, so that each has a part to edit.
func fill(v reflect.Value, n *int) {
	*n++
	switch v.Kind() {
	case reflect.String:
		v.SetString(fmt.Sprintf("s%d", *n))
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(int64(*n))
	case reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(1)
	case reflect.Float32, reflect.Float64:
		v.SetFloat(float64(*n) / 4)
	case reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			fill(settable(v.Field(i)), n)
		}
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		fill(v.Elem(), n)
	case reflect.Slice:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			v.SetBytes([]byte(fmt.Sprintf(`{"v":%d}`, *n)))
			return
		}
		v.Set(reflect.MakeSlice(v.Type(), 2, 2))
		for i := 0; i < 2; i++ {
			fill(v.Index(i), n)
		}
	}
}

// fullMessage returns a user message with every field of every part set.
func fullMessage() *session.Message {
	m := &session.Message{}
	n := 0
	fill(reflect.ValueOf(m).Elem(), &n)
	// What the session stores: a user message, its JSON valid.
	m.Role = session.RoleUser
	for i := range m.Content {
		m.Content[i].Type = session.BlockText
	}
	return m
}

// reuseGetters are the answers the copy rule covers.
func reuseGetters(ctx context.Context) []struct {
	name string
	get  func(t *testing.T, s *session.Session) []*session.Message
} {
	return []struct {
		name string
		get  func(t *testing.T, s *session.Session) []*session.Message
	}{
		{"Messages", func(t *testing.T, s *session.Session) []*session.Message {
			m, err := s.Messages(ctx)
			require.NoError(t, err)
			return m
		}},
		{"Context", func(t *testing.T, s *session.Session) []*session.Message { return s.Context().Messages }},
		{"ContextAt", func(t *testing.T, s *session.Session) []*session.Message {
			c, err := s.ContextAt(s.LeafID())
			require.NoError(t, err)
			return c.Messages
		}},
	}
}

func cloneAll(msgs []*session.Message) []*session.Message {
	out := make([]*session.Message, len(msgs))
	for i, m := range msgs {
		out[i] = m.Clone()
	}
	return out
}

// TestReuseNeverReturnsEdits edits, one at a time, every field (found by
// reflection, unexported ones too) of every part of a returned message
// whose parts are all set, then asks again: the answer is the session's
// message as it was, the session's own messages are unchanged, and the
// message after the edited one too.
func TestReuseNeverReturnsEdits(t *testing.T) {
	ctx := context.Background()
	for _, g := range reuseGetters(ctx) {
		t.Run(g.name, func(t *testing.T) {
			s := session.New()
			appendAll(t, s, fullMessage(), session.UserText("after"))
			first := g.get(t, s)
			require.Len(t, first, 2)
			want := cloneAll(first)
			shared, err := s.SharedMessages(ctx)
			require.NoError(t, err)
			require.True(t, reflect.DeepEqual(want, cloneAll(shared)), "the copies equal the session's messages")
			all := edits(reflect.ValueOf(first[0]).Elem(), "Message", nil)
			require.Greater(t, len(all), 100, "every field of every part is edited")
			for _, e := range all {
				got := g.get(t, s)
				e.apply(at(reflect.ValueOf(got[0]).Elem(), e.path))
				again := g.get(t, s)
				if !reflect.DeepEqual(want[0], again[0]) {
					t.Fatalf("%s: the next answer carries the edit", e.name)
				}
				if !reflect.DeepEqual(want[1], again[1]) {
					t.Fatalf("%s: the next message changed", e.name)
				}
				now, err := s.SharedMessages(ctx)
				require.NoError(t, err)
				if !reflect.DeepEqual(want, cloneAll(now)) {
					t.Fatalf("%s: the session's own messages changed", e.name)
				}
			}
		})
	}
}

// TestReuseNeverHandsOutSessionMemory: a host that puts the session's
// own slices and pointers (from SharedMessages) into a copy it got, with
// the same content, gets them back never: editing what a later call
// returns leaves the session as it was.
func TestReuseNeverHandsOutSessionMemory(t *testing.T) {
	ctx := context.Background()
	for _, g := range reuseGetters(ctx) {
		t.Run(g.name, func(t *testing.T) {
			s := session.New()
			appendAll(t, s, fullMessage())
			want := cloneAll(g.get(t, s))
			own, err := s.SharedMessages(ctx)
			require.NoError(t, err)
			o := own[0]
			c := g.get(t, s)[0]
			c.Content, c.Details, c.Extra, c.Usage, c.ExitCode = o.Content, o.Details, o.Extra, o.Usage, o.ExitCode

			vandalize(g.get(t, s))
			c = g.get(t, s)[0]
			c.Content[0].Arguments[0] = 'X'
			c.Content[0].Citations[0] = 'X'
			c.Content[0].Extra[0].Value[0] = 'X'
			c.Usage.Extra[0].Value[0] = 'X'
			c.Usage.Input = -5

			now, err := s.SharedMessages(ctx)
			require.NoError(t, err)
			assert.True(t, reflect.DeepEqual(want, cloneAll(now)), "the session's messages are unchanged")
			assert.True(t, reflect.DeepEqual(want, cloneAll(g.get(t, s))), "and so is the next answer")
		})
	}
}

// TestReuseFollowsTheSession: after appends, a branch, a compaction and
// a reload, every answer equals the session's messages at that moment.
func TestReuseFollowsTheSession(t *testing.T) {
	ctx := context.Background()
	for _, g := range reuseGetters(ctx) {
		t.Run(g.name, func(t *testing.T) {
			store := session.NewMemoryStore()
			s, err := session.Create(ctx, store, nil)
			require.NoError(t, err)
			same := func(what string) {
				t.Helper()
				var want []*session.Message
				if g.name == "Messages" {
					want, err = s.SharedMessages(ctx)
					require.NoError(t, err)
				} else {
					c, err := s.ContextAt(s.LeafID())
					require.NoError(t, err)
					want = c.Messages
				}
				got := g.get(t, s)
				require.Equal(t, encodeAll(t, want), encodeAll(t, got), what)
				vandalize(got)
			}
			var mid, kept string
			for i := range 6 {
				es := appendAll(t, s, session.UserText(fmt.Sprintf("q%d", i)), reply(fmt.Sprintf("a%d", i)))
				switch i {
				case 2:
					mid = es[0].ID()
				case 1:
					kept = es[0].ID()
				}
				same("append")
			}
			require.NoError(t, s.Branch(ctx, mid))
			same("branch")
			appendAll(t, s, session.UserText("other way"), reply("yes"))
			same("append on the branch")
			_, err = s.AppendCompaction(ctx, session.Compaction{Summary: "what came before", FirstKeptEntryID: kept, TokensBefore: 100})
			require.NoError(t, err)
			same("compaction")
			appendAll(t, s, session.UserText("after the compaction"), reply("ok"))
			same("append after the compaction")
			require.NoError(t, s.Reload(ctx))
			same("reload")
		})
	}
}

// TestReuseHandsOutUneditedCopiesAgain: what a turn costs follows what is
// new. After appends, the copies of the messages that were there already
// are handed out again; after a branch, those of the path the branch
// shares; an edited copy is replaced, and only it.
func TestReuseHandsOutUneditedCopiesAgain(t *testing.T) {
	ctx := context.Background()
	for _, g := range reuseGetters(ctx) {
		t.Run(g.name, func(t *testing.T) {
			s := session.New()
			var ids []string
			for i := range 5 {
				es := appendAll(t, s, session.UserText(fmt.Sprintf("q%d", i)), reply(fmt.Sprintf("a%d", i)))
				ids = append(ids, es[1].ID())
			}
			a := g.get(t, s)
			appendAll(t, s, session.UserText("q5"), reply("a5"))
			b := g.get(t, s)
			require.Len(t, b, len(a)+2)
			for i := range a {
				assert.Same(t, a[i], b[i], "message %d is copied once", i)
			}
			b[3].Content[0].Text = "edited"
			c := g.get(t, s)
			for i := range b {
				if i == 3 {
					assert.NotSame(t, b[i], c[i], "the edited copy is replaced")
					assert.Equal(t, "a1", c[i].Text())
				} else {
					assert.Same(t, b[i], c[i], "message %d is copied once", i)
				}
			}
			require.NoError(t, s.Branch(ctx, ids[3]))
			appendAll(t, s, session.UserText("other"), reply("way"))
			d := g.get(t, s)
			require.Len(t, d, 10)
			for i := range 8 {
				assert.Same(t, c[i], d[i], "message %d, on both paths, is copied once", i)
			}
		})
	}
}

// TestReuseAcrossContextAndMessages: Context and Messages never hand
// out the same copy (one caller may edit its answer in its goroutine
// while another asks the other kind), and an edit made to what one
// handed out is in no answer of the other.
func TestReuseAcrossContextAndMessages(t *testing.T) {
	ctx := context.Background()
	fromContext := func(t *testing.T, s *session.Session) []*session.Message { return s.Context().Messages }
	fromMessages := func(t *testing.T, s *session.Session) []*session.Message {
		m, err := s.Messages(ctx)
		require.NoError(t, err)
		return m
	}
	orders := []struct {
		name          string
		first, second func(*testing.T, *session.Session) []*session.Message
	}{
		{"context then messages", fromContext, fromMessages},
		{"messages then context", fromMessages, fromContext},
	}
	for _, o := range orders {
		t.Run(o.name, func(t *testing.T) {
			s := session.New()
			appendAll(t, s, fullMessage(), session.UserText("after"))
			want := cloneAll(o.first(t, s))
			got := o.first(t, s)
			other := o.second(t, s)
			require.Len(t, other, 2)
			for i := range got {
				assert.NotSame(t, got[i], other[i], "the two kinds share no copy")
			}
			got[0].Content[0].Text = "edited by the host"
			got[1].Role = session.RoleAssistant
			assert.True(t, reflect.DeepEqual(want, cloneAll(other)), "the other answer carries no edit")
			assert.True(t, reflect.DeepEqual(want, cloneAll(o.second(t, s))), "nor does the next one")
		})
	}
}
