package session_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	session "github.com/agentsession/session"
)

// A structural entry with one member of an unexpected type still does
// what it does, as in pi (which reads entries as JavaScript objects): the
// member is ignored and Verify names it, and the rest of the entry counts.
func TestMistypedFieldsKeepTheEntry(t *testing.T) {
	const head = `{"type":"session","version":3,"id":"s-mistyped","timestamp":"2026-01-15T10:00:00.000Z","cwd":"/w"}
{"type":"message","id":"u1","parentId":null,"timestamp":"2026-01-15T10:00:01.000Z","message":{"role":"user","content":"first question","timestamp":1}}
{"type":"message","id":"a1","parentId":"u1","timestamp":"2026-01-15T10:00:02.000Z","message":{"role":"assistant","content":[{"type":"text","text":"first answer"}],"api":"x","provider":"p","model":"m","stopReason":"stop","timestamp":2}}
{"type":"message","id":"u2","parentId":"a1","timestamp":"2026-01-15T10:00:03.000Z","message":{"role":"user","content":"second question","timestamp":3}}
{"type":"message","id":"a2","parentId":"u2","timestamp":"2026-01-15T10:00:04.000Z","message":{"role":"assistant","content":[{"type":"text","text":"second answer"}],"api":"x","provider":"p","model":"m","stopReason":"stop","timestamp":4}}
`
	cases := []struct {
		name   string
		line   string // parent a2, id x1
		member string // the mistyped member Verify names
		check  func(t *testing.T, s *session.Session)
	}{
		{"compaction tokensBefore 1234.5", `{"type":"compaction","id":"x1","parentId":"a2","timestamp":"2026-01-15T10:00:05.000Z","summary":"what came before","firstKeptEntryId":"u2","tokensBefore":1234.5}`, "tokensBefore",
			func(t *testing.T, s *session.Session) {
				msgs := s.Context().Messages
				require.Len(t, msgs, 4, "summary, the kept u2 and a2, then u3")
				assert.Equal(t, session.RoleCompactionSummary, msgs[0].Role)
				assert.Equal(t, "what came before", msgs[0].Summary)
			}},
		{"compaction fromHook a string", `{"type":"compaction","id":"x1","parentId":"a2","timestamp":"2026-01-15T10:00:05.000Z","summary":"what came before","firstKeptEntryId":"u2","tokensBefore":10,"fromHook":"yes"}`, "fromHook",
			func(t *testing.T, s *session.Session) {
				assert.Equal(t, "what came before", s.Context().Messages[0].Summary)
			}},
		{"branch summary fromHook a string", `{"type":"branch_summary","id":"x1","parentId":"a2","timestamp":"2026-01-15T10:00:05.000Z","fromId":"a2","summary":"the other branch","fromHook":"yes"}`, "fromHook",
			func(t *testing.T, s *session.Session) {
				msgs := s.Context().Messages
				assert.Equal(t, "the other branch", msgs[len(msgs)-2].Summary)
			}},
		{"branch summary fromId a number", `{"type":"branch_summary","id":"x1","parentId":"a2","timestamp":"2026-01-15T10:00:05.000Z","fromId":7,"summary":"the other branch"}`, "fromId",
			func(t *testing.T, s *session.Session) {
				msgs := s.Context().Messages
				assert.Equal(t, "the other branch", msgs[len(msgs)-2].Summary)
			}},
		{"label with a numeric label member elsewhere", `{"type":"label","id":"x1","parentId":"a2","timestamp":"2026-01-15T10:00:05.000Z","targetId":"u1","label":"start","extra":1,"targetIdx":[1]}`, "",
			func(t *testing.T, s *session.Session) {
				assert.Equal(t, "start", s.LabelOf("u1"))
			}},
		{"session_info with a name and a mistyped member", `{"type":"session_info","id":"x1","parentId":"a2","timestamp":"2026-01-15T10:00:05.000Z","name":"Named"}`, "",
			func(t *testing.T, s *session.Session) {
				assert.Equal(t, "Named", s.Title())
			}},
		{"thinking level a number", `{"type":"thinking_level_change","id":"x1","parentId":"a2","timestamp":"2026-01-15T10:00:05.000Z","thinkingLevel":3}`, "thinkingLevel",
			func(t *testing.T, s *session.Session) {
				assert.Equal(t, "off", s.Context().ThinkingLevel)
			}},
		{"model change with a numeric role", `{"type":"model_change","id":"x1","parentId":"a2","timestamp":"2026-01-15T10:00:05.000Z","provider":"q","modelId":"other","role":5}`, "role",
			func(t *testing.T, s *session.Session) {
				require.NotNil(t, s.Context().Model)
				assert.Equal(t, "other", s.Context().Model.ModelID)
			}},
		{"mode change with data a string", `{"type":"mode_change","id":"x1","parentId":"a2","timestamp":"2026-01-15T10:00:05.000Z","mode":"plan","data":"x"}`, "",
			func(t *testing.T, s *session.Session) {
				assert.Equal(t, "plan", s.Context().Mode)
			}},
		{"injected rules with a number among them", `{"type":"ttsr_injection","id":"x1","parentId":"a2","timestamp":"2026-01-15T10:00:05.000Z","injectedRules":"one rule"}`, "injectedRules",
			func(t *testing.T, s *session.Session) {
				assert.Empty(t, s.Context().InjectedRules)
			}},
	}
	ctx := context.Background()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			data := head + c.line + "\n" + `{"type":"message","id":"u3","parentId":"x1","timestamp":"2026-01-15T10:00:06.000Z","message":{"role":"user","content":"after it","timestamp":6}}` + "\n"
			log, err := session.DecodeLog([]byte(data), nil)
			require.NoError(t, err)
			require.Len(t, log.Entries, 6, "every line is an entry")
			s := session.OpenLog(log)
			c.check(t, s)
			findings := s.Verify()
			if c.member != "" {
				require.Len(t, findings, 1, "%v", findings)
				assert.Equal(t, session.FindingBadField, findings[0].Kind)
				assert.Equal(t, "x1", findings[0].EntryID)
				assert.Contains(t, findings[0].Detail, `"`+c.member+`"`)
			} else {
				assert.Empty(t, findings)
			}

			// Prune keeps every context as it was.
			want := contextsOfEnds(t, s)
			_, err = s.Prune(ctx, nil)
			require.NoError(t, err)
			assert.Equal(t, want, contextsOfEnds(t, s), "prune changed a context")
		})
	}
}

// A compaction whose kept history a mistyped member used to hide from
// Prune: after the prune, the kept messages are still there.
func TestPruneKeepsHistoryOfMistypedCompaction(t *testing.T) {
	ctx := context.Background()
	s := session.New()
	for k := range 4 {
		turn(t, s, k, "read", "a.go", 50)
	}
	// Written by another tool with a fractional token count, keeping the
	// last two turns.
	kept := leafPath(s)[8].ID()
	line := `{"summary":"before","firstKeptEntryId":"` + kept + `","tokensBefore":99.5}`
	_, err := s.AppendEntry(ctx, session.TypeCompaction, json.RawMessage(line))
	require.NoError(t, err)
	before := s.Context().Messages
	require.Equal(t, session.RoleCompactionSummary, before[0].Role)
	_, err = s.Prune(ctx, nil)
	require.NoError(t, err)
	after := s.Context().Messages
	require.Equal(t, len(before), len(after))
	for i := range before {
		assert.Equal(t, before[i].Role, after[i].Role)
	}
	for i := range after {
		assert.Equal(t, before[i].Text(), after[i].Text(), "message %d", i)
	}
	assert.Len(t, after, 9, "the summary and the two turns kept")
}
