package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	session "github.com/agentsession/session"
)

// mirrorFixture is a session folder with one session, and another
// folder as the remote.
type mirrorFixture struct {
	root, remote string
	id           string
}

func newMirrorFixture(t *testing.T) *mirrorFixture {
	f := &mirrorFixture{root: t.TempDir(), remote: t.TempDir()}
	store := openFS(t, f.root)
	s, err := session.Create(context.Background(), store, &session.CreateOptions{Cwd: "/w"})
	require.NoError(t, err)
	f.id = s.ID()
	say(t, s, "first")
	return f
}

func openFS(t *testing.T, root string) *session.FileStore {
	t.Helper()
	s, err := session.OpenFileStore(root, nil)
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	return s
}

func say(t *testing.T, s *session.Session, text string) {
	t.Helper()
	require.NoError(t, s.SaveTurn(context.Background(), []*session.Message{session.UserText(text), session.AssistantText("re: " + text)}, nil))
}

func entriesOf(t *testing.T, root, id string) []string {
	t.Helper()
	log, err := openFS(t, root).Load(context.Background(), id)
	require.NoError(t, err)
	var out []string
	for _, e := range log.Entries {
		out = append(out, e.ID())
	}
	return out
}

func (f *mirrorFixture) mirror(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	return runCLI(append([]string{"mirror", "--root", f.root, "--to", "file://" + f.remote}, args...)...)
}

func TestMirrorOnce(t *testing.T) {
	ctx := context.Background()
	f := newMirrorFixture(t)
	out, errOut, code := f.mirror(t)
	require.Equal(t, exitOK, code, errOut)
	assert.Contains(t, out, f.id+": created on the remote with 2 entries")
	assert.Equal(t, entriesOf(t, f.root, f.id), entriesOf(t, f.remote, f.id))

	out, _, code = f.mirror(t, f.id)
	require.Equal(t, exitOK, code)
	assert.Contains(t, out, "the same on both sides")

	// Both sides write: this machine's turn becomes a branch of the remote.
	local, err := session.Open(ctx, openFS(t, f.root), f.id)
	require.NoError(t, err)
	say(t, local, "here")
	remote, err := session.Open(ctx, openFS(t, f.remote), f.id)
	require.NoError(t, err)
	say(t, remote, "there")
	out, errOut, code = f.mirror(t, "--json")
	require.Equal(t, exitOK, code, errOut)
	var res mirrorJSON
	require.NoError(t, json.Unmarshal([]byte(strings.TrimSpace(out)), &res), out)
	assert.Equal(t, mirrorJSON{ID: f.id, Branched: 2, Pulled: 3}, res)
	all := entriesOf(t, f.root, f.id)
	assert.Equal(t, all, entriesOf(t, f.remote, f.id))
	assert.Len(t, all, 2+2+2+1, "three turns and the marker that keeps the remote's leaf")
}

func TestMirrorRefuses(t *testing.T) {
	f := newMirrorFixture(t)
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"mirror", "--root", f.root}, "--to needs the remote store"},
		{[]string{"mirror", "--root", f.root, "--to", "ftp://x/y"}, `scheme "ftp"`},
		{[]string{"mirror", "--root", f.root, "--to", "s3:///prefix"}, "no bucket"},
		{[]string{"mirror", "--root", f.root, "--to", "postgres://alice:s3cret-pw@127.0.0.1:1/db?connect_timeout=2"}, "agentsession"},
	}
	for _, tc := range cases {
		out, errOut, code := runCLI(tc.args...)
		assert.Equal(t, exitError, code, "%v: %s", tc.args, out)
		assert.Contains(t, errOut, tc.want, "%v", tc.args)
		assert.NotContains(t, errOut+out, "s3cret-pw", "a password in an error")
	}
}

// TestMirrorWatch: with --watch, a turn saved here reaches the remote,
// and a turn saved there comes back, until the command is interrupted.
func TestMirrorWatch(t *testing.T) {
	f := newMirrorFixture(t)
	ctx, cancel := context.WithCancel(context.Background())
	var out, errOut lockedBuffer
	done := make(chan int, 1)
	go func() {
		done <- runContext(ctx, []string{"mirror", "--watch", "--interval", "100ms", "--root", f.root, "--to", "file://" + f.remote}, &out, &errOut, terminal{})
	}()
	eventually(t, func() bool { return len(tryEntries(f.remote, f.id)) == 2 })
	local, err := session.Open(context.Background(), openFS(t, f.root), f.id)
	require.NoError(t, err)
	say(t, local, "more")
	eventually(t, func() bool { return len(tryEntries(f.remote, f.id)) == 4 })
	remote, err := session.Open(context.Background(), openFS(t, f.remote), f.id)
	require.NoError(t, err)
	say(t, remote, "back")
	eventually(t, func() bool { return len(tryEntries(f.root, f.id)) == 6 })
	cancel()
	assert.Equal(t, exitOK, <-done, errOut.String())
	assert.Contains(t, out.String(), f.id+": ")
}

// tryEntries is entriesOf without failing: nil until the session is there.
func tryEntries(root, id string) []string {
	s, err := session.OpenFileStore(root, nil)
	if err != nil {
		return nil
	}
	defer s.Close()
	log, err := s.Load(context.Background(), id)
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range log.Entries {
		out = append(out, e.ID())
	}
	return out
}

// eventually waits for cond, failing after a deadline that only guards
// against a hang.
func eventually(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("not mirrored within 30 s")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestMirrorS3 mirrors to a bucket on the S3 server AGENTSESSION_S3_ENDPOINT
// names (.ci/run starts one), and picks the session up on another
// machine (another folder) from there.
func TestMirrorS3(t *testing.T) {
	endpoint := os.Getenv("AGENTSESSION_S3_ENDPOINT")
	if endpoint == "" {
		t.Skip("AGENTSESSION_S3_ENDPOINT is not set: mirror --to s3:// needs an S3 server (.ci/s3 start)")
	}
	ctx := context.Background()
	cfg, err := config.LoadDefaultConfig(ctx)
	require.NoError(t, err)
	c := s3.NewFromConfig(cfg, func(o *s3.Options) { o.BaseEndpoint = aws.String(endpoint); o.UsePathStyle = true })
	bucket := fmt.Sprintf("cli-mirror-%d", time.Now().UnixNano())
	_, err = c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(bucket)})
	require.NoError(t, err)
	f := newMirrorFixture(t)
	to := "s3://" + bucket + "/team/"
	out, errOut, code := runCLI("mirror", "--root", f.root, "--to", to, "--s3-endpoint", endpoint)
	require.Equal(t, exitOK, code, errOut)
	assert.Contains(t, out, "created on the remote")
	other := t.TempDir()
	out, errOut, code = runCLI("mirror", "--root", other, "--to", to, "--s3-endpoint", endpoint, f.id)
	require.Equal(t, exitOK, code, errOut)
	assert.Contains(t, out, "created here with 2 entries")
	assert.Equal(t, entriesOf(t, f.root, f.id), entriesOf(t, other, f.id))
	// A wrong secret: refused, and the secret is not in the message.
	var o, e bytes.Buffer
	t.Setenv("AWS_SECRET_ACCESS_KEY", "wrong-secret-value")
	code = run([]string{"mirror", "--root", f.root, "--to", to, "--s3-endpoint", endpoint}, &o, &e)
	assert.Equal(t, exitError, code)
	assert.NotContains(t, o.String()+e.String(), "wrong-secret-value")
}
