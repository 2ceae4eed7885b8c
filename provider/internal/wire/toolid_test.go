package wire

import (
	"regexp"
	"strings"
	"testing"

	session "github.com/agentsession/session"
)

func TestNormalize(t *testing.T) {
	for _, c := range []struct {
		id   string
		max  int
		same bool
	}{
		{"toolu_01A", 64, true},
		{"call_abc-DEF_123", 40, true},
		{strings.Repeat("a", 40), 40, true},
		{strings.Repeat("a", 41), 40, false},
		{"call_1|fc_2", 64, false},
		{"with space", 64, false},
		{"", 64, false},
		{"é", 64, false},
	} {
		got := Normalize(c.id, c.max)
		if (got == c.id) != c.same {
			t.Errorf("Normalize(%q, %d) = %q; unchanged %v, want %v", c.id, c.max, got, got == c.id, c.same)
		}
		if !valid(got, c.max) {
			t.Errorf("Normalize(%q, %d) = %q, not a valid id", c.id, c.max, got)
		}
	}
	// Ids that differ only where they are cut or replaced stay apart.
	a, b := Normalize(strings.Repeat("x", 50)+"1", 40), Normalize(strings.Repeat("x", 50)+"2", 40)
	c, d := Normalize("a|b", 40), Normalize("a b", 40)
	if a == b || c == d {
		t.Errorf("collisions: %q %q, %q %q", a, b, c, d)
	}
}

func FuzzNormalize(f *testing.F) {
	f.Add("toolu_01A", 64)
	f.Add("call_1|fc_2", 40)
	f.Add("", 1)
	pattern := regexp.MustCompile(`^[A-Za-z0-9_-]+$`)
	f.Fuzz(func(t *testing.T, id string, max int) {
		if max < 16 || max > 256 {
			return
		}
		got := Normalize(id, max)
		if len(got) > max || !pattern.MatchString(got) {
			t.Fatalf("Normalize(%q, %d) = %q", id, max, got)
		}
		if Normalize(id, max) != got {
			t.Fatal("not deterministic")
		}
		if valid(id, max) != (got == id) {
			t.Fatalf("Normalize(%q, %d) = %q: a valid id must stay, any other must change", id, max, got)
		}
	})
}

func TestCalls(t *testing.T) {
	c := NewCalls(40, 0)
	c.Turn()
	a1, b1 := c.Call("call_0", "ls"), c.Call("call_1", "cat")
	if a1 != "call_0" || b1 != "call_1" {
		t.Fatalf("first ids changed: %q %q", a1, b1)
	}
	if got, ok := c.Result("call_1"); got != b1 || !ok {
		t.Errorf("result id %q, %v; want %q", got, ok, b1)
	}
	// A second result of the same call, or one of no call, answers nothing.
	if got, ok := c.Result("call_1"); ok {
		t.Errorf("second result of call_1 accepted as %q", got)
	}
	if got, ok := c.Result("call_9"); ok {
		t.Errorf("result of no call accepted as %q", got)
	}
	if open := opened(c); len(open) != 1 || open[0].ID != a1 || open[0].Name != "ls" {
		t.Errorf("open %+v", open)
	}
	// The next turn reuses call_0: it is sent under another id, and its
	// result follows it.
	c.Turn()
	a2 := c.Call("call_0", "ls")
	if a2 == a1 || !valid(a2, 40) {
		t.Errorf("reused id sent as %q", a2)
	}
	if got, ok := c.Result("call_0"); got != a2 || !ok {
		t.Errorf("result of the reused id sent as %q, %v; want %q", got, ok, a2)
	}
	if open := opened(c); len(open) != 0 {
		t.Errorf("open %+v", open)
	}
	// Calls forgotten by Turn (or answered by Open) take no result.
	c.Turn()
	c.Call("call_5", "ls")
	c.Turn()
	if got, ok := c.Result("call_5"); ok {
		t.Errorf("result of a forgotten call accepted as %q", got)
	}
}

func opened(c *Calls) []Call {
	var out []Call
	c.Open(func(cl Call) { out = append(out, cl) })
	return out
}

func TestObject(t *testing.T) {
	for _, c := range []struct {
		args string
		want bool
	}{
		{`{"a":1}`, true}, {` {}`, true}, {``, false}, {`[]`, false}, {`"s"`, false}, {`{"a":`, false},
	} {
		if got := Object([]byte(c.args)); got != c.want {
			t.Errorf("Object(%q) = %v, want %v", c.args, got, c.want)
		}
	}
}

func TestMarshalKeepsAngleBrackets(t *testing.T) {
	got, err := Marshal(map[string]string{"t": "<b>&"})
	if err != nil || string(got) != `{"t":"<b>&"}` {
		t.Errorf("got %s, %v", got, err)
	}
}

func TestIncomplete(t *testing.T) {
	for _, c := range []struct {
		m    *session.Message
		want bool
	}{
		{session.AssistantText("x").WithStopReason(session.StopError), true},
		{session.AssistantText("x").WithStopReason(session.StopAborted), true},
		{session.AssistantText("x"), false},
		{session.AssistantText("x").WithStopReason(session.StopLength), false},
		{session.AssistantText("x").WithStopReason(""), false},
		{&session.Message{Role: session.RoleUser, StopReason: session.StopError}, false},
	} {
		if got := Incomplete(c.m); got != c.want {
			t.Errorf("Incomplete(%s, %q) = %v", c.m.Role, c.m.StopReason, got)
		}
	}
}
