package search_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"

	session "github.com/agentsession/session"
	"github.com/agentsession/session/search"
)

// Index a store's sessions, then search them: user prompts come first.
func Example() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "search-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	store, err := session.OpenFileStore(filepath.Join(dir, "sessions"), nil)
	if err != nil {
		log.Fatal(err)
	}
	defer store.Close()
	s, err := session.Create(ctx, store, &session.CreateOptions{Cwd: "/home/dev/app"})
	if err != nil {
		log.Fatal(err)
	}
	if err := s.SetTitle(ctx, "Flaky tests"); err != nil {
		log.Fatal(err)
	}
	err = s.SaveTurn(ctx, []*session.Message{
		session.UserText("Why is the parser test flaky?"),
		session.AssistantText("The parser test iterates over a map, whose order varies."),
	}, nil)
	if err != nil {
		log.Fatal(err)
	}

	// The index is a cache kept apart from the store (DefaultPath gives
	// the usual place for a FileStore's).
	idx, err := search.Open(filepath.Join(dir, "index.sqlite"), nil)
	if err != nil {
		log.Fatal(err)
	}
	defer idx.Close()
	st, err := idx.Update(ctx, store)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("indexed %d session(s), %d entries\n", st.Indexed, st.Entries)

	hits, err := idx.Search(ctx, `"parser test"`, nil)
	if err != nil {
		log.Fatal(err)
	}
	for _, h := range hits {
		fmt.Printf("%s %-9s prompt=%v %s\n", h.Title, h.Role, h.Prompt, h.Snippet)
	}

	// Nothing changed: the next update reads no session.
	st, err = idx.Update(ctx, store)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("unchanged %d, read %d entries\n", st.Unchanged, st.Entries)
	// Output:
	// indexed 1 session(s), 3 entries
	// Flaky tests user      prompt=true Why is the «parser test» flaky?
	// Flaky tests assistant prompt=false The «parser test» iterates over a map, whose order varies.
	// unchanged 1, read 0 entries
}

// A word of Chinese, Japanese or Korean text is found inside the longer
// run it is written in, without a *.
func ExampleIndex_Search_cjk() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "search-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	store := session.NewMemoryStore()
	s, err := session.Create(ctx, store, nil)
	if err != nil {
		log.Fatal(err)
	}
	err = s.SaveTurn(ctx, []*session.Message{
		session.UserText("请保存会话状态"),
		session.AssistantText("セッションの状態を保存しました"),
	}, nil)
	if err != nil {
		log.Fatal(err)
	}
	idx, err := search.Open(filepath.Join(dir, "index.sqlite"), nil)
	if err != nil {
		log.Fatal(err)
	}
	defer idx.Close()
	if _, err := idx.Update(ctx, store); err != nil {
		log.Fatal(err)
	}
	for _, q := range []string{"会话", "状態", "保存"} {
		hits, err := idx.Search(ctx, q, nil)
		if err != nil {
			log.Fatal(err)
		}
		for _, h := range hits {
			fmt.Println(q, h.Snippet)
		}
	}
	// Output:
	// 会话 请保存«会话»状态
	// 状態 セッションの«状態»を保存しました
	// 保存 请«保存»会话状态
	// 保存 セッションの状態を«保存»しました
}
