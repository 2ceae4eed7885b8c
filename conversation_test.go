package session_test

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"

	session "github.com/agentsession/session"
)

// Flush is part of Conversation, so that an agent holding only a
// Conversation can make a turn durable under a FileStore's default
// SyncOnFlush; through the interface it does what (*Session).Flush does.
func TestConversationFlush(t *testing.T) {
	ctx := context.Background()
	fs, err := session.OpenFileStore(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	s, err := session.Create(ctx, fs, nil)
	if err != nil {
		t.Fatal(err)
	}
	var c session.Conversation = s
	if err := c.SaveTurn(ctx, []*session.Message{session.UserText("hi"), session.AssistantText("hello")}, nil); err != nil {
		t.Fatal(err)
	}
	if err := c.Flush(ctx); err != nil {
		t.Fatalf("Flush through a Conversation: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := c.Flush(ctx); !errors.Is(err, session.ErrClosed) {
		t.Fatalf("Flush of a closed session through a Conversation = %v, want ErrClosed", err)
	}
}

// A typed-nil *Session inside a Conversation passes a `!= nil` check; an
// agent that holds one hears ErrNilSession from it, and nothing panics.
func TestNilSessionConversation(t *testing.T) {
	ctx := context.Background()
	var s *session.Session
	var c session.Conversation = s
	if c == nil {
		t.Fatal("a typed nil in an interface is not nil: the premise of this test")
	}
	if id := c.ID(); id != "" {
		t.Fatalf("ID = %q, want \"\"", id)
	}
	opts := &session.CompactionOptions{ContextWindow: 1000, ReserveTokens: 100, KeepRecentTokens: 200}
	if !c.NeedsCompaction(opts) {
		t.Fatal("NeedsCompaction = false on a nil *Session: the host would not hear of it")
	}
	if _, err := c.Compact(ctx, session.ExtractiveSummarizer{}, opts); !errors.Is(err, session.ErrNilSession) {
		t.Fatalf("Compact = %v, want ErrNilSession", err)
	}
	if _, err := c.Messages(ctx); !errors.Is(err, session.ErrNilSession) {
		t.Fatalf("Messages = %v, want ErrNilSession", err)
	}
	if err := c.SaveTurn(ctx, []*session.Message{session.UserText("hi")}, &session.Usage{Input: 1}); !errors.Is(err, session.ErrNilSession) {
		t.Fatalf("SaveTurn = %v, want ErrNilSession", err)
	}
	if err := c.Flush(ctx); !errors.Is(err, session.ErrNilSession) {
		t.Fatalf("Flush = %v, want ErrNilSession", err)
	}
}

// Every exported method of *Session that returns an error returns
// ErrNilSession on a nil receiver, and does not panic. The test calls
// them all by reflection, so a method added later is held to the rule
// too. (Methods that return no error, such as Context or Len, are
// accessors of a handle the host has; ID and NeedsCompaction, part of
// Conversation, are checked above.)
func TestNilSessionMethods(t *testing.T) {
	var s *session.Session
	ctxType := reflect.TypeOf((*context.Context)(nil)).Elem()
	errType := reflect.TypeOf((*error)(nil)).Elem()
	v := reflect.ValueOf(s)
	typ := v.Type()
	for i := range typ.NumMethod() {
		m := typ.Method(i)
		ft := m.Func.Type()
		if ft.NumOut() == 0 || ft.Out(ft.NumOut()-1) != errType {
			continue
		}
		t.Run(m.Name, func(t *testing.T) {
			args := []reflect.Value{v}
			for j := 1; j < ft.NumIn(); j++ {
				in := ft.In(j)
				if ft.IsVariadic() && j == ft.NumIn()-1 {
					break
				}
				if in == ctxType {
					args = append(args, reflect.ValueOf(context.Background()))
					continue
				}
				args = append(args, reflect.Zero(in))
			}
			var out []reflect.Value
			func() {
				defer func() {
					if r := recover(); r != nil {
						t.Fatalf("(*Session)(nil).%s panics: %v", m.Name, r)
					}
				}()
				out = m.Func.Call(args)
			}()
			for k := range ft.NumOut() {
				if ft.Out(k) != errType {
					continue
				}
				err, _ := out[k].Interface().(error)
				if !errors.Is(err, session.ErrNilSession) {
					t.Fatalf("(*Session)(nil).%s returned error %v, want ErrNilSession", m.Name, err)
				}
				if !strings.Contains(err.Error(), "nil") {
					t.Fatalf("the error does not say the session is nil: %v", err)
				}
			}
		})
	}
}
