package session_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	session "github.com/agentsession/session"
)

// TestTurnSettingsCascade: explicit, else saved in the session, else the
// host's default, for the model (per role) and the thinking level; Save
// records an explicit choice only when it differs from the session's,
// and it survives a reopen.
func TestTurnSettingsCascade(t *testing.T) {
	ctx := context.Background()
	opus := &session.ModelRef{Provider: "anthropic", ModelID: "claude-opus-4-1"}
	gpt := &session.ModelRef{Provider: "openai", ModelID: "gpt-5"}
	haiku := &session.ModelRef{Provider: "anthropic", ModelID: "claude-haiku"}
	def := &session.TurnRequest{DefaultModel: opus, DefaultThinkingLevel: "medium"}

	s := session.New()
	got, err := s.TurnSettings(ctx, nil)
	require.NoError(t, err)
	assert.Equal(t, session.TurnSettings{}, got, "nothing anywhere")

	for _, tc := range []struct {
		name     string
		req      session.TurnRequest
		model    *session.ModelRef
		msrc     session.SettingSource
		level    string
		lsrc     session.SettingSource
		newSaved int
	}{
		{"defaults on a new session", *def, opus, session.SettingDefault, "medium", session.SettingDefault, 0},
		{"explicit wins, saved", session.TurnRequest{Model: gpt, ThinkingLevel: "high", DefaultModel: opus, Save: true}, gpt, session.SettingExplicit, "high", session.SettingExplicit, 2},
		{"the session's now", *def, gpt, session.SettingSession, "high", session.SettingSession, 0},
		{"explicit equal to saved: nothing appended", session.TurnRequest{Model: gpt, ThinkingLevel: "high", Save: true}, gpt, session.SettingExplicit, "high", session.SettingExplicit, 0},
		{"explicit not saved", session.TurnRequest{Model: haiku}, haiku, session.SettingExplicit, "high", session.SettingSession, 0},
		{"a role without a saved model takes the default", session.TurnRequest{Role: "smol", DefaultModel: haiku}, haiku, session.SettingDefault, "high", session.SettingSession, 0},
		{"a role saved", session.TurnRequest{Role: "smol", Model: haiku, Save: true}, haiku, session.SettingExplicit, "high", session.SettingSession, 1},
		{"the role's own", session.TurnRequest{Role: "smol", DefaultModel: opus}, haiku, session.SettingSession, "high", session.SettingSession, 0},
		{"the default role is unchanged by the role's", *def, gpt, session.SettingSession, "high", session.SettingSession, 0},
	} {
		n := s.Len()
		got, err := s.TurnSettings(ctx, &tc.req)
		require.NoError(t, err, tc.name)
		assert.Equal(t, tc.model, got.Model, tc.name)
		assert.Equal(t, tc.msrc, got.ModelSource, tc.name)
		assert.Equal(t, tc.level, got.ThinkingLevel, tc.name)
		assert.Equal(t, tc.lsrc, got.ThinkingSource, tc.name)
		assert.Len(t, got.Saved, tc.newSaved, tc.name)
		assert.Equal(t, n+tc.newSaved, s.Len(), tc.name)
	}

	// A reply of another model (a role's turn) does not change the model
	// the session saved for the default role; Context.Model follows pi,
	// the latest reply.
	appendAll(t, s, session.UserText("q"), reply("a")) // reply() is the test model
	got, err = s.TurnSettings(ctx, def)
	require.NoError(t, err)
	assert.Equal(t, gpt, got.Model)
	assert.Equal(t, session.SettingSession, got.ModelSource)
	assert.Equal(t, &session.ModelRef{Provider: provider, ModelID: model}, s.Context().Model)

	// With no model change at all, the replies' model is the session's, as
	// pi resumes.
	plain := session.New()
	appendAll(t, plain, session.UserText("q"), reply("a"))
	got, err = plain.TurnSettings(ctx, def)
	require.NoError(t, err)
	assert.Equal(t, &session.ModelRef{Provider: provider, ModelID: model}, got.Model)
	assert.Equal(t, session.SettingSession, got.ModelSource)

	r := reopen(t, s)
	got, err = r.TurnSettings(ctx, &session.TurnRequest{Role: "smol"})
	require.NoError(t, err)
	assert.Equal(t, haiku, got.Model)
	assert.Equal(t, "high", got.ThinkingLevel)
}
