package session_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	session "github.com/agentsession/session"
)

// Older tool results give way to a placeholder in what the model gets;
// the log keeps them all. A host clears first and compacts only when
// clearing is not enough (CompactionOptions.Clear).
func ExampleSession_ClearedMessages() {
	ctx := context.Background()
	s, _ := session.Create(ctx, session.NewMemoryStore(), nil)
	for i := 1; i <= 4; i++ {
		id := fmt.Sprintf("call_%d", i)
		s.SaveTurn(ctx, []*session.Message{
			session.UserText(fmt.Sprintf("Read part %d.", i)),
			session.Assistant(session.ToolCall(id, "read", json.RawMessage(`{}`))),
			session.ToolResult(id, "read", strings.Repeat("data ", 1000)),
			session.AssistantText("Done."),
		}, nil)
	}
	msgs, st, _ := s.ClearedMessages(ctx, &session.ClearOptions{KeepTurns: 1, Step: 1})
	fmt.Println(st.Cleared, "results cleared;", st.TokensBefore, "tokens down to", st.TokensAfter)
	fmt.Println(msgs[2].Text())
	fmt.Println(len(s.Context().Messages[2].Text()), "characters still in the log")

	needs := s.NeedsCompaction(&session.CompactionOptions{ContextWindow: 3000, ReserveTokens: 1000, Clear: &session.ClearOptions{KeepTurns: 1, Step: 1}})
	fmt.Println("compaction needed:", needs)
	// Output:
	// 3 results cleared; 5028 tokens down to 1371
	// [Tool result cleared to keep the context small: read returned about 1250 tokens here. Run it again if you need the result.]
	// 5000 characters still in the log
	// compaction needed: false
}
