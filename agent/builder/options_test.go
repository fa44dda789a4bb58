package builder_test

import (
	"context"
	"errors"
	"iter"
	"strings"
	"testing"
	"time"

	"github.com/trellis-agents/trellis/agent/builder"
	"github.com/trellis-agents/trellis/agent/react"
	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/llm"
	"github.com/trellis-agents/trellis/llm/llmtest"
)

// A node's retry policy runs a visit that failed transiently again; the
// same agent without it fails. Descriptions are kept per node.
func TestNodeRetryAndDescription(t *testing.T) {
	build := func(retry bool) *builder.Agent {
		m := llmtest.New()
		m.Reply(llmtest.StatusError(503, "overloaded"), llmtest.Text("done"))
		b := builder.New("a").LLMNode("work", "You work.").Describe("work", "Does the work.").Entry("work").End("work")
		if retry {
			b.Retry("work", graph.RetryPolicy{MaxAttempts: 2, InitialInterval: time.Millisecond})
		}
		a, err := b.Build(m)
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	res, err := build(true).Run(t.Context(), builder.Input("go"))
	if err != nil || res.FinalMessage != "done" || !res.Success {
		t.Errorf("with a retry policy: %+v, %v", res, err)
	}
	if _, err := build(false).Run(t.Context(), builder.Input("go")); err == nil {
		t.Error("without a retry policy the 503 should fail the run")
	}
	if got := build(false).Nodes(); len(got) != 1 || got[0] != (builder.NodeInfo{Name: "work", Description: "Does the work."}) {
		t.Errorf("Nodes() = %+v", got)
	}
	_, err = builder.New("a").LLMNode("work", "x").Entry("work").Describe("nope", "x").NodeTimeout("work", 0).Build(llmtest.New())
	if err == nil || !strings.Contains(err.Error(), `names "nope", which is not an LLM node`) || !strings.Contains(err.Error(), "positive duration") {
		t.Errorf("bad declarations: %v", err)
	}
}

// blocking is a model that waits for its context to end.
type blocking struct{}

func (blocking) Name() string { return "blocking" }
func (blocking) Generate(ctx context.Context, _ *llm.Request) (*llm.Response, error) {
	<-ctx.Done()
	return nil, ctx.Err()
}
func (b blocking) Stream(ctx context.Context, r *llm.Request) iter.Seq2[llm.Chunk, error] {
	return func(yield func(llm.Chunk, error) bool) { _, err := b.Generate(ctx, r); yield(llm.Chunk{}, err) }
}

// A node's timeout cancels its visit (not the whole run's budget).
func TestNodeTimeoutCancelsTheVisit(t *testing.T) {
	a, err := builder.New("a").LLMNodeWith("slow", react.Config{System: "Slow.", Model: blocking{}}).Entry("slow").End("slow").
		NodeTimeout("slow", 20*time.Millisecond).Timeout(0).Build(nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = a.Run(t.Context(), builder.Input("go"))
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("run: %v; want the node's deadline", err)
	}
}

// The entry node is chosen at run time with StartAt; a wrong one is an
// error naming the nodes.
func TestStartAtChoosesTheEntry(t *testing.T) {
	m := llmtest.New()
	m.When(llmtest.Namespace("draft:"), llmtest.Text("drafted")).Repeat()
	m.When(llmtest.Namespace("review:"), llmtest.Text("reviewed")).Repeat()
	a, err := builder.New("a").LLMNode("draft", "Draft.").LLMNode("review", "Review.").
		Entry("draft").Edge("draft", "review").End("review").Build(m)
	if err != nil {
		t.Fatal(err)
	}
	res, err := a.Run(t.Context(), builder.StartAt("review", "check this"))
	if err != nil || strings.Join(res.Path, ",") != "review" {
		t.Errorf("StartAt(review): path %v, %v", res.Path, err)
	}
	res, err = a.Run(t.Context(), builder.Input("write"))
	if err != nil || strings.Join(res.Path, ",") != "draft,review" {
		t.Errorf("Input: path %v, %v", res.Path, err)
	}
	if _, err := a.Run(t.Context(), builder.StartAt("publish", "x")); err == nil || !strings.Contains(err.Error(), `start at "publish"`) || !strings.Contains(err.Error(), "draft, review") {
		t.Errorf("StartAt(publish): %v", err)
	}
}

// gated answers "first" after the test opens the gate, and echoes the
// last user message afterwards.
type gated struct {
	started chan struct{}
	gate    chan struct{}
}

func (g *gated) Name() string { return "gated" }
func (g *gated) Generate(ctx context.Context, req *llm.Request) (*llm.Response, error) {
	if graph.Namespace(ctx) != "" && strings.HasPrefix(graph.Namespace(ctx), "first:") {
		close(g.started)
		select {
		case <-g.gate:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		return &llm.Response{Message: llm.Assistant("first")}, nil
	}
	last := ""
	for _, m := range req.Messages {
		if m.Role == llm.RoleUser {
			last = m.Text()
		}
	}
	return &llm.Response{Message: llm.Assistant("saw: " + last)}, nil
}
func (g *gated) Stream(ctx context.Context, r *llm.Request) iter.Seq2[llm.Chunk, error] {
	return func(yield func(llm.Chunk, error) bool) {
		resp, err := g.Generate(ctx, r)
		if err != nil {
			yield(llm.Chunk{}, err)
			return
		}
		yield(llm.Chunk{Text: resp.Message.Text()}, nil)
	}
}

// A running execution has an ID and a start time, and a message added
// while it runs reaches the next node.
func TestRunIDStartAndAddMessage(t *testing.T) {
	m := &gated{started: make(chan struct{}), gate: make(chan struct{})}
	a, err := builder.New("a").LLMNode("first", "One.").LLMNode("second", "Two.").
		Entry("first").Edge("first", "second").End("second").Build(m)
	if err != nil {
		t.Fatal(err)
	}
	before := time.Now()
	run := a.Start(t.Context(), builder.Input("start"))
	<-m.started
	if run.ID() == "" || run.Started().Before(before) {
		t.Errorf("ID %q, started %v", run.ID(), run.Started())
	}
	if err := run.AddMessage("also mention the budget"); err != nil {
		t.Fatal(err)
	}
	close(m.gate)
	res, err := run.Wait()
	if err != nil {
		t.Fatal(err)
	}
	if res.FinalMessage != "saw: also mention the budget" {
		t.Errorf("the second node answered %q; want it to see the added message", res.FinalMessage)
	}
	if err := run.AddMessage("late"); !errors.Is(err, builder.ErrRunEnded) {
		t.Errorf("AddMessage after the end: %v", err)
	}
}

// Parallel runs branches at once after a node; Join waits for all of them,
// and the joined node sees every branch's answer.
func TestParallelBranchesAndJoin(t *testing.T) {
	m := llmtest.New()
	m.When(llmtest.Namespace("plan:"), llmtest.Text("plan ready")).Repeat()
	m.When(llmtest.Namespace("facts:"), llmtest.Text("facts found")).Repeat()
	m.When(llmtest.Namespace("style:"), llmtest.Text("style chosen")).Repeat()
	m.When(llmtest.Namespace("write:"), llmtest.Text("written")).Repeat()
	a, err := builder.New("a").
		LLMNode("plan", "Plan.").LLMNode("facts", "Facts.").LLMNode("style", "Style.").LLMNode("write", "Write.").
		Entry("plan").Parallel("plan", "facts", "style").Join("write", "facts", "style").End("write").
		Build(m)
	if err != nil {
		t.Fatal(err)
	}
	res, err := a.Run(t.Context(), builder.Input("go"))
	if err != nil || !res.Success || res.FinalMessage != "written" {
		t.Fatalf("run: %+v, %v", res, err)
	}
	if len(res.Path) != 4 || res.Path[0] != "plan" || res.Path[3] != "write" {
		t.Errorf("path %v; want plan, the two branches, then write once", res.Path)
	}
	var writeReq llmtest.Request
	n := 0
	for _, r := range m.Requests() {
		if strings.HasPrefix(r.Namespace, "write:") {
			writeReq = r
			n++
		}
	}
	if n != 1 {
		t.Fatalf("write was asked %d times, want once", n)
	}
	var seen []string
	for _, msg := range writeReq.Messages {
		if msg.Role == llm.RoleAssistant {
			seen = append(seen, msg.Text())
		}
	}
	if got := strings.Join(seen, ","); !strings.Contains(got, "facts found") || !strings.Contains(got, "style chosen") {
		t.Errorf("write saw %q; want both branches' answers", got)
	}
	for _, c := range []struct {
		b    *builder.Builder
		want string
	}{
		{builder.New("a").LLMNode("x", "x").LLMNode("y", "y").Entry("x").Parallel("x", "y"), "at least two"},
		{builder.New("a").LLMNode("x", "x").LLMNode("y", "y").LLMNode("z", "z").Entry("x").Parallel("x", "y", "z").Edge("x", "y"), "both Parallel branches and an unconditional edge"},
		{builder.New("a").LLMNode("x", "x").LLMNode("y", "y").LLMNode("z", "z").Entry("x").Parallel("x", "y", "nope"), `runs "nope"`},
		{builder.New("a").LLMNode("x", "x").LLMNode("y", "y").LLMNode("z", "z").Entry("x").Parallel("x", "y", "z").Join("x", "y", "z").Edge("y", "x"), "joined into"},
	} {
		if _, err := c.b.Build(m); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Build = %v, want %q", err, c.want)
		}
	}
}
