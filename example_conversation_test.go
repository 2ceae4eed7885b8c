package session_test

import (
	"context"
	"errors"
	"fmt"
	"os"

	session "github.com/agentsession/session"
)

// An agent loop that holds only a Conversation: the history before the
// model call, the turn saved after it, and Flush at the end of the turn,
// which makes it durable under a FileStore's default SyncOnFlush.
func ExampleConversation() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "conversation")
	defer os.RemoveAll(dir)
	store, _ := session.OpenFileStore(dir, nil)
	s, _ := session.Create(ctx, store, nil)
	defer s.Close()

	turn := func(c session.Conversation, input string) error {
		history, err := c.Messages(ctx)
		if err != nil {
			return err
		}
		reply := session.AssistantText(fmt.Sprintf("reply %d", len(history)/2+1)) // the model's answer
		if err := c.SaveTurn(ctx, []*session.Message{session.UserText(input), reply}, nil); err != nil {
			return err
		}
		return c.Flush(ctx) // the turn survives a crash from here on
	}
	fmt.Println(turn(s, "hello"), turn(s, "again"))

	// A nil *Session in a Conversation says so, rather than panic.
	var none *session.Session
	err := turn(none, "lost")
	fmt.Println(errors.Is(err, session.ErrNilSession))
	// Output:
	// <nil> <nil>
	// true
}
