package s3store_test

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	session "github.com/agentsession/session"
)

// TestHostileObjects: objects another program put in the store's place
// (or a broken one left) give a clear error, never a hang, a read outside
// the session's keys, or a read of more than the limit; the store
// changes nothing of them.
// oneLine is a segment of one entry.
const oneLine = `{"type":"x","id":"a","parentId":null,"timestamp":"2026-01-01T00:00:00Z"}` + "\n"

func TestHostileObjects(t *testing.T) {
	ctx := context.Background()
	opts := options(t)
	opts.Limits = session.Limits{MaxLogBytes: 1 << 20}
	s := openStore(t, opts)
	c := opts.Client
	enc := func(id string) string { return base64.RawURLEncoding.EncodeToString([]byte(id)) }
	put := func(rel, body string) {
		t.Helper()
		if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: &opts.Bucket, Key: aws.String(opts.Prefix + rel), Body: strings.NewReader(body)}); err != nil {
			t.Fatal(err)
		}
	}
	const inc = "0123456789abcdef"
	const gen = "g0000000000-abcdef01"
	head := func(id, gen string) string {
		return `{"v":1,"inc":"` + inc + `","gen":"` + gen + `","seq":0,"info":{"ID":"` + id + `"}}`
	}
	desc := `{"v":1,"header":{"type":"session","version":3,"id":"%s","timestamp":"2026-01-01T00:00:00Z","cwd":"/w"},"entries":0}`
	logDir := func(id string) string { return "log/" + enc(id) + "/" + inc + "/" }
	cases := []struct {
		name string
		id   string
		objs map[string]string
		want error
	}{
		{"head not JSON", "h1", map[string]string{"sessions/" + enc("h1"): "{{{"}, session.ErrCorrupt},
		{"head of a newer format", "h2", map[string]string{"sessions/" + enc("h2"): `{"v":9}`}, session.ErrUnsupportedVersion},
		{"head with a path in its incarnation", "h3", map[string]string{"sessions/" + enc("h3"): `{"v":1,"inc":"../../etc","gen":"` + gen + `","info":{"ID":"h3"}}`}, session.ErrCorrupt},
		{"head of another session", "h4", map[string]string{"sessions/" + enc("h4"): head("other", gen)}, session.ErrCorrupt},
		{"head naming no generation", "h5", map[string]string{"sessions/" + enc("h5"): head("h5", gen)}, session.ErrCorrupt},
		{"segment outside the session", "h6", map[string]string{
			"sessions/" + enc("h6"):            head("h6", gen),
			logDir("h6") + gen + "/0000000000": `{"v":1,"header":{},"segments":[{"key":"seg/../../../sessions/x","entries":1,"bytes":1}],"entries":1}`,
		}, session.ErrCorrupt},
		{"part of an unknown kind", "h7", map[string]string{
			"sessions/" + enc("h7"):            head("h7", gen),
			logDir("h7") + gen + "/0000000000": strings.Replace(desc, "%s", "h7", 1),
			logDir("h7") + gen + "/0000000001": `{"k":"rm -rf","t":"2026-01-01T00:00:00Z"}` + "\n",
		}, session.ErrCorrupt},
		{"a marker back to its own generation", "h8", map[string]string{
			"sessions/" + enc("h8"):            head("h8", gen),
			logDir("h8") + gen + "/0000000000": strings.Replace(desc, "%s", "h8", 1),
			logDir("h8") + gen + "/0000000001": `{"k":"next","t":"2026-01-01T00:00:00Z","gen":"` + gen + `"}` + "\n",
		}, session.ErrCorrupt},
		{"a part over the limit", "h9", map[string]string{
			"sessions/" + enc("h9"):            head("h9", gen),
			logDir("h9") + gen + "/0000000000": strings.Replace(desc, "%s", "h9", 1),
			logDir("h9") + gen + "/0000000001": `{"k":"append","t":"2026-01-01T00:00:00Z"}` + "\n" + `{"type":"x","id":"a","pad":"` + strings.Repeat("x", 2<<20) + `"}` + "\n",
		}, session.ErrTooLarge},
		{"an entry line that is not JSON", "h10", map[string]string{
			"sessions/" + enc("h10"):            head("h10", gen),
			logDir("h10") + gen + "/0000000000": strings.Replace(desc, "%s", "h10", 1),
			logDir("h10") + gen + "/0000000001": `{"k":"append","t":"2026-01-01T00:00:00Z"}` + "\n" + `not json` + "\n",
		}, session.ErrCorrupt},
		{"a segment holding fewer entries than it says", "h12", map[string]string{
			"sessions/" + enc("h12"): head("h12", gen),
			logDir("h12") + gen + "/0000000000": `{"v":1,"header":{"type":"session","version":3,"id":"h12","timestamp":"2026-01-01T00:00:00Z","cwd":"/w"},"segments":[{"key":"seg/s1","entries":2,"bytes":` +
				fmt.Sprint(len(oneLine)) + `}],"entries":2}`,
			logDir("h12") + "seg/s1": oneLine,
		}, session.ErrCorrupt},
		{"a header of another session", "h11", map[string]string{
			"sessions/" + enc("h11"):            head("h11", gen),
			logDir("h11") + gen + "/0000000000": strings.Replace(desc, "%s", "someone-else", 1),
		}, session.ErrCorrupt},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for k, v := range tc.objs {
				put(k, v)
			}
			done := make(chan error, 1)
			go func() { _, err := s.Load(ctx, tc.id); done <- err }()
			select {
			case err := <-done:
				if !errors.Is(err, tc.want) {
					t.Fatalf("Load: %v, want %v", err, tc.want)
				}
			case <-time.After(30 * time.Second):
				t.Fatal("Load did not return")
			}
			// An append fails the same way and writes nothing.
			e := entry(t, "x", "", 1)
			if err := s.Append(ctx, tc.id, session.AppendOptions{}, e); err == nil {
				t.Fatal("an append to a damaged session succeeded")
			}
			for k, v := range tc.objs {
				out, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: &opts.Bucket, Key: aws.String(opts.Prefix + k)})
				if err != nil {
					t.Fatalf("%s: %v", k, err)
				}
				b, _ := io.ReadAll(out.Body)
				out.Body.Close()
				if string(b) != v {
					t.Fatalf("%s was changed", k)
				}
			}
		})
	}
	// The listing leaves out what it cannot read, and lists the rest.
	if err := s.Create(ctx, header("fine")); err != nil {
		t.Fatal(err)
	}
	page, err := s.List(ctx, session.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, info := range page.Sessions {
		if info.ID == "h1" || info.ID == "h2" || info.ID == "h4" {
			t.Fatalf("listed %s, whose head cannot be read", info.ID)
		}
	}
}

// TestIDsStayInTheirKeys: ids that look like paths are one key element
// each, under the store's prefix; nothing is written outside it.
func TestIDsStayInTheirKeys(t *testing.T) {
	ctx := context.Background()
	opts := options(t)
	s := openStore(t, opts)
	ids := []string{"../../escape", "/abs", "a/../../b", ".", "..", "~" + strings.Repeat("f", 64), strings.Repeat("long/", 100)}
	for _, id := range ids {
		if err := s.Create(ctx, header(id)); err != nil {
			t.Fatalf("%q: %v", id, err)
		}
		if err := s.Append(ctx, id, session.AppendOptions{}, entry(t, "e", "", 1)); err != nil {
			t.Fatalf("%q: %v", id, err)
		}
	}
	page, err := s.List(ctx, session.ListOptions{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Sessions) != len(ids) {
		t.Fatalf("listed %d sessions, want %d", len(page.Sessions), len(ids))
	}
	out, err := client(t).ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: &opts.Bucket})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range out.Contents {
		k := *o.Key
		if strings.HasPrefix(k, opts.Prefix) {
			rest := strings.TrimPrefix(k, opts.Prefix)
			if strings.Contains(rest, "..") || strings.HasPrefix(rest, "/") {
				t.Fatalf("key %q", k)
			}
		}
	}
	for _, id := range ids {
		log, err := openStore(t, opts).Load(ctx, id)
		if err != nil || log.Header.ID != id || len(log.Entries) != 1 {
			t.Fatalf("%q read back: %v", id, err)
		}
	}
}
