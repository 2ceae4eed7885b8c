package export_test

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	session "github.com/agentsession/session"
	"github.com/agentsession/session/export"
	"github.com/agentsession/session/redact"
)

// Made-up secrets of published shapes.
const (
	hdrGitHub = "ghp_Hd7i0C02E9nMoZ6AbYpZJ50mXHPeALpErLsI"
	hdrSlack  = "xoxb-776116294410-3280622225504-yOV6qcOqKFtIlHTTpGfZcLK9"
	hdrPw     = "Hd9MetaPassw0rd"
)

// headerSecrets makes a session whose header holds a secret in every
// member: title, working directory, parent session, the metadata given
// at creation (project, app version, user, app, free pairs) and a member
// of the host's own.
func headerSecrets(t *testing.T) *session.Session {
	t.Helper()
	ctx := context.Background()
	store := session.NewMemoryStore()
	s, err := session.Create(ctx, store, &session.CreateOptions{
		Cwd: "/home/bob/" + hdrGitHub, Title: "deploy " + hdrSlack,
		ParentSession: "/home/bob/.pi/sessions/x_" + hdrGitHub + ".jsonl",
		ProjectID:     "proj " + hdrGitHub, AppVersion: "1.0 " + hdrSlack, User: "bob " + hdrSlack, App: "app " + hdrGitHub,
		Metadata: map[string]string{"deploy_token": hdrGitHub, "note": "password=" + hdrPw, "slack": hdrSlack},
	})
	require.NoError(t, err)
	_, err = s.Append(ctx, session.UserText("hello"))
	require.NoError(t, err)
	_, err = s.Append(ctx, session.AssistantText("hi"))
	require.NoError(t, err)
	h := s.Header()
	h.Extra.Set("hostConfig", json.RawMessage(`{"apiKey":"`+hdrPw+`","url":"https://u:`+hdrPw+`@db"}`))
	log := s.Log()
	store2 := session.NewMemoryStore()
	require.NoError(t, store2.Create(ctx, h))
	require.NoError(t, store2.Append(ctx, h.ID, session.AppendOptions{}, log.Entries...))
	s2, err := session.Open(ctx, store2, h.ID)
	require.NoError(t, err)
	return s2
}

// TestRedactedExportHeader: an export with a Redactor carries no secret
// of the header, in any format.
func TestRedactedExportHeader(t *testing.T) {
	ctx := context.Background()
	s := headerSecrets(t)
	r := redact.New(&redact.Options{Home: []string{}})
	for name, write := range map[string]func(*bytes.Buffer) error{
		"json":     func(b *bytes.Buffer) error { return export.JSON(ctx, b, s, &export.Options{Redactor: r}) },
		"markdown": func(b *bytes.Buffer) error { return export.Markdown(ctx, b, s, &export.Options{Redactor: r}) },
		"html":     func(b *bytes.Buffer) error { return export.HTML(ctx, b, s, &export.Options{Redactor: r}) },
	} {
		var b bytes.Buffer
		require.NoError(t, write(&b), name)
		out := b.String()
		for _, sec := range []string{"Hd7i0C02E9nMoZ6AbYpZ", "yOV6qcOqKFtIlHTTpGfZ", hdrPw, "/home/bob"} {
			assert.False(t, strings.Contains(out, sec), "%s export holds %q", name, sec)
		}
	}
	// The envelope still reads, with its tree.
	var b bytes.Buffer
	require.NoError(t, export.JSON(ctx, &b, s, &export.Options{Redactor: r}))
	env, err := export.Read(&b)
	require.NoError(t, err)
	assert.Equal(t, s.ID(), env.Header.ID)
	assert.Len(t, env.Entries, 2)
	assert.NotEmpty(t, session.HeaderMeta(env.Header).ProjectID, "the metadata is redacted, not dropped")
}

// TestRedactWithholdsTextBlobs: with Blobs and a Redactor, a blob of text
// that holds a secret is left out (its reference is its hash: it cannot
// be changed) and listed; an image's stays.
func TestRedactWithholdsTextBlobs(t *testing.T) {
	ctx := context.Background()
	store := session.NewMemoryStore()
	text, err := store.PutBlob(ctx, []byte("config.yml\ndb_password: Hd8BlobPassw0rd\n"))
	require.NoError(t, err)
	// The same in Latin-1 (not UTF-8) and in UTF-16 with its BOM.
	latin1, err := store.PutBlob(ctx, []byte("# configuraci\xf3n\ndb_password: Hd8BlobPassw0rd\n"))
	require.NoError(t, err)
	u16 := []byte{0xff, 0xfe}
	for _, c := range "db_password: Hd8BlobPassw0rd\r\n" {
		u16 = append(u16, byte(c), 0)
	}
	utf16, err := store.PutBlob(ctx, u16)
	require.NoError(t, err)
	img, err := store.PutBlob(ctx, []byte("\x89PNG\r\n\x1a\n\x00\x00\xff\xfe image"))
	require.NoError(t, err)
	s, err := session.Create(ctx, store, nil)
	require.NoError(t, err)
	_, err = s.AppendCustom(ctx, "app.snapshot", map[string]any{"files": []string{text, latin1, utf16, img}})
	require.NoError(t, err)
	env, err := export.Build(ctx, s, &export.Options{Blobs: true, Redactor: redact.New(&redact.Options{Home: []string{}})})
	require.NoError(t, err)
	assert.ElementsMatch(t, []string{text, latin1, utf16}, env.WithheldBlobs)
	assert.NotContains(t, env.Blobs, text)
	assert.NotContains(t, env.Blobs, latin1)
	assert.NotContains(t, env.Blobs, utf16)
	assert.Contains(t, env.Blobs, img)
	var b bytes.Buffer
	_, err = env.WriteTo(&b)
	require.NoError(t, err)
	assert.NotContains(t, b.String(), "Hd8BlobPassw0rd")
	back, err := export.Read(&b)
	require.NoError(t, err)
	assert.Equal(t, env.WithheldBlobs, back.WithheldBlobs)
}
