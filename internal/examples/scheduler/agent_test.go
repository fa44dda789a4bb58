package scheduler

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trellis-agents/trellis/agent/planexec"
	"github.com/trellis-agents/trellis/checkpoint"
	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/internal/examples"
	"github.com/trellis-agents/trellis/internal/examples/console"
	"github.com/trellis-agents/trellis/llm/llmtest"
	"github.com/trellis-agents/trellis/tool"
)

// TestScriptedScenario runs the demo's scenario with the answers given in
// code: the form, the plan review and three approvals, one rejected.
func TestScriptedScenario(t *testing.T) {
	ctx := context.Background()
	st := openStore(t)
	model := Script().(*llmtest.Model)
	g, err := New(model, st)
	if err != nil {
		t.Fatal(err)
	}
	opts := []graph.RunOption{graph.WithCheckpointer(checkpoint.NewMemory()), graph.WithThread("week")}
	res, err := g.Invoke(ctx, planexec.Input(Request), opts...)
	if len(res.Interrupts) != 1 {
		t.Fatalf("first stop: %v, %+v", err, res.Interrupts)
	}
	ask, ok := planexec.AskFrom(res.Interrupts[0])
	if !ok || ask.Mode != planexec.AskForm || len(ask.Fields) != 3 {
		t.Fatalf("want the form question, got %+v", res.Interrupts[0])
	}
	// An out-of-range number is sent back with the problem.
	res, _ = g.Invoke(ctx, nil, append(opts, graph.WithResume(planexec.FormAnswer(map[string]any{"max_slots": 12, "first": "math"})))...)
	again, ok := planexec.AskFrom(res.Interrupts[0])
	if !ok || len(again.Problems) == 0 {
		t.Fatalf("an invalid form answer was not asked again: %+v", res.Interrupts)
	}
	res, _ = g.Invoke(ctx, nil, append(opts, graph.WithResume(planexec.FormAnswer(map[string]any{"max_slots": 6, "first": "math", "friday_free": true})))...)
	review, ok := planexec.ReviewFrom(res.Interrupts[0])
	if !ok || len(review.Plan.Steps) != 5 {
		t.Fatalf("want the plan review, got %+v", res.Interrupts)
	}
	res, _ = g.Invoke(ctx, nil, append(opts, graph.WithResume(planexec.ApprovePlan()))...)
	// s3 and s4 run in parallel and ask for three approvals at once.
	answers := map[string]any{}
	var summaries []string
	for _, in := range res.Interrupts {
		req, ok := tool.ApprovalFrom(in)
		if !ok {
			t.Fatalf("want tool approvals, got %s", in.Payload)
		}
		summaries = append(summaries, req.Summary)
		answers[in.ID] = tool.Approve()
		if strings.Contains(req.Summary, "#23") {
			answers[in.ID] = tool.Reject("keep the study hall for reading")
		}
	}
	if len(summaries) != 3 {
		t.Fatalf("approvals waiting = %q; want three", summaries)
	}
	res, err = g.Invoke(ctx, nil, append(opts, graph.WithResumeMap(answers))...)
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != graph.StatusCompleted {
		t.Fatalf("status %v", res.Status)
	}
	answer, _ := planexec.Answer(res.State)
	if !strings.Contains(answer, "Your week is planned") {
		t.Errorf("delivery = %q", answer)
	}
	sch, err := st.Load(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if it := sch.Items[20]; it.Day != 2 || it.Start != 1 {
		t.Errorf("#20 at %d/%d, want Tuesday slot 1", it.Day, it.Start)
	}
	if it := sch.Items[21]; it.Day != 4 || it.Start != 3 {
		t.Errorf("#21 at %d/%d, want Thursday slot 3", it.Day, it.Start)
	}
	if sch.Items[23].Placed() {
		t.Error("#23 was placed although its call was rejected")
	}
	log, _ := st.ChangeLog(ctx)
	if len(log) != 2 {
		t.Errorf("%d changes logged, want 2 (one per approved place)", len(log))
	}
	for _, id := range []string{"s1", "s2", "s3", "s4", "s5"} {
		if s := planexec.Steps.Get(res.State)[id]; s.Status != planexec.StepDone {
			t.Errorf("step %s: %s", id, s.Status)
		}
	}
}

// TestDemoWithAnswersFile drives the scenario as the CLI does: console
// session, answers replayed from the file CI uses, a quit half-way and a
// resume in a new session.
func TestDemoWithAnswersFile(t *testing.T) {
	ctx := context.Background()
	lines, err := console.LoadAnswers(filepath.Join("testdata", "demo-answers.txt"))
	if err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(t.TempDir(), "trellis.db")
	saver := checkpoint.NewMemory()
	run := func(answers []string) (string, error) {
		// Each session is a new process: a new scripted model.
		inst, err := Example().Open(ctx, examples.Env{Model: Script(), DBPath: db, DataDir: t.TempDir(), Thread: "demo"})
		if err != nil {
			t.Fatal(err)
		}
		defer inst.Close()
		var out strings.Builder
		s := &console.Session{Graph: inst.Graph, Out: &out, Events: inst.Events, Print: inst.Print,
			Options: []graph.RunOption{graph.WithCheckpointer(saver), graph.WithThread("demo")},
			Prompt:  &console.Prompter{Out: &out, Answers: answers, Handlers: append(inst.Handlers, console.ToolApproval)}}
		final, err := s.Run(ctx, inst.Input)
		if err == nil {
			out.WriteString(inst.Outcome(final))
		}
		return out.String(), err
	}
	// Quit after the plan review: the thread waits at the approvals.
	cut := 4
	out, err := run(append(append([]string{}, lines[:cut]...), "q"))
	if err != console.ErrQuit {
		t.Fatalf("err = %v\n%s", err, out)
	}
	for _, want := range []string{"Question: A few details", "Most study slots per day (number, required, 1 to 8) > 6", "Plan ready:", "s4. Place the assignment and the essay outline (after s1, s2)", "Approval needed"} {
		if !strings.Contains(out, want) {
			t.Errorf("first session lacks %q:\n%s", want, out)
		}
	}
	out, err = run(lines[cut:])
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	for _, want := range []string{"Resuming the saved thread", "Delivered:", "#20 Review for the algebra quiz: Tuesday slots 1-2", "#23 Essay outline: Wednesday slot 5"} {
		if !strings.Contains(out, want) {
			t.Errorf("second session lacks %q:\n%s", want, out)
		}
	}
}
