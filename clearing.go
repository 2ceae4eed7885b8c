package session

import (
	"context"
	"fmt"
	"reflect"
	"slices"
)

// Tool-result clearing: a model view that stays light without a summary.
// Old tool results are what fills a coding agent's context (files read,
// command output), and the model seldom needs them again once it acted
// on them. ClearedMessages replaces the results of older turns with a
// short placeholder naming the tool and the size dropped, keeping every
// call paired; the log is not touched, so Context, a fork or an export
// still has them all. It is Anthropic's context editing and eino's
// reduction done on the history instead of by the API.
//
// The prompt cache: providers cache a request's prefix, and a context
// whose old messages change on every turn would miss it every turn. The
// results are therefore cleared in steps: the turns cleared move forward
// Step turns at a time, so the prefix stays the same between steps.
//
// The cost per turn: the cleared list is kept with the session and grown
// with the messages since the last call, each estimated once (O(new
// entries)); when the cleared turns move forward, once every Step turns,
// the list is copied (a copy of pointers: lists handed out keep theirs)
// and the results of the turns newly cleared are replaced.

// ClearOptions says which tool results ClearedMessages clears.
type ClearOptions struct {
	// KeepTurns keeps the tool results of the last KeepTurns turns (a
	// turn starts with a user message) whole. Default 3.
	KeepTurns int
	// Step is how many turns the cleared part moves forward at a time.
	// Default 5; 1 clears a turn's results as soon as it leaves the last
	// KeepTurns (and changes the prefix every turn).
	Step int
	// MaxTokens, when set, clears further (still by Step turns, and never
	// the last turn's results) while the estimated context is over it.
	MaxTokens int64
	// MinTokens keeps results smaller than this many tokens whole: their
	// placeholder would save little. Default 100.
	MinTokens int64
	// Estimator estimates tokens; nil means DefaultTokenEstimator.
	Estimator TokenEstimator
}

func (o *ClearOptions) withDefaults() ClearOptions {
	var c ClearOptions
	if o != nil {
		c = *o
	}
	if c.KeepTurns <= 0 {
		c.KeepTurns = 3
	}
	if c.Step <= 0 {
		c.Step = 5
	}
	if c.MinTokens <= 0 {
		c.MinTokens = 100
	}
	if c.Estimator == nil {
		c.Estimator = DefaultTokenEstimator
	}
	return c
}

// same reports whether c and o clear the same results.
func (c ClearOptions) same(o ClearOptions) bool {
	if c.KeepTurns != o.KeepTurns || c.Step != o.Step || c.MaxTokens != o.MaxTokens || c.MinTokens != o.MinTokens {
		return false
	}
	a, b := reflect.ValueOf(c.Estimator), reflect.ValueOf(o.Estimator)
	if a.Type() != b.Type() {
		return false
	}
	switch a.Kind() {
	case reflect.Func, reflect.Pointer, reflect.Map, reflect.Chan, reflect.Slice, reflect.UnsafePointer:
		return a.Pointer() == b.Pointer()
	}
	return a.Type().Comparable() && a.Interface() == b.Interface()
}

// ClearStats says what ClearedMessages cleared.
type ClearStats struct {
	// Cleared counts the results replaced; ClearedTurns the turns whose
	// results are cleared (the first ones of the context).
	Cleared      int
	ClearedTurns int
	// TokensBefore and TokensAfter estimate the list before and after
	// clearing (estimates only: a model's reported usage measured what
	// was sent, cleared or not).
	TokensBefore int64
	TokensAfter  int64
}

// clearedResultText is the text that stands for a cleared tool result.
func clearedResultText(tool string, tokens int64) string {
	if tool == "" {
		tool = "the tool"
	}
	return fmt.Sprintf("[Tool result cleared to keep the context small: %s returned about %d tokens here. Run it again if you need the result.]", tool, tokens)
}

// ClearedMessages returns Messages with the tool results of older turns
// replaced by a placeholder (clearedResultText, the call's id, name and
// error flag kept), per o (nil for the defaults), and what it cleared.
// Nothing is written. Like SharedMessages, the list and its messages are
// the session's own: read them only. Converters take it as they take
// Messages; when it is still too long, compact (CompactionOptions.Clear
// makes NeedsCompaction measure the cleared list).
func (s *Session) ClearedMessages(ctx context.Context, o *ClearOptions) ([]*Message, ClearStats, error) {
	if err := s.makeWhole(ctx); err != nil {
		return nil, ClearStats{}, err
	}
	if err := ctx.Err(); err != nil {
		return nil, ClearStats{}, err
	}
	if err := s.lock(ctx); err != nil {
		return nil, ClearStats{}, err
	}
	defer s.mu.Unlock()
	out, st := s.clearedLocked(o.withDefaults())
	return out[:len(out):len(out)], st, nil
}

// clearCache is the cleared view of the last call, grown as entries come.
type clearCache struct {
	pc    *pathCtx
	gen   int
	opts  ClearOptions
	src   []*Message // the model list it was made from
	turn  []int32    // per message: its turn (user messages before it and itself)
	est   []int64    // per message: its estimate
	save  []int64    // per turn: what clearing the results of turns 1..t saves
	first []int      // per turn: the index of its first message (first[0] = 0)
	out   []*Message
	st    ClearStats
}

// valid reports whether the cache was made from a prefix of src.
func (c *clearCache) valid(pc *pathCtx, src []*Message, o ClearOptions) bool {
	n := len(c.src)
	return c.pc == pc && c.gen == pc.pair.gen && c.opts.same(o) && n > 0 && len(src) >= n &&
		src[0] == c.src[0] && src[n-1] == c.src[n-1]
}

func (s *Session) clearedLocked(o ClearOptions) ([]*Message, ClearStats) {
	pc := s.leafCtx()
	src := pc.forModel()
	c := &s.clear
	if !c.valid(pc, src, o) {
		*c = clearCache{pc: pc, gen: pc.pair.gen, opts: o, save: []int64{0}, first: []int{0}}
	}
	// Take in the messages since the last call.
	for k := len(c.src); k < len(src); k++ {
		m := src[k]
		t := int32(0)
		if k > 0 {
			t = c.turn[k-1]
		}
		if m.Role == RoleUser {
			t++
			c.save = append(c.save, c.save[len(c.save)-1])
			c.first = append(c.first, k)
		}
		e := o.Estimator.EstimateTokens(m)
		c.turn, c.est = append(c.turn, t), append(c.est, e)
		c.st.TokensBefore += e
		if m.Role == RoleToolResult && e >= o.MinTokens && t > 0 {
			c.save[t] += e - o.Estimator.EstimateTokens(clearedResult(m, e))
		}
		c.out = append(c.out, m)
	}
	c.src = src
	// The turns to clear: all but the last KeepTurns, by steps; then, over
	// the budget, more steps, never the last turn.
	turns := len(c.save) - 1
	b := max(0, turns-o.KeepTurns) / o.Step * o.Step
	if o.MaxTokens > 0 {
		for c.st.TokensBefore-c.save[b] > o.MaxTokens && b+o.Step <= turns-1 {
			b += o.Step
		}
	}
	if b != c.st.ClearedTurns {
		if b < c.st.ClearedTurns {
			c.out = slices.Clone(src) // fewer turns cleared: start over
			c.st.Cleared, c.st.ClearedTurns = 0, 0
		} else {
			c.out = slices.Clone(c.out) // lists handed out keep theirs
		}
		// Only the turns newly cleared are looked at.
		for k := c.first[c.st.ClearedTurns+1]; k < len(c.out) && int(c.turn[k]) <= b; k++ {
			if m := c.out[k]; m == src[k] && m.Role == RoleToolResult && c.est[k] >= o.MinTokens {
				c.out[k] = clearedResult(m, c.est[k])
				c.st.Cleared++
			}
		}
		c.st.ClearedTurns = b
	}
	c.st.TokensAfter = c.st.TokensBefore - c.save[b]
	return c.out, c.st
}

// clearedResult is the placeholder of result m, which took about tokens.
func clearedResult(m *Message, tokens int64) *Message {
	return &Message{
		Role: RoleToolResult, ToolCallID: m.ToolCallID, ToolName: m.ToolName, IsError: m.IsError,
		Content: []Block{Text(clearedResultText(m.ToolName, tokens))}, Timestamp: m.Timestamp,
	}
}
