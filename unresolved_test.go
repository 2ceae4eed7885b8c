package session_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	session "github.com/agentsession/session"
	"github.com/agentsession/session/provider/anthropic"
	"github.com/agentsession/session/provider/openai"
)

// TestUnresolvedBlobs: an image whose blob is gone (deleted, or corrupt)
// is reported by Load, the session's Log and its Context, is never sent
// to a model as data (Messages, ForModel, the provider conversions of
// the raw context alike), and Verify lists it.
func TestUnresolvedBlobs(t *testing.T) {
	ctx := context.Background()
	for _, damage := range []string{"deleted", "corrupt"} {
		t.Run(damage, func(t *testing.T) {
			root, blobs := t.TempDir(), t.TempDir()
			store := openFS(t, root, &session.FileStoreOptions{BlobDir: blobs})
			s, err := session.Create(ctx, store, &session.CreateOptions{ID: "s-img"})
			if err != nil {
				t.Fatal(err)
			}
			shot := session.User(session.Text("what is on screen?"), session.Image("image/png", []byte(strings.Repeat("png!", 1024))))
			result := session.ToolResult("call_1", "screenshot", "")
			result.Content = []session.Block{session.Image("image/png", []byte(strings.Repeat("two!", 1024)))}
			call := session.Assistant(session.ToolCall("call_1", "screenshot", json.RawMessage(`{}`)))
			if err := s.SaveTurn(ctx, []*session.Message{shot, call, result, reply("done")}, nil); err != nil {
				t.Fatal(err)
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			files, _ := filepath.Glob(filepath.Join(blobs, "*"))
			if len(files) != 2 {
				t.Fatalf("%d blobs, want 2", len(files))
			}
			for _, f := range files {
				if damage == "deleted" {
					err = os.Remove(f)
				} else {
					err = os.WriteFile(f, []byte("not the image"), 0o600)
				}
				if err != nil {
					t.Fatal(err)
				}
			}

			fresh := openFS(t, root, &session.FileStoreOptions{BlobDir: blobs})
			l, err := fresh.Load(ctx, "s-img")
			if err != nil {
				t.Fatal(err)
			}
			want := session.ErrNotFound
			if damage == "corrupt" {
				want = session.ErrCorrupt
			}
			checkUnresolved(t, "Load", l.Unresolved, want)

			re, err := session.Open(ctx, fresh, "s-img")
			if err != nil {
				t.Fatal(err)
			}
			checkUnresolved(t, "Session.Log", re.Log().Unresolved, want)
			c := re.Context()
			if len(c.Unresolved) != 2 {
				t.Fatalf("Context.Unresolved = %+v, want the 2 images", c.Unresolved)
			}
			for _, u := range c.Unresolved {
				if !strings.HasPrefix(u.Ref, session.BlobPrefix) || u.EntryID == "" {
					t.Fatalf("Context.Unresolved holds %+v", u)
				}
			}
			msgs, err := re.Messages(ctx)
			if err != nil {
				t.Fatal(err)
			}
			for name, list := range map[string][]*session.Message{"Messages": msgs, "ForModel": c.ForModel()} {
				placeholders := 0
				for _, m := range list {
					for _, b := range m.Content {
						if b.Type == session.BlockImage {
							t.Fatalf("%s sends an image whose data is %.30q", name, b.Data)
						}
						if b.Type == session.BlockText && b.Text == session.UnresolvedImageText {
							placeholders++
						}
					}
				}
				if placeholders != 2 {
					t.Fatalf("%s holds %d placeholders, want 2", name, placeholders)
				}
			}
			// The raw context still holds the references (nothing changed
			// silently), and the conversions never send one.
			for _, out := range []any{anthropic.Messages(c.Messages, nil), openai.Messages(c.Messages, nil)} {
				b, err := json.Marshal(out)
				if err != nil {
					t.Fatal(err)
				}
				if strings.Contains(string(b), "blob:sha256:") || strings.Contains(string(b), `"type":"image`) {
					t.Fatalf("a conversion sends the reference: %s", b)
				}
				if strings.Count(string(b), "image unavailable") != 2 {
					t.Fatalf("a conversion leaves out the placeholders: %s", b)
				}
			}
			n := 0
			for _, f := range session.Verify(re.Log()) {
				if f.Kind == session.FindingUnresolvedBlob {
					n++
				}
			}
			if n != 2 {
				t.Fatalf("Verify lists %d unresolved blobs, want 2", n)
			}

			// A summarizer is a model too: compaction and branch summaries
			// send it placeholders, never a reference.
			var seen []*session.Message
			sum := session.SummarizerFunc(func(_ context.Context, req *session.SummaryRequest) (string, error) {
				seen = append(seen, req.Messages...)
				return "summary", nil
			})
			if err := re.SaveTurn(ctx, []*session.Message{session.UserText("next"), reply("ok")}, nil); err != nil {
				t.Fatal(err)
			}
			if _, err := re.Compact(ctx, sum, &session.CompactionOptions{KeepRecentTokens: 1}); err != nil {
				t.Fatal(err)
			}
			compacted := len(seen)
			if _, err := re.SummarizeBranch(ctx, "", sum, nil); err != nil {
				t.Fatal(err)
			}
			if compacted == 0 || len(seen) == compacted {
				t.Fatalf("the summarizer got %d and %d messages", compacted, len(seen)-compacted)
			}
			placeholders := 0
			for _, m := range seen {
				for _, b := range m.Content {
					if b.Type == session.BlockImage {
						t.Fatalf("a summarizer is sent an image whose data is %.30q", b.Data)
					}
					if b.Type == session.BlockText && b.Text == session.UnresolvedImageText {
						placeholders++
					}
				}
			}
			if placeholders == 0 {
				t.Fatal("the summarizer got no placeholder")
			}
		})
	}
}

func checkUnresolved(t *testing.T, what string, got []*session.BlobError, want error) {
	t.Helper()
	if len(got) != 2 {
		t.Fatalf("%s: Unresolved = %v, want the 2 images", what, got)
	}
	for _, u := range got {
		if !errors.Is(u, want) || u.EntryID == "" || !strings.HasPrefix(u.Ref, session.BlobPrefix) {
			t.Fatalf("%s: %#v (%v), want %v with its entry and reference", what, u, u, want)
		}
	}
}
