package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	session "github.com/agentsession/session"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// redactLeaks are issue 38's shapes, each a tool call's command and its
// output, with what must not be left of the secret (made up).
var redactLeaks = []struct{ command, output, secret string }{
	{"mysql -u root -p'Ex81S3cr3tPw' prod", "1", "Ex81S3cr3tPw"},
	{"docker login -u bob -p Ex82D0ckerPw ghcr.io", "Login Succeeded", "Ex82D0ckerPw"},
	{"curl -u alice:Ex83CurlPw https://api.example.com", "{}", "Ex83CurlPw"},
	{"sshpass -p Ex84SshPw ssh root@host", "ok", "Ex84SshPw"},
	{"mysqldump --password Ex85Pw9 prod", "", "Ex85Pw9"},
	{"cat ~/.netrc", "machine h.example.com login bob password Ex86NetrcPw", "Ex86NetrcPw"},
	{"cat ~/.docker/config.json", `{"auths":{"r.io":{"auth":"` + base64.StdEncoding.EncodeToString([]byte("bob:Ex87Auth")) + `"}}}`,
		base64.StdEncoding.EncodeToString([]byte("bob:Ex87Auth"))},
	{"curl -H 'Authorization: Token 9944b09199c62bcf9418ad846dd0e4bbdfc6ee4c' https://x", "[]", "9944b09199c62bcf9418ad846dd0e4bbdfc6ee4c"},
	{`curl -b "sid=Ex88CookieVal0e.abcDEF123" https://x`, "ok", "Ex88CookieVal0e"},
	{"env", "SESSION_KEY=0f14e45fceea167a5a36dedd4bea2543", "0f14e45fceea167a5a36dedd4bea2543"},
	{"vault token lookup", "hvs.Ex89VaultTok6j4cuewowBGit65rheNoceI", "Ex89VaultTok6j4cuewowBGit65"},
	{"cat secret.json", `{"client_secret": "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"}`, "Ex90r0aNcG8gddWyEgR6RWaAiJKr"},
	{"echo $URL", "https://a.blob.core.windows.net/c/f?sv=2021-06-08&sig=Ex91Qm%2FZx3Lp9vNk2R7tY4wB%3D", "Ex91Qm%2FZx3Lp9vNk2R7tY4wB"},
	{"echo $HOOK", "https://discord.com/api/webhooks/1234567890123456789/Ex92AbCdEfGhIjKlMnOpQrStUvWxYz0123456789-_AbCdEfGhIjKlMnOp", "Ex92AbCdEfGhIjKlMnOpQrStUvWxYz"},
	{"echo $BOT", "123456789:AAEx93qTcvCH1vGWJxfSeofSAs0K5PALDs", "AAEx93qTcvCH1vGWJxfSeofSAs0K5PALDs"},
	{"cat notes", "[REDACTED: ghp_Ex94i0C02E9nMoZ6AbYpZJ50mXHPeALpErLs ]", "ghp_Ex94i0C02E9nMoZ6AbYpZJ50mXHPeALpErLs"},
}

// TestExportRedactLeaks: export --redact writes none of issue 38's shapes,
// in any format, header included: its title, metadata and directory.
func TestExportRedactLeaks(t *testing.T) {
	ctx := context.Background()
	root := filepath.Join(t.TempDir(), "sessions")
	store, err := session.OpenFileStore(root, nil)
	require.NoError(t, err)
	s, err := session.Create(ctx, store, &session.CreateOptions{
		ID: "leaky", Cwd: "/home/bob/proj", Title: "deploy with password=Ex95Titl3Pw",
		ProjectID: "ghp_Ex96i0C02E9nMoZ6AbYpZJ50mXHPeALpErLs", Metadata: map[string]string{"db_password": "Ex97MetaPw"},
	})
	require.NoError(t, err)
	doc := base64.StdEncoding.EncodeToString([]byte("API_TOKEN=Ex98DocTok3n\n"))
	require.NoError(t, s.SaveTurn(ctx, []*session.Message{
		session.User(session.Text("the file"), session.DocumentBase64("text/plain", doc)), session.AssistantText("ok"),
	}, nil))
	for i, l := range redactLeaks {
		args, err := json.Marshal(map[string]string{"command": l.command})
		require.NoError(t, err)
		id := "call-" + string(rune('a'+i))
		require.NoError(t, s.SaveTurn(ctx, []*session.Message{
			session.UserText("go on"), session.Assistant(session.ToolCall(id, "bash", args)), session.ToolResult(id, "bash", l.output),
		}, nil))
	}
	require.NoError(t, s.Close())
	require.NoError(t, store.Close())

	needles := []string{"Ex95Titl3Pw", "Ex96i0C02E9nMoZ6AbYpZ", "Ex97MetaPw", "/home/bob", doc}
	for _, l := range redactLeaks {
		needles = append(needles, l.secret)
	}
	out := t.TempDir()
	for _, f := range []string{"s.json", "s.md", "s.html"} {
		p := filepath.Join(out, f)
		_, errOut, code := runCLI("export", "--root", root, "--redact", "-o", p, "leaky")
		require.Equal(t, exitOK, code, "%s: %s", f, errOut)
		data, err := os.ReadFile(p)
		require.NoError(t, err)
		for _, n := range needles {
			assert.False(t, strings.Contains(string(data), n), "%s holds %q", f, n)
		}
	}
	// The JSON export still imports, whole.
	imported := filepath.Join(t.TempDir(), "imported")
	_, errOut, code := runCLI("import", "--root", imported, filepath.Join(out, "s.json"))
	require.Equal(t, exitOK, code, errOut)
}
