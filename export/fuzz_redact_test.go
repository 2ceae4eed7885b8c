package export_test

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	session "github.com/agentsession/session"
	"github.com/agentsession/session/export"
	"github.com/agentsession/session/redact"
)

// planted is a made-up GitHub token the default rules find wherever it
// stands (gitleaks' github-pat has no word boundary).
const planted = "ghp_Fz7i0C02E9nMoZ6AbYpZJ50mXHPeALpErLsI"

// plant puts the secret into s at a place that at picks.
func plant(s string, at uint8) string {
	p := int(at) % (len(s) + 1)
	return s[:p] + planted + s[p:]
}

// FuzzExportRedacted writes a session with hostile strings in its header
// (title, directory, parent, metadata) and entries (a user text, a tool
// call's arguments, a tool result, a custom entry, a label), each with
// the secret planted in it, and exports it redacted in every format: the
// secret is nowhere in the bytes, and the JSON envelope reads back with
// its entries.
func FuzzExportRedacted(f *testing.F) {
	f.Add("deploy", "/home/bob/x", "p", "meta", "hello", "ls -la", "total 0", uint8(0))
	f.Add("[REDACTED: ", "[REDACTED:x ", "password=", "\"token\": \"", "Authorization: Token ", "mysql -p'", "-----BEGIN RSA PRIVATE KEY-----\n", uint8(7))
	f.Add("\xff\xfe", "\\u0000", "<script>", "]]>", "data:text/plain;base64,", "curl -u a:", "Cookie: sid=", uint8(200))
	r := redact.New(&redact.Options{Home: []string{}})
	f.Fuzz(func(t *testing.T, title, cwd, parent, meta, text, command, output string, at uint8) {
		for _, s := range []string{title, cwd, parent, meta, text, command, output} {
			if len(s) > 2048 {
				return
			}
		}
		ctx := context.Background()
		s, err := session.Create(ctx, session.NewMemoryStore(), &session.CreateOptions{
			ID: "fuzz", Title: plant(title, at), Cwd: plant(cwd, at+1), ParentSession: plant(parent, at+2),
			ProjectID: plant(meta, at+3), Metadata: map[string]string{"note": plant(meta, at+4), plant("k", at): "v"},
		})
		if err != nil {
			return // a header the library refuses
		}
		args, err := json.Marshal(map[string]string{"command": plant(command, at+5)})
		if err != nil {
			return
		}
		err = s.SaveTurn(ctx, []*session.Message{
			session.UserText(plant(text, at+6)),
			session.Assistant(session.Text(plant(output, at)), session.ToolCall("call-1", "bash", args)),
			session.ToolResult("call-1", "bash", plant(output, at+7)),
		}, nil)
		if err != nil {
			return
		}
		last, err := s.AppendCustom(ctx, "app.note", map[string]any{"text": plant(text, at+8), plant(meta, at): plant(title, at)})
		if err != nil {
			return
		}
		if err := s.Label(ctx, last.ID(), plant(title, at+9)); err != nil {
			return
		}
		for _, format := range []string{"json", "markdown", "html"} {
			var b bytes.Buffer
			opts := &export.Options{Redactor: r}
			switch format {
			case "json":
				err = export.JSON(ctx, &b, s, opts)
			case "markdown":
				err = export.Markdown(ctx, &b, s, opts)
			case "html":
				err = export.HTML(ctx, &b, s, opts)
			}
			if err != nil {
				t.Fatalf("%s: %v", format, err)
			}
			if i := bytes.Index(b.Bytes(), []byte(planted[4:])); i >= 0 {
				t.Fatalf("%s export holds the secret: %q", format, b.Bytes()[max(0, i-80):min(b.Len(), i+80)])
			}
			switch format {
			case "json":
				env, err := export.Read(bytes.NewReader(b.Bytes()))
				if err != nil {
					t.Fatalf("the redacted envelope does not read: %v", err)
				}
				if len(env.Entries) != s.Len() {
					t.Fatalf("%d entries read back, %d written", len(env.Entries), s.Len())
				}
			case "html":
				if !strings.HasSuffix(strings.TrimSpace(b.String()), "</html>") {
					t.Fatal("the page does not end")
				}
			}
		}
	})
}
