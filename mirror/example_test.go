package mirror_test

import (
	"context"
	"fmt"

	session "github.com/agentsession/session"
	"github.com/agentsession/session/mirror"
)

// Two machines continue one session while apart; mirroring keeps both
// sides' turns: the second machine's become a branch of the remote copy.
func ExampleSync() {
	ctx := context.Background()
	remote := session.NewMemoryStore()                                   // s3store or pgstore, in production
	laptop, server := session.NewMemoryStore(), session.NewMemoryStore() // FileStores, each on its machine

	s, _ := session.Create(ctx, laptop, &session.CreateOptions{ID: "s1", Cwd: "/w"})
	s.SaveTurn(ctx, []*session.Message{session.UserText("start"), session.AssistantText("ok")}, nil)
	mirror.Sync(ctx, laptop, remote, "s1")
	mirror.Sync(ctx, server, remote, "s1") // picked up on the server

	s.SaveTurn(ctx, []*session.Message{session.UserText("on the laptop"), session.AssistantText("ok")}, nil)
	t, _ := session.Open(ctx, server, "s1")
	t.SaveTurn(ctx, []*session.Message{session.UserText("on the server"), session.AssistantText("ok")}, nil)

	res, _ := mirror.Sync(ctx, laptop, remote, "s1")
	fmt.Println("laptop pushed", res.Pushed)
	res, _ = mirror.Sync(ctx, server, remote, "s1")
	fmt.Println("server branched", res.Branched)

	merged, _ := session.Open(ctx, remote, "s1")
	msgs := merged.Context().Messages
	fmt.Println("remote continues:", msgs[len(msgs)-2].Text())
	// Output:
	// laptop pushed 2
	// server branched 2
	// remote continues: on the laptop
}
