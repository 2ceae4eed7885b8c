package session_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	session "github.com/agentsession/session"
)

// TestContentKinds: documents, cited text, redacted thinking (pi's form
// and oh-my-pi's), refusals and audio have constructors and typed
// fields, are written as the tests spell out, and read back the same,
// through a session and a reopen.
func TestContentKinds(t *testing.T) {
	cite := session.Citation{Type: "char_location", CitedText: "pi is minimal", DocumentTitle: "README", StartCharIndex: 0, EndCharIndex: 13}
	web := session.Citation{Type: "web_search_result_location", CitedText: "a coding agent", URL: "https://example.com", Title: "Example", EncryptedIndex: "Eo8B"}
	cases := []struct {
		name string
		b    session.Block
		want string
	}{
		{"pdf", session.Document("application/pdf", []byte{1, 2, 3}).WithTitle("spec").WithContext("v2").WithFilename("spec.pdf").WithCitations(),
			`{"type":"document","data":"AQID","mimeType":"application/pdf","filename":"spec.pdf","title":"spec","context":"v2","citations":{"enabled":true}}`},
		{"text document", session.TextDocument("hello\nworld").WithTitle("notes"),
			`{"type":"document","text":"hello\nworld","mimeType":"text/plain","title":"notes"}`},
		{"url document", session.DocumentURL("https://example.com/a.pdf"), `{"type":"document","url":"https://example.com/a.pdf"}`},
		{"file document", session.DocumentFile("file_011"), `{"type":"document","fileId":"file_011"}`},
		{"cited text", session.CitedText("pi is a minimal coding agent", cite, web),
			`{"type":"text","text":"pi is a minimal coding agent","citations":[{"type":"char_location","cited_text":"pi is minimal","document_index":0,"document_title":"README","start_char_index":0,"end_char_index":13},{"type":"web_search_result_location","cited_text":"a coding agent","url":"https://example.com","title":"Example","encrypted_index":"Eo8B"}]}`},
		{"redacted thinking", session.RedactedThinking("EmwKAhgB"),
			`{"type":"thinking","thinking":"[Reasoning redacted]","thinkingSignature":"EmwKAhgB","redacted":true}`},
		{"refusal", session.Refusal("I can't help with that."), `{"type":"refusal","text":"I can't help with that."}`},
		{"audio", session.Audio("audio/wav", []byte{1, 2, 3}), `{"type":"audio","data":"AQID","mimeType":"audio/wav"}`},
	}
	store, err := session.OpenFileStore(t.TempDir(), nil)
	require.NoError(t, err)
	defer store.Close()
	s, err := session.Create(t.Context(), store, nil)
	require.NoError(t, err)
	for _, c := range cases {
		out, err := json.Marshal(c.b)
		require.NoError(t, err, c.name)
		assert.Equal(t, c.want, string(out), c.name)
		var back session.Block
		require.NoError(t, json.Unmarshal(out, &back), c.name)
		again, _ := json.Marshal(back)
		assert.Equal(t, c.want, string(again), c.name)
		m := session.User(c.b)
		if c.b.Type != session.BlockDocument && c.b.Type != session.BlockAudio {
			m = session.Assistant(c.b)
		}
		_, err = s.Append(t.Context(), m)
		require.NoError(t, err, c.name)
	}
	require.NoError(t, s.Close())
	r, err := session.Open(t.Context(), store, s.ID())
	require.NoError(t, err)
	defer r.Close()
	msgs := r.Context().Messages
	require.Len(t, msgs, len(cases))
	for i, c := range cases {
		out, _ := json.Marshal(msgs[i].Content[0])
		assert.Equal(t, c.want, string(out), c.name)
	}

	// Accessors.
	cs, err := cases[4].b.CitationList()
	require.NoError(t, err)
	assert.Equal(t, []session.Citation{cite, web}, cs)
	data, ok := cases[5].b.RedactedData()
	assert.True(t, ok)
	assert.Equal(t, "EmwKAhgB", data)
	assert.True(t, cases[0].b.CitationsEnabled())
	assert.False(t, cases[1].b.CitationsEnabled())

	// oh-my-pi writes redacted thinking as a block of its own type.
	var omp session.Block
	require.NoError(t, json.Unmarshal([]byte(`{"type":"redactedThinking","data":"Eq0K"}`), &omp))
	data, ok = omp.RedactedData()
	assert.True(t, ok)
	assert.Equal(t, "Eq0K", data)
	_, ok = session.Text("x").RedactedData()
	assert.False(t, ok)
}
