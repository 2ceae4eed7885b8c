package session

// Token estimates: what a context costs a model, from usage where a
// reply reported it and a character count elsewhere.

// TokenEstimator estimates how many tokens a message takes in a model's
// context. Plug in the model's own tokenizer for exact counts.
type TokenEstimator interface {
	EstimateTokens(m *Message) int64
}

// TokenEstimatorFunc adapts a function to TokenEstimator.
type TokenEstimatorFunc func(m *Message) int64

// EstimateTokens implements TokenEstimator.
func (f TokenEstimatorFunc) EstimateTokens(m *Message) int64 { return f(m) }

// DefaultTokenEstimator counts a token for every four bytes of what the
// model reads of a message (text, thinking, tool names and arguments,
// tool output, summaries, a bash command and its output), rounded up,
// and 1,200 tokens for an image. Tokenizers give about four characters of
// English or code per token; counting bytes, not characters, errs on the
// side of more tokens, which is the safe side for deciding to compact.
var DefaultTokenEstimator TokenEstimator = defaultEstimator{}

// defaultEstimator is DefaultTokenEstimator's type: a comparable type
// of its own, so that a session can tell it is asked for the estimates
// it keeps (pathCtx.tok) rather than call it once per message.
type defaultEstimator struct{}

func (defaultEstimator) EstimateTokens(m *Message) int64 { return estimateTokens(m) }

// isDefault reports whether est is DefaultTokenEstimator (nil counts).
func isDefault(est TokenEstimator) bool {
	if est == nil {
		return true
	}
	_, ok := est.(defaultEstimator)
	return ok
}

// imageTokens is what DefaultTokenEstimator counts for an image.
const imageTokens = 1200

func estimateTokens(m *Message) int64 {
	n, _ := messageFacts(m)
	return n
}

// messageFacts is estimateTokens of m, and whether m holds an unresolved
// image (see withoutUnresolved), in one walk over its blocks.
func messageFacts(m *Message) (tokens int64, unresolved bool) {
	n := int64(len(m.Summary) + len(m.Command) + len(m.Output))
	images := int64(0)
	for i := range m.Content {
		b := &m.Content[i]
		switch b.Type {
		case BlockImage:
			images++
			unresolved = unresolved || b.Unresolved()
		default:
			n += int64(len(b.Text) + len(b.Thinking) + len(b.Name) + len(b.Arguments))
		}
	}
	return (n+3)/4 + images*imageTokens, unresolved
}

// usageTokens is the context size a model reported with an assistant
// message, 0 if it reported none (or the turn was cut short).
func usageTokens(m *Message) int64 {
	if m.Role != RoleAssistant || m.Usage == nil || m.StopReason == StopAborted || m.StopReason == StopError {
		return 0
	}
	u := m.Usage
	if u.TotalTokens > 0 {
		return u.TotalTokens
	}
	return u.Input + u.Output + u.CacheRead + u.CacheWrite
}

// ContextTokens estimates how many tokens msgs take in a model's context:
// the usage the model reported with the last assistant message that has
// one, plus an estimate (est; nil for DefaultTokenEstimator) of the
// messages after it. Without reported usage, every message is estimated.
//
// Usage reported before a compaction measured the context before it, so
// after a compaction summary only assistant messages timed after the
// summary count for their usage; the history kept from before it is
// estimated (and so are messages without timestamps). Session's
// ContextTokens knows which messages came after the compaction without
// looking at times.
func ContextTokens(msgs []*Message, est TokenEstimator) int64 {
	trust := 0
	for k := len(msgs) - 1; k >= 0; k-- {
		if msgs[k].Role != RoleCompactionSummary {
			continue
		}
		trust = k + 1
		since := msgs[k].Timestamp
		for j := k + 1; j < len(msgs); j++ {
			if m := msgs[j]; m.Role == RoleAssistant && (since <= 0 || m.Timestamp <= since) {
				trust = j + 1 // from before the compaction, or cannot tell
			}
		}
		break
	}
	return contextTokens(msgs, trust, est)
}

// contextTokens is ContextTokens trusting the usage of msgs[trust:] only.
func contextTokens(msgs []*Message, trust int, est TokenEstimator) int64 {
	if est == nil {
		est = DefaultTokenEstimator
	}
	var total int64
	for k := len(msgs) - 1; k >= 0; k-- {
		if k >= trust {
			if u := usageTokens(msgs[k]); u > 0 {
				return total + u
			}
		}
		total += est.EstimateTokens(msgs[k])
	}
	return total
}

// ContextTokens estimates the tokens of the context at the leaf (see the
// ContextTokens function); est nil means DefaultTokenEstimator.
func (s *Session) ContextTokens(est TokenEstimator) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	pc := s.leafCtx()
	return contextTokens(pc.msgs, pc.fresh, est)
}
