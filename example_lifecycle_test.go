package session_test

import (
	"context"
	"fmt"
	"strings"

	session "github.com/agentsession/session"
)

// A host that serves requests by session id opens the session or creates
// it, in one race-free call, with its metadata.
func ExampleOpenOrCreate() {
	ctx := context.Background()
	store := session.NewMemoryStore()
	opts := &session.CreateOptions{ID: "ticket-4711", Cwd: "/src/app", ProjectID: "app",
		AppVersion: "2.3.0", Metadata: map[string]string{"channel": "slack"}}
	for range 2 {
		s, created, err := session.OpenOrCreate(ctx, store, opts)
		if err != nil {
			panic(err)
		}
		fmt.Println("created:", created, "project:", s.Meta().ProjectID)
	}
	// Metadata changes later are appended, and listed without loading
	// entries.
	s, _, _ := session.OpenOrCreate(ctx, store, opts)
	s.UpdateMeta(ctx, session.MetaUpdate{Set: map[string]string{"channel": "web"}})
	p, _ := store.List(ctx, session.ListOptions{Metadata: map[string]string{"channel": "web"}})
	fmt.Println("listed:", p.Sessions[0].ID, p.Sessions[0].Metadata["channel"])
	// Output:
	// created: true project: app
	// created: false project: app
	// listed: ticket-4711 web
}

// State is recorded in the log: the state at any entry is known, so a
// rewind sees the state of the point it goes back to. "user:" keys are
// shared by the sessions of one user.
func ExampleSession_UpdateState() {
	ctx := context.Background()
	store := session.NewMemoryStore()
	s, _ := session.Create(ctx, store, &session.CreateOptions{User: "ada"})
	s.Append(ctx, session.UserText("Plan the migration"))
	session.SetState(ctx, s, "step", "plan")
	cp, _ := s.Checkpoint(ctx, "planned")
	session.SetState(ctx, s, "step", "migrate")
	s.UpdateState(ctx, map[string]any{"user:editor": "vim"})

	step, _, _ := session.GetState[string](ctx, s, "step")
	fmt.Println("now:", step)
	s.Rewind(ctx, cp.Name)
	step, _, _ = session.GetState[string](ctx, s, "step")
	fmt.Println("after the rewind:", step)

	other, _ := session.Create(ctx, store, &session.CreateOptions{User: "ada"})
	editor, _, _ := session.GetState[string](ctx, other, "user:editor")
	fmt.Println("another session of ada:", editor)
	// Output:
	// now: migrate
	// after the rewind: plan
	// another session of ada: vim
}

// A UI subscribes to a store's changes. A subscriber that does not keep
// up loses changes (counted by Dropped), never slows the agent down.
func ExampleSubscribe() {
	ctx := context.Background()
	store := session.NewMemoryStore()
	sub, err := session.Subscribe(ctx, store, session.SubscribeOptions{})
	if err != nil {
		panic(err)
	}
	defer sub.Close()

	s, _ := session.Create(ctx, store, &session.CreateOptions{ID: "s-1"})
	s.Append(ctx, session.UserText("hello"))
	s.SetTitle(ctx, "Greeting")
	store.Archive(ctx, "s-1")

	for range 5 {
		c := <-sub.C()
		switch c.Kind {
		case session.ChangeAppended:
			fmt.Println(c.Session, c.Kind, c.Entries[0].Type)
		case session.ChangeTitle:
			fmt.Println(c.Session, c.Kind, c.Title)
		default:
			fmt.Println(c.Session, c.Kind)
		}
	}
	fmt.Println("dropped:", sub.Dropped())
	// Output:
	// s-1 created
	// s-1 appended message
	// s-1 appended session_info
	// s-1 title Greeting
	// s-1 archived
	// dropped: 0
}

// One store serves many users: each sees its own sessions only, under
// its own ids.
func ExampleForUser() {
	ctx := context.Background()
	store := session.NewMemoryStore()
	alice, _ := session.ForUser(store, "alice")
	bob, _ := session.ForUser(store, "bob")
	session.Create(ctx, alice, &session.CreateOptions{ID: "chat"})
	session.Create(ctx, bob, &session.CreateOptions{ID: "chat"})
	session.Create(ctx, bob, &session.CreateOptions{ID: "notes"})

	p, _ := bob.List(ctx, session.ListOptions{})
	for _, in := range p.Sessions {
		fmt.Println("bob:", in.ID, in.User)
	}
	_, err := session.Open(ctx, alice, "notes")
	fmt.Println("alice opens bob's notes:", err)
	// Output:
	// bob: notes bob
	// bob: chat bob
	// alice opens bob's notes: session: not found: session notes
}

// A long session is shown a page at a time; messages are decoded only
// for the page.
func ExampleSession_MessagePage() {
	ctx := context.Background()
	s := session.New()
	for i := range 5 {
		s.Append(ctx, session.UserText(fmt.Sprintf("message %d", i)))
	}
	p, _ := s.MessagePage(session.PageOptions{Limit: 2})
	for p != nil {
		var texts []string
		for _, e := range p.Entries {
			m, _ := e.Message()
			texts = append(texts, m.Text())
		}
		fmt.Println(strings.Join(texts, "; "))
		if !p.Older {
			break
		}
		p, _ = s.MessagePage(session.PageOptions{Limit: 2, Before: p.Entries[0].ID()})
	}
	// Output:
	// message 3; message 4
	// message 1; message 2
	// message 0
}

// Deleting a session can take its subagents' sessions with it, and the
// blobs no other session refers to.
func ExampleDeleteSession() {
	ctx := context.Background()
	store := session.NewMemoryStore()
	session.Create(ctx, store, &session.CreateOptions{ID: "main"})
	session.Create(ctx, store, &session.CreateOptions{ID: "sub-1", ParentSession: "main"})
	res, err := session.DeleteSession(ctx, store, "main", &session.DeleteOptions{Children: true})
	if err != nil {
		panic(err)
	}
	fmt.Println("deleted:", res.Sessions)
	// Output:
	// deleted: [sub-1 main]
}
