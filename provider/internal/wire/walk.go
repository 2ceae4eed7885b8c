package wire

import session "github.com/agentsession/session"

// Handlers receive the messages of a conversion from Walk, by kind.
type Handlers struct {
	// Unanswered is given each call of the latest assistant message that
	// the host followed with another message before its result came
	// (Session.Messages leaves the calls of the last reply pending): the
	// APIs reject a call without a result, so it sends an error result.
	Unanswered func(Call)
	// Between, when not nil, is called before each message that is not
	// a tool result, after Unanswered: the end of a turn's results.
	Between func()
	// System takes a system message at its place; nil leaves system
	// messages out of the walk altogether (they go in the request's
	// system prompt), so that they do not end a turn's results either.
	System func(m *session.Message)
	// User takes a user message; Assistant an assistant message that is
	// sent (see Incomplete), whose calls are registered with calls
	// (Calls.Call) by the converter.
	User, Assistant func(m *session.Message)
	// ToolResult takes a result that answers a call awaiting one, with
	// the id that call was sent with; other results are left out.
	ToolResult func(m *session.Message, id string)
	// Other takes the user content of a role the APIs have no place for
	// (summaries, bash runs, custom messages), rendered by UserContent
	// (session.UserContent when nil); a message it renders to nothing is
	// left out.
	Other       func(blocks []session.Block)
	UserContent func(*session.Message) ([]session.Block, bool)
}

// Walk takes msgs, as Session.Messages returns them, through the rules
// both APIs share, and gives each message to its handler: replies that
// ended in an error or were aborted are not sent, nor the results of
// their calls; a result goes only where its call awaits one; calls the
// host followed with another message are answered (Unanswered).
func Walk(msgs []*session.Message, calls *Calls, h Handlers) {
	userContent := h.UserContent
	if userContent == nil {
		userContent = session.UserContent
	}
	for _, m := range msgs {
		if m.Role == RoleSystem && h.System == nil {
			continue
		}
		if m.Role != session.RoleToolResult {
			calls.Open(h.Unanswered)
			if h.Between != nil {
				h.Between()
			}
		}
		switch {
		case m.Role == session.RoleUser:
			h.User(m)
		case m.Role == RoleSystem:
			h.System(m)
		case Incomplete(m):
			calls.Turn()
		case m.Role == session.RoleAssistant:
			h.Assistant(m)
		case m.Role == session.RoleToolResult:
			if id, ok := calls.Result(m.ToolCallID); ok {
				h.ToolResult(m, id)
			}
		default:
			if blocks, ok := userContent(m); ok {
				h.Other(blocks)
			}
		}
	}
}
