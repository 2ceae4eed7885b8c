package eino_test

import (
	"context"
	"fmt"
	"os"

	"github.com/cloudwego/eino/compose"

	session "github.com/agentsession/session"
	"github.com/agentsession/session/integrations/eino"
)

// planGraph is a graph of two steps: "draft" writes a plan, "apply"
// carries it out, once a person has approved it (an interrupt before
// "apply").
func planGraph(ctx context.Context, cps compose.CheckPointStore) (compose.Runnable[string, string], error) {
	g := compose.NewGraph[string, string]()
	g.AddLambdaNode("draft", compose.InvokableLambda(func(ctx context.Context, task string) (string, error) {
		return "plan for " + task, nil
	}))
	g.AddLambdaNode("apply", compose.InvokableLambda(func(ctx context.Context, plan string) (string, error) {
		return "applied " + plan, nil
	}))
	g.AddEdge(compose.START, "draft")
	g.AddEdge("draft", "apply")
	g.AddEdge("apply", compose.END)
	return g.Compile(ctx, compose.WithCheckPointStore(cps), compose.WithInterruptBeforeNodes([]string{"apply"}))
}

// A graph interrupted in one process resumes in another: the checkpoint
// is in a FileStore's session, which outlives the Store that wrote it.
func Example() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "eino-example-")
	defer os.RemoveAll(dir)

	// The first process runs the graph until it stops for approval.
	files, _ := session.OpenFileStore(dir, nil)
	cps, _ := eino.New(files, nil)
	run, _ := planGraph(ctx, cps)
	_, err := run.Invoke(ctx, "the migration", compose.WithCheckPointID("order-7"))
	if info, ok := compose.ExtractInterruptInfo(err); ok {
		fmt.Println("interrupted before", info.BeforeNodes)
	}
	cps.Close()
	files.Close()

	// Another process, later, resumes it from the checkpoint.
	files, _ = session.OpenFileStore(dir, nil)
	defer files.Close()
	cps, _ = eino.New(files, nil)
	defer cps.Close()
	run, _ = planGraph(ctx, cps)
	out, err := run.Invoke(ctx, "", compose.WithCheckPointID("order-7"))
	fmt.Println(out, err)

	// Each checkpoint Eino saved is on the session's path.
	revs, _ := cps.History(ctx, "order-7")
	fmt.Println("checkpoints saved:", len(revs))
	// Output:
	// interrupted before [apply]
	// applied plan for the migration <nil>
	// checkpoints saved: 1
}
