package session_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	session "github.com/agentsession/session"
)

// TestOhMyPiPayloadFields: the members oh-my-pi writes on compaction,
// branch_summary and session_init entries have typed fields, with
// oh-my-pi's names on disk, and survive a FileStore close and reopen.
func TestOhMyPiPayloadFields(t *testing.T) {
	ctx := context.Background()
	store, err := session.OpenFileStore(t.TempDir(), nil)
	require.NoError(t, err)
	s, err := session.Create(ctx, store, nil)
	require.NoError(t, err)
	first := appendAll(t, s, session.UserText("q"), reply("a"))[0]
	comp, err := s.AppendCompaction(ctx, session.Compaction{
		Summary: "long summary", FirstKeptEntryID: first.ID(), TokensBefore: 1200,
		ShortSummary: "recap", PreserveData: json.RawMessage(`{"hookState":true}`), FromExtension: true,
	})
	require.NoError(t, err)
	init, err := s.AppendSessionInit(ctx, session.SessionInit{Task: "scout", OutputSchema: json.RawMessage(`{"type":"object"}`)})
	require.NoError(t, err)
	bs, err := s.AppendEntry(ctx, session.TypeBranchSummary, session.BranchSummary{FromID: first.ID(), Summary: "tried X", FromExtension: true})
	require.NoError(t, err)
	require.NoError(t, s.Close())

	for _, tc := range []struct {
		entry session.Entry
		want  map[string]string // member → JSON on disk
	}{
		{comp, map[string]string{"shortSummary": `"recap"`, "preserveData": `{"hookState":true}`, "fromExtension": `true`}},
		{init, map[string]string{"outputSchema": `{"type":"object"}`}},
		{bs, map[string]string{"fromExtension": `true`}},
	} {
		for k, v := range tc.want {
			got, ok := tc.entry.Field(k)
			require.True(t, ok, "%s has %s", tc.entry.Type(), k)
			assert.JSONEq(t, v, string(got))
		}
	}

	r, err := session.Open(ctx, store, s.ID())
	require.NoError(t, err)
	defer r.Close()
	e, ok := r.Entry(comp.ID())
	require.True(t, ok)
	var c session.Compaction
	require.NoError(t, e.Decode(&c))
	assert.Equal(t, "recap", c.ShortSummary)
	assert.JSONEq(t, `{"hookState":true}`, string(c.PreserveData))
	assert.True(t, c.FromExtension)
	e, _ = r.Entry(init.ID())
	var si session.SessionInit
	require.NoError(t, e.Decode(&si))
	assert.JSONEq(t, `{"type":"object"}`, string(si.OutputSchema))
	e, _ = r.Entry(bs.ID())
	var b session.BranchSummary
	require.NoError(t, e.Decode(&b))
	assert.True(t, b.FromExtension)
	assert.Equal(t, "long summary", r.Context().Messages[0].Summary, "the context starts with the long summary")
}

// TestModelChangeRole: AppendModelChange takes a role; the default role
// is written in pi's form, another in oh-my-pi's, and the context's
// models per role follow.
func TestModelChangeRole(t *testing.T) {
	ctx := context.Background()
	s := session.New()
	def, err := s.AppendModelChange(ctx, "anthropic", "claude-sonnet-4-5")
	require.NoError(t, err)
	explicit, err := s.AppendModelChange(ctx, "openai", "gpt-5", "default")
	require.NoError(t, err)
	smol, err := s.AppendModelChange(ctx, "openrouter", "anthropic/claude-haiku", "smol")
	require.NoError(t, err)

	for _, tc := range []struct {
		e    session.Entry
		want string
	}{
		{def, `{"provider":"anthropic","modelId":"claude-sonnet-4-5"}`},
		{explicit, `{"provider":"openai","modelId":"gpt-5"}`},
		{smol, `{"model":"openrouter/anthropic/claude-haiku","role":"smol"}`},
	} {
		var c map[string]any
		require.NoError(t, tc.e.Decode(&c))
		for _, k := range []string{"type", "id", "parentId", "timestamp"} {
			delete(c, k)
		}
		b, _ := json.Marshal(c)
		assert.JSONEq(t, tc.want, string(b))
	}
	for _, c := range []*session.Context{s.Context(), reopen(t, s).Context()} {
		assert.Equal(t, &session.ModelRef{Provider: "openai", ModelID: "gpt-5"}, c.Model, "a role's change is not the conversation's model")
		assert.Equal(t, session.ModelRef{Provider: "openrouter", ModelID: "anthropic/claude-haiku"}, c.Models["smol"])
	}

	for _, bad := range [][]string{{"a", "b"}} {
		_, err := s.AppendModelChange(ctx, "p", "m", bad...)
		assert.Error(t, err, "%v", bad)
	}
	_, err = s.AppendModelChange(ctx, "", "vendor/model", "smol")
	assert.Error(t, err, "a slash in a model id without a provider cannot be told apart in the role form")
}
