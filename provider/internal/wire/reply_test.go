package wire

import (
	"encoding/json"
	"errors"
	"testing"

	session "github.com/agentsession/session"
)

// The cost is pi's calculateCost to the bit: price / 1e6 * tokens, each
// part, then their sum.
func TestCost(t *testing.T) {
	u := session.Usage{Input: 423, Output: 131, CacheRead: 1000, CacheWrite: 300}
	p := &Prices{Input: 3, Output: 15, CacheRead: 0.3, CacheWrite: 3.75}
	c := Cost(&u, p, 100)
	if c.Input != 0.001269 || c.Output != 0.001965 || c.CacheRead != part(0.3, 1000) || c.CacheWrite != part(3.75, 300) {
		t.Errorf("cost %+v", c)
	}
	if c.Total != c.Input+c.Output+c.CacheRead+c.CacheWrite {
		t.Errorf("total %v", c.Total)
	}
	// Hour-long writes at their own price when it is set; the part is
	// never more than the writes.
	p.CacheWrite1h = 6
	if c := Cost(&u, p, 100); c.CacheWrite != part(3.75, 200)+part(6, 100) {
		t.Errorf("cache write %v", c.CacheWrite)
	}
	if c := Cost(&u, p, 1000); c.CacheWrite != part(6, 300) {
		t.Errorf("cache write %v", c.CacheWrite)
	}
}

// part is price / 1e6 * tokens in float64 arithmetic (a constant
// expression would be exact).
func part(price, tokens float64) float64 { return price / 1e6 * tokens }

func TestArguments(t *testing.T) {
	for _, c := range []struct {
		in   string
		want string
		ok   bool
	}{
		{``, `{}`, true}, {` null `, `{}`, true}, {` {"a":1} `, `{"a":1}`, true},
		{`[1]`, `{}`, false}, {`{"a":`, `{}`, false}, {`"x"`, `{}`, false},
	} {
		got, ok := Arguments([]byte(c.in))
		if string(got) != c.want || ok != c.ok {
			t.Errorf("Arguments(%q) = %s, %v", c.in, got, ok)
		}
	}
}

func TestReplyMessage(t *testing.T) {
	r := &Reply{API: "a", Provider: "p", Requested: "m", Served: "m-20250101", ID: "id_1",
		Usage: session.Usage{Input: 1, Output: 2, CacheRead: 3, CacheWrite: 4}, StopReason: session.StopEnd}
	m := r.Message(nil)
	if m.Model != "m" || m.Usage.TotalTokens != 10 || m.StopReason != session.StopEnd || m.Content == nil {
		t.Errorf("%+v", m)
	}
	if id, _ := m.Extra.Get("responseId"); string(id) != `"id_1"` {
		t.Errorf("responseId %s", id)
	}
	if served, _ := m.Extra.Get("responseModel"); string(served) != `"m-20250101"` {
		t.Errorf("responseModel %s", served)
	}
	// No model asked for: the served one, and no responseModel.
	r.Requested = ""
	m = r.Message(Truncated("cut"))
	if _, ok := m.Extra.Get("responseModel"); ok || m.Model != "m-20250101" || m.StopReason != session.StopError || m.ErrorMessage != "cut" {
		t.Errorf("%+v", m)
	}
	if _, err := json.Marshal(m); err != nil {
		t.Error(err)
	}
}

func TestErrors(t *testing.T) {
	var syntax *json.SyntaxError
	cause := json.Unmarshal([]byte("{"), &struct{}{})
	err := Malformed(cause, "x %d", 1)
	if !errors.Is(err, ErrMalformed) || errors.Is(err, ErrTruncated) || !errors.As(err, &syntax) || err.Error() != "x 1: "+cause.Error() {
		t.Errorf("%v", err)
	}
	if err := Truncated("cut"); !errors.Is(err, ErrTruncated) || err.Error() != "cut" {
		t.Errorf("%v", err)
	}
	var s Sticky
	first := errors.New("first")
	if s.Do(func() error { return nil }) != nil || s.Do(func() error { return first }) != first ||
		s.Do(func() error { t.Error("ran after a failure"); return nil }) != first || s.Err() != first {
		t.Error("Sticky does not keep its first error")
	}
}
