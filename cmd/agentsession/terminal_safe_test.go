package main

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	session "github.com/agentsession/session"
	"github.com/stretchr/testify/require"
)

// hostile is text another program may have written into a session file:
// an OSC that sets the window title, a CSI that clears the screen, a
// colour left on, a C1 CSI, a carriage return that overwrites the line,
// a backspace, a bell, DEL, and a bidi override that turns the rest of
// a line around.
const hostile = "a\x1b]0;pwned\x07b\x1b[2J\x1b[31mc\u009b1mdrm\bx\x7fy\u202eevil\u2066z\u2069"

// hostileStore is a store with one session whose title, cwd, metadata,
// messages and label hold hostile text.
func hostileStore(t *testing.T) (root, id string) {
	t.Helper()
	ctx := context.Background()
	root = filepath.Join(t.TempDir(), "sessions")
	store, err := session.OpenFileStore(root, nil)
	require.NoError(t, err)
	defer store.Close()
	s, err := session.Create(ctx, store, &session.CreateOptions{ID: "h-one", Cwd: "/w/" + hostile, Title: "needle " + hostile,
		Metadata: map[string]string{"k" + hostile: "v" + hostile}})
	require.NoError(t, err)
	u := session.UserText("needle in the prompt " + hostile + "\nsecond line")
	u.Model = "m" + hostile
	require.NoError(t, s.SaveTurn(ctx, []*session.Message{u, session.AssistantText("needle reply " + hostile)}, nil))
	require.NoError(t, s.Close())
	return root, "h-one"
}

// unsafeRune returns the first character in out that a terminal would
// act on rather than show: a C0 control but the newline (and the tab),
// DEL, a C1 control or a bidi override or isolate.
func unsafeRune(out string) (rune, bool) {
	for _, r := range out {
		switch {
		case r == '\n' || r == '\t':
		case r < 0x20 || r == 0x7f || 0x80 <= r && r <= 0x9f,
			0x202a <= r && r <= 0x202e, 0x2066 <= r && r <= 0x2069:
			return r, true
		}
	}
	return 0, false
}

// TestTerminalNeverGetsControlsFromData: no command prints a control
// character or bidi override it read from a session file, in its text
// output; each is shown as a visible escape instead.
func TestTerminalNeverGetsControlsFromData(t *testing.T) {
	root, id := hostileStore(t)
	index := filepath.Join(t.TempDir(), "index.sqlite")
	for _, args := range [][]string{
		{"ls", "--root", root},
		{"ls", "--all", "--archived", "--root", root},
		{"show", "--root", root, id},
		{"context", "--root", root, id},
		{"tree", "--root", root, id},
		{"stats", "--root", root},
		{"search", "--root", root, "--index", index, "needle"},
	} {
		out, errOut, code := runCLI(args...)
		if code != exitOK {
			t.Errorf("%v: exit %d: %s", args, code, errOut)
			continue
		}
		for name, s := range map[string]string{"stdout": out, "stderr": errOut} {
			if r, bad := unsafeRune(s); bad {
				t.Errorf("%v: %s holds %U:\n%q", args, name, r, s)
			}
		}
	}
	// Messages on stderr name titles and paths too.
	_, errOut, code := runCLI("delete", "--root", root, id)
	require.Equal(t, exitError, code, errOut)
	require.Contains(t, errOut, "needle a\\x1b]0;pwned")
	if r, bad := unsafeRune(errOut); bad {
		t.Errorf("delete without --yes: stderr holds %U:\n%q", r, errOut)
	}
	// --json escapes them the JSON way: the same text once decoded.
	for _, args := range [][]string{
		{"ls", "--all", "--json", "--root", root},
		{"show", "--json", "--root", root, id},
		{"context", "--json", "--root", root, id},
		{"search", "--json", "--root", root, "--index", index, "needle"},
	} {
		out, errOut, code := runCLI(args...)
		require.Equal(t, exitOK, code, "%v: %s", args, errOut)
		if r, bad := unsafeRune(out); bad {
			t.Errorf("%v: holds %U:\n%q", args, r, out)
		}
		if args[0] == "ls" {
			var got struct{ Title string }
			require.NoError(t, json.Unmarshal([]byte(out), &got))
			require.Equal(t, "needle "+hostile, got.Title)
		}
	}
	// Shown, escaped: nothing of the text is lost.
	out, _, _ := runCLI("ls", "--all", "--root", root)
	require.Contains(t, out, `needle a\x1b]0;pwned\x07b\x1b[2J`)
	// With colours on, only this tool's own escapes reach the terminal.
	out, _, code = runTTY(terminal{outTTY: true, color: true, rows: 1000}, "ls", "--all", "--root", root)
	require.Equal(t, exitOK, code)
	require.NotContains(t, out, "\x1b]")
	require.NotContains(t, out, "\x1b[2J")
	require.NotContains(t, out, "\x1b[31m")
	require.True(t, strings.Contains(out, `\x1b[31m`), out)
}
