package builder_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/trellis-agents/trellis/agent/builder"
	"github.com/trellis-agents/trellis/agent/react"
	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/llm"
	"github.com/trellis-agents/trellis/llm/llmtest"
	"github.com/trellis-agents/trellis/tool"
)

// writerReviewer builds chat → review, looping back to chat while the
// reviewer asks for changes, ending after review otherwise.
func writerReviewer(t *testing.T, m llm.Model, max int) *builder.Agent {
	t.Helper()
	return mustBuild(t, builder.New("writer").
		MaxIterations(max).
		LLMNode("chat", "Write.").
		LLMNode("review", "Review.").
		Edge("chat", "review").
		When("review", "changes are needed", "chat").
		End("review").
		Entry("chat"), m)
}

// When the iterations run out the run completes with the last answer,
// LimitReached and no success; the step limit is never hit.
func TestMaxIterationsEndsGracefully(t *testing.T) {
	m := llmtest.New()
	m.When(inNode("chat"), llmtest.Text("Draft.")).Repeat()
	m.When(inNode("review"), llmtest.Text("Needs work.")).Repeat()
	m.When(asked("changes are needed"), verdict(true)).Repeat()
	a := writerReviewer(t, m, 3)

	res, err := a.Run(context.Background(), builder.Input("Write a haiku."))
	if err != nil {
		t.Fatalf("the run failed: %v", err)
	}
	if d := cmp.Diff([]string{"chat", "review", "chat"}, res.Path); d != "" {
		t.Errorf("path (-want +got):\n%s", d)
	}
	if res.Status != graph.StatusCompleted || !res.LimitReached || res.Success || res.Iterations != 3 {
		t.Errorf("status %v, limit %v, success %v, iterations %d", res.Status, res.LimitReached, res.Success, res.Iterations)
	}
	if res.FinalMessage != "Draft." {
		t.Errorf("final message %q; want the last node's answer", res.FinalMessage)
	}
	// chat's only edge leads on, so the judge is not asked at the limit.
	if len(res.Judgements) != 1 {
		t.Errorf("%d judgements; want 1 (after the only review)", len(res.Judgements))
	}
	if res.Graph.Steps != 6 {
		t.Errorf("%d graph steps; want 6 (a visit and a route per iteration)", res.Graph.Steps)
	}
}

// At the limit, a node that can end the run is still judged: if it would
// have ended anyway, the run succeeds; if it wanted to go on, the limit
// is reported.
func TestMaxIterationsOnAnEndPoint(t *testing.T) {
	for _, more := range []bool{false, true} {
		m := llmtest.New()
		m.When(inNode("chat"), llmtest.Text("Draft."))
		m.When(inNode("review"), llmtest.Text("Verdict."))
		m.When(asked("changes are needed"), verdict(more))
		res, err := writerReviewer(t, m, 2).Run(context.Background(), builder.Input("Write."))
		if err != nil {
			t.Fatal(err)
		}
		if res.LimitReached != more || res.Success == more || res.Iterations != 2 || len(res.Judgements) != 1 {
			t.Errorf("changes needed %v: limit %v, success %v, iterations %d, judgements %d",
				more, res.LimitReached, res.Success, res.Iterations, len(res.Judgements))
		}
	}
}

// Tool rounds inside a visit have the node's own budget: react asks for a
// final answer when it runs low, and the visit counts once.
func TestNodeStepBudget(t *testing.T) {
	var r ran
	m := llmtest.New()
	m.When(llmtest.HasTool("lookup"), llmtest.ToolCalls(llmtest.Call("lookup", `{"order":"A1"}`))).Repeat()
	a := mustBuild(t, builder.New("orders").
		LLMNodeWith("chat", react.Config{System: "Help.", Tools: []tool.Tool{lookup(&r)}, MaxSteps: 4}).
		Entry("chat"), m)
	res, err := a.Run(context.Background(), builder.Input("Where is A1?"))
	if err != nil {
		t.Fatal(err)
	}
	if !res.Success || res.Iterations != 1 || !strings.Contains(res.FinalMessage, "step budget ran out") {
		t.Errorf("success %v, iterations %d, final %q", res.Success, res.Iterations, res.FinalMessage)
	}
	if n := r.get("lookup:A1"); n != 1 {
		t.Errorf("lookup ran %d times; want 1 (one tool round fits in 4 steps)", n)
	}
}

func TestTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := llmtest.New().Reply(llmtest.Text("Too late.").After(2 * time.Second))
		a := mustBuild(t, builder.New("slow").Timeout(time.Second).LLMNode("chat", "Chat.").Entry("chat"), m)
		start := time.Now()
		res, err := a.Run(context.Background(), builder.Input("Hi"))
		if !errors.Is(err, context.DeadlineExceeded) || res.Err != err {
			t.Fatalf("err = %v; want a deadline error", err)
		}
		if res.Status != graph.StatusCancelled || res.Success || res.Iterations != 0 || res.FinalMessage != "" {
			t.Errorf("status %v, success %v, iterations %d, final %q", res.Status, res.Success, res.Iterations, res.FinalMessage)
		}
		if d := time.Since(start); d != time.Second {
			t.Errorf("the run took %v; want the timeout, 1s", d)
		}
	})
}

// Pause, Resume and Abort from another goroutine, with Status, Iterations
// and ToolCalls read while the run goes.
func TestPauseResumeAbort(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var r ran
		m := llmtest.New()
		m.When(inNode("chat"),
			llmtest.ToolCalls(llmtest.Call("lookup", `{"order":"A1"}`)),
			llmtest.Text("A1 shipped.").After(10*time.Second),
			llmtest.Text("A1 shipped on Monday.").After(10*time.Second))
		m.When(inNode("review"), llmtest.Text("Add the day.").After(10*time.Second))
		m.When(asked("changes are needed"), verdict(true))
		a := mustBuild(t, builder.New("writer").
			LLMNode("chat", "Write.", lookup(&r)).
			LLMNode("review", "Review.").
			Edge("chat", "review").
			When("review", "changes are needed", "chat").
			End("review").
			Entry("chat"), m)

		run := a.Start(context.Background(), builder.Input("Where is A1?"))
		synctest.Wait() // chat is waiting for its second reply
		if s, n := run.Status(), run.Iterations(); s != graph.StatusRunning || n != 0 {
			t.Errorf("during the first visit: status %v, iterations %d", s, n)
		}
		if calls := run.ToolCalls(); len(calls) != 0 {
			t.Errorf("tool calls before the first visit ended: %v", calls)
		}
		run.Pause()
		time.Sleep(10 * time.Second) // chat answers; the run stops after that step
		synctest.Wait()
		if s, n := run.Status(), run.Iterations(); s != graph.StatusPaused || n != 1 {
			t.Errorf("paused: status %v, iterations %d", s, n)
		}
		select {
		case <-run.Done():
			t.Fatal("the paused run ended")
		default:
		}
		run.Resume()
		synctest.Wait() // chat's route ran; review is waiting for its reply
		if s, n := run.Status(), run.Iterations(); s != graph.StatusRunning || n != 1 {
			t.Errorf("resumed: status %v, iterations %d", s, n)
		}
		if calls := run.ToolCalls(); len(calls) != 1 || calls[0].Tool != "lookup" || calls[0].Result != "order A1 shipped" {
			t.Errorf("tool calls after the first visit: %+v", calls)
		}
		time.Sleep(10 * time.Second) // review answers, the judge sends it back to chat
		synctest.Wait()
		if n := run.Iterations(); n != 2 {
			t.Errorf("during the third visit: iterations %d", n)
		}
		run.Abort()
		res, err := run.Wait()
		if !errors.Is(err, graph.ErrAborted) || run.Status() != graph.StatusCancelled || res.Success {
			t.Errorf("aborted: err %v, status %v, success %v", err, run.Status(), res.Success)
		}
		if d := cmp.Diff([]string{"chat", "review"}, res.Path); d != "" || res.Iterations != 2 || run.Iterations() != 2 {
			t.Errorf("path %v, iterations %d / %d", res.Path, res.Iterations, run.Iterations())
		}
		if res.FinalMessage != "Add the day." {
			t.Errorf("final message %q", res.FinalMessage)
		}
	})
}

// A write tool stops the run for approval; the run resumes on the same
// thread and goes on through the next node.
func TestResumeAfterApproval(t *testing.T) {
	var r ran
	m := llmtest.New()
	m.When(inNode("chat"),
		llmtest.ToolCalls(llmtest.Call("refund", `{"order":"A1"}`)),
		llmtest.Text("A1 is refunded."))
	m.When(inNode("review"), llmtest.Text("Confirmed."))
	a := mustBuild(t, builder.New("refunds").
		LLMNode("chat", "Handle refunds.", refund(&r)).
		LLMNode("review", "Confirm.").
		Edge("chat", "review").
		Entry("chat"), m)
	opts := threadOpts("ticket-7")
	ctx := context.Background()

	res, err := a.Run(ctx, builder.Input("Refund A1"), opts...)
	if !errors.Is(err, graph.ErrInterrupted) || res.Status != graph.StatusInterrupted || res.Success {
		t.Fatalf("err %v, status %v, success %v", err, res.Status, res.Success)
	}
	if len(res.Graph.Interrupts) != 1 {
		t.Fatalf("%d interrupts", len(res.Graph.Interrupts))
	}
	req, ok := tool.ApprovalFrom(res.Graph.Interrupts[0])
	if !ok || req.Tool != "refund" || r.get("refund:A1") != 0 {
		t.Fatalf("approval request %+v (%v); refunds so far %d", req, ok, r.get("refund:A1"))
	}
	if res.FinalMessage != "" || res.Iterations != 0 {
		t.Errorf("interrupted: final %q, iterations %d", res.FinalMessage, res.Iterations)
	}

	res, err = a.Run(ctx, nil, append(opts, graph.WithResume(tool.Approve()))...)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Success || res.FinalMessage != "Confirmed." || r.get("refund:A1") != 1 {
		t.Errorf("success %v, final %q, refunds %d", res.Success, res.FinalMessage, r.get("refund:A1"))
	}
	if d := cmp.Diff([]string{"chat", "review"}, res.Path); d != "" {
		t.Errorf("path of the resumed run (-want +got):\n%s", d)
	}
	recs := builder.ToolCalls(res.FinalState)
	if len(recs) != 1 || recs[0].Approval != tool.OutcomeApproved || recs[0].Result != "refunded A1" {
		t.Errorf("records: %+v", recs)
	}
	if n := len(m.Requests()); n != 3 {
		t.Errorf("%d model requests; want 3 (the call, the answer after it, the review)", n)
	}
}

// A judge that fails fails only its route step: resuming the thread asks
// the judge again without asking the node's model again.
func TestJudgeFailureResumesAtTheRoute(t *testing.T) {
	m := llmtest.New()
	m.When(inNode("chat"), llmtest.Text("Draft."))
	m.When(inNode("review"), llmtest.Text("Fine."))
	m.When(asked("changes are needed"), llmtest.StatusError(500, "judge down"), verdict(false))
	a := writerReviewer(t, m, 10)
	opts := threadOpts("t")
	res, err := a.Run(context.Background(), builder.Input("Write."), opts...)
	var ne *graph.NodeError
	if !errors.As(err, &ne) || ne.Node != builder.RouteNode("review") || res.Status != graph.StatusFailed {
		t.Fatalf("err %v, status %v", err, res.Status)
	}
	res, err = a.Run(context.Background(), nil, opts...)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Success || res.FinalMessage != "Fine." || len(res.Path) != 0 {
		t.Errorf("success %v, final %q, path %v", res.Success, res.FinalMessage, res.Path)
	}
	if n := countMatching(m.Requests(), inNode("review")); n != 1 {
		t.Errorf("review's model was asked %d times; want 1", n)
	}
}

// Run options given to a run reach the graph: here a thread, whose second
// turn sees the first and starts with a fresh iteration budget.
func TestThreadTurns(t *testing.T) {
	m := llmtest.New()
	m.When(inNode("chat"), llmtest.Text("Hi Ann.")).Repeat()
	a := mustBuild(t, builder.New("chat").MaxIterations(1).LLMNode("chat", "Chat.").Entry("chat"), m)
	opts := threadOpts("ann")
	for turn := 1; turn <= 2; turn++ {
		res, err := a.Run(context.Background(), builder.Input("Hello"), opts...)
		if err != nil || !res.Success || res.Iterations != 1 {
			t.Fatalf("turn %d: err %v, success %v, iterations %d", turn, err, res.Success, res.Iterations)
		}
	}
	if n := len(m.LastRequest().Messages); n != 4 {
		t.Errorf("the second turn sent %d messages; want 4 (system and three of the thread)", n)
	}
}
