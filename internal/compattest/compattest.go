// Package compattest finds the compatibility corpus, the real and
// generated pi sessions with the contexts pi itself built from them,
// which lives beside the checkout in ../shared/compat/pi, and gives the
// tests of every package of the module the same helpers to read it. Only
// tests import it; it imports the session package and testify.
package compattest

import (
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	session "github.com/agentsession/session"
)

// Dir is the corpus directory: ../shared/compat/pi beside the module's
// root, wherever the test that asks runs.
func Dir() string {
	_, file, _, _ := runtime.Caller(0) // <root>/internal/compattest/compattest.go
	root := filepath.Dir(filepath.Dir(filepath.Dir(file)))
	return filepath.Join(filepath.Dir(root), "shared", "compat", "pi")
}

// Present reports whether the corpus is there.
func Present() bool {
	_, err := os.Stat(Dir())
	return err == nil
}

// Need skips the test when the corpus is not there, saying where it was
// looked for.
func Need(t testing.TB) {
	t.Helper()
	if _, err := os.Stat(Dir()); err != nil {
		t.Skipf("compat corpus not found at %s (it lives in ../shared beside the checkout): %v", Dir(), err)
	}
}

// Path is the file name of the corpus.
func Path(name string) string { return filepath.Join(Dir(), name) }

// Read decodes the corpus file name.
func Read(t testing.TB, name string) *session.Log {
	t.Helper()
	data, err := os.ReadFile(Path(name))
	require.NoError(t, err)
	log, err := session.DecodeLog(data, nil)
	require.NoError(t, err, name)
	return log
}

// Normalized is a context in the corpus README's reduced form.
type Normalized struct {
	LeafID        string              `json:"leafId"`
	ThinkingLevel string              `json:"thinkingLevel"`
	Model         *session.ModelRef   `json:"model"`
	Messages      []NormalizedMessage `json:"messages"`
}

// NormalizedMessage is a message of a Normalized context.
type NormalizedMessage map[string]any

// NormalizeMessage is a message in the corpus README's reduced form.
func NormalizeMessage(m *session.Message) NormalizedMessage {
	out := NormalizedMessage{"role": m.Role}
	raw, err := json.Marshal(m)
	if err != nil {
		panic(err)
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil {
		panic(err)
	}
	if c, ok := obj["content"]; ok {
		var s string
		if json.Unmarshal(c, &s) == nil {
			out["text"] = s
		} else {
			var texts []string
			for _, b := range m.Content {
				if b.Type == session.BlockText {
					texts = append(texts, b.Text)
				}
			}
			// An array without text blocks gives "" (07's expected file
			// shows pi's normalizer does this); only a message without
			// content has no text.
			out["text"] = strings.Join(texts, " | ")
		}
	}
	switch m.Role {
	case session.RoleCompactionSummary:
		out["summary"], out["tokensBefore"] = m.Summary, m.TokensBefore
	case session.RoleBranchSummary:
		out["summary"], out["fromId"] = m.Summary, m.FromID
	case session.RoleCustom:
		out["customType"], out["display"] = m.CustomType, m.Display
	}
	return out
}

func Normalize(c *session.Context) Normalized {
	n := Normalized{LeafID: c.LeafID, ThinkingLevel: c.ThinkingLevel, Model: c.Model, Messages: []NormalizedMessage{}}
	for _, m := range c.Messages {
		n.Messages = append(n.Messages, NormalizeMessage(m))
	}
	return n
}

// JSON is v indented, for comparing with the corpus's expected files.
func JSON(t testing.TB, v any) string {
	t.Helper()
	b, err := json.MarshalIndent(v, "", "  ")
	require.NoError(t, err)
	return string(b)
}

// IDShape replaces every 8-hex-digit id in a JSON value by its order of
// first appearance, so that logs with random ids compare by structure.
func IDShape(t testing.TB, lines []string) []string {
	t.Helper()
	ids := map[string]string{}
	var out []string
	for _, l := range lines {
		var buf strings.Builder
		dec := json.NewDecoder(strings.NewReader(l))
		dec.UseNumber()
		for {
			tok, err := dec.Token()
			if err != nil {
				break
			}
			if s, ok := tok.(string); ok && len(s) == 8 && strings.Trim(s, "0123456789abcdef") == "" {
				if _, seen := ids[s]; !seen {
					ids[s] = "#" + string(rune('A'+len(ids)))
				}
				tok = ids[s]
			}
			buf.WriteString(strings.TrimSpace(JSON(t, tok)))
			buf.WriteByte(' ')
		}
		out = append(out, buf.String())
	}
	return out
}

func LogLines(t testing.TB, l *session.Log) []string {
	t.Helper()
	var sb strings.Builder
	require.NoError(t, session.WriteLog(&sb, l))
	return strings.Split(strings.TrimSuffix(sb.String(), "\n"), "\n")
}

func FileLines(t testing.TB, name string) []string {
	t.Helper()
	data, err := os.ReadFile(Path(name))
	require.NoError(t, err)
	return strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
}
