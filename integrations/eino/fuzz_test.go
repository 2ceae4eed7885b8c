package eino_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"testing"

	session "github.com/agentsession/session"
	"github.com/agentsession/session/integrations/eino"
)

// FuzzCheckpointValue: any bytes Set stores come back from Get as they
// were; any JSON value found under StateKey (another writer's) reads as
// a checkpoint or fails with ErrCorruptCheckPoint, never otherwise, and
// a Set after it works.
func FuzzCheckpointValue(f *testing.F) {
	for _, v := range values {
		f.Add(v)
	}
	f.Add([]byte(`{"json":{"a":1}}`))
	f.Add([]byte(`{"base64":"AAE="}`))
	f.Add([]byte(`{"json":1,"base64":""}`))
	f.Add([]byte(`{"base64":null}`))
	f.Add([]byte(`{"json":null}`))
	f.Add([]byte(`{"base64":"AA=="} {}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		ctx := context.Background()
		st := session.NewMemoryStore()
		s, err := eino.New(st, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		if err := s.Set(ctx, "a", data); err != nil {
			t.Fatal(err)
		}
		got, ok, err := s.Get(ctx, "a")
		if err != nil || !ok || !bytes.Equal(got, data) {
			t.Fatalf("Get = %q, %v, %v; want %q", got, ok, err, data)
		}

		if !json.Valid(data) || bytes.Equal(bytes.TrimSpace(data), []byte("null")) {
			return
		}
		raw, _, err := session.OpenOrCreate(ctx, st, &session.CreateOptions{ID: eino.DefaultPrefix + "b"})
		if err != nil {
			t.Fatal(err)
		}
		if err := raw.UpdateState(ctx, map[string]any{eino.StateKey: json.RawMessage(data)}); err != nil {
			t.Fatal(err)
		}
		if _, ok, err := s.Get(ctx, "b"); err != nil && (ok || !errors.Is(err, eino.ErrCorruptCheckPoint)) {
			t.Fatalf("Get of a foreign value = %v, %v", ok, err)
		}
		if _, err := s.History(ctx, "b"); err != nil && !errors.Is(err, eino.ErrCorruptCheckPoint) {
			t.Fatalf("History of a foreign value = %v", err)
		}
		if err := s.Set(ctx, "b", []byte(`{}`)); err != nil {
			t.Fatal(err)
		}
		if got, ok, err := s.Get(ctx, "b"); string(got) != `{}` || !ok || err != nil {
			t.Fatalf("Get after Set = %q, %v, %v", got, ok, err)
		}
	})
}
