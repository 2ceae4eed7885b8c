package genkitstore_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"testing"

	gksession "github.com/firebase/genkit/go/core/x/session"

	session "github.com/agentsession/session"
	genkitstore "github.com/agentsession/session/integrations/genkit"
)

// FuzzStoredData: whatever JSON another writer put under the state key
// (a program of its own, an older version of the state type), Get and
// History decode it as Data[chat] or fail with ErrUndecodable, agree
// with each other, and change nothing: the next Save and Get work.
func FuzzStoredData(f *testing.F) {
	for _, seed := range []string{
		`{"id":"s","state":{"turn":3}}`, `{"id":"s"}`, `{}`, `null`, `[]`, `"text"`, `7`,
		`{"id":7}`, `{"state":{"turn":"x"}}`, `{"state":{"notes":["a",null]}}`,
		`{"id":"s","state":{"turn":1e400}}`, `{"id":"\u0000"}`, `{"id":"s","state":null}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if !json.Valid(b) {
			return
		}
		ctx := context.Background()
		backing := session.NewMemoryStore()
		host, err := session.Create(ctx, backing, &session.CreateOptions{ID: "s"})
		if err != nil {
			t.Fatal(err)
		}
		if err := host.UpdateState(ctx, map[string]any{genkitstore.DefaultStateKey: json.RawMessage(b)}); err != nil {
			t.Fatal(err)
		}
		st, err := genkitstore.New[chat](backing, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		d, getErr := st.Get(ctx, "s")
		hist, histErr := st.History(ctx, "s")
		switch {
		case getErr != nil:
			if !errors.Is(getErr, genkitstore.ErrUndecodable) || !errors.Is(histErr, genkitstore.ErrUndecodable) {
				t.Fatalf("Get: %v, History: %v; want ErrUndecodable from both", getErr, histErr)
			}
		case d == nil:
			if !bytes.Equal(bytes.TrimSpace(b), []byte("null")) || histErr != nil || len(hist) != 0 {
				t.Fatalf("Get found none of %q; History = %v, %v", b, hist, histErr)
			}
		default:
			if histErr != nil || len(hist) != 1 {
				t.Fatalf("History = %v, %v; want the one value", hist, histErr)
			}
			g, _ := json.Marshal(d)
			h, _ := json.Marshal(hist[0].Data)
			if !bytes.Equal(g, h) {
				t.Fatalf("Get %s, History %s", g, h)
			}
		}
		if err := st.Save(ctx, "s", &gksession.Data[chat]{ID: "s", State: chat{Turn: 9}}); err != nil {
			t.Fatal(err)
		}
		if d, err := st.Get(ctx, "s"); err != nil || d == nil || d.State.Turn != 9 {
			t.Fatalf("Get after Save = %+v, %v", d, err)
		}
	})
}
