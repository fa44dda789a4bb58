package scheduler

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trellis-agents/trellis/agent/planexec"
	"github.com/trellis-agents/trellis/apps"
	"github.com/trellis-agents/trellis/checkpoint"
	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/tool"
)

// TestScriptedScenario runs the demo's scenario with the answers given in
// code: the form, the plan review and three approvals, one rejected.
func TestScriptedScenario(t *testing.T) {
	ctx := context.Background()
	st := openStore(t)
	model := Script()
	g, err := NewGraph(model, st, testScope, nil, "")
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
	if !strings.Contains(answer, "Your week:") || !strings.Contains(answer, "Not placed #23: the student turned it down (keep the study hall for reading)") || !strings.Contains(answer, "Friday stays free") {
		t.Errorf("delivery = %q", answer)
	}
	sch, err := st.Load(ctx, testScope)
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
	log, _ := st.ChangeLog(ctx, testScope)
	if len(log) != 2 {
		t.Errorf("%d changes logged, want 2 (one per approved place)", len(log))
	}
	for _, id := range []string{"s1", "s2", "s3", "s4", "s5"} {
		if s := planexec.Steps.Get(res.State)[id]; s.Status != planexec.StepDone {
			t.Errorf("step %s: %s", id, s.Status)
		}
	}
}

// TestThreadsKeepTheirOwnCalendars runs the app on two threads of one
// database: each thread's scope sees its own week, and what one thread
// places never shows in the other's.
func TestThreadsKeepTheirOwnCalendars(t *testing.T) {
	ctx := context.Background()
	db := filepath.Join(t.TempDir(), "app.db")
	app, err := New(ctx, Config{Model: Script(), Database: db})
	if err != nil {
		t.Fatal(err)
	}
	defer app.Close()
	saver := checkpoint.NewMemory()
	finish := func(thread string, reject bool) {
		t.Helper()
		tctx := apps.WithScope(ctx, thread)
		opts := []graph.RunOption{graph.WithCheckpointer(saver), graph.WithThread(thread)}
		res, err := app.Graph.Invoke(tctx, app.Input(""), opts...)
		for i := 0; len(res.Interrupts) > 0 && i < 10; i++ {
			answers := map[string]any{}
			for _, in := range res.Interrupts {
				switch {
				case isAsk(in):
					answers[in.ID] = planexec.FormAnswer(map[string]any{"max_slots": 6, "first": "math"})
				case isReview(in):
					answers[in.ID] = planexec.ApprovePlan()
				default:
					answers[in.ID] = tool.Approve()
					if reject {
						answers[in.ID] = tool.Reject("not now")
					}
				}
			}
			res, err = app.Graph.Invoke(tctx, nil, append(opts, graph.WithResumeMap(answers))...)
		}
		if err != nil || res.Status != graph.StatusCompleted {
			t.Fatalf("thread %s: %v, %v", thread, res.Status, err)
		}
	}
	finish("alice", false)
	finish("bob", true)
	st, err := Open(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	a, err := st.Load(ctx, "alice")
	if err != nil {
		t.Fatal(err)
	}
	b, err := st.Load(ctx, "bob")
	if err != nil {
		t.Fatal(err)
	}
	if !a.Items[20].Placed() || !a.Items[21].Placed() {
		t.Errorf("alice approved every place, but #20 placed=%v #21 placed=%v", a.Items[20].Placed(), a.Items[21].Placed())
	}
	for _, id := range []int{20, 21, 23} {
		if b.Items[id].Placed() {
			t.Errorf("bob rejected every place, but #%d is placed in bob's week (alice's write leaked?)", id)
		}
	}
	if la, _ := st.ChangeLog(ctx, "alice"); len(la) != 4 {
		t.Errorf("alice's change log has %d rows, want 4 (#20, #21, #23, and #22 as Friday was not kept free)", len(la))
	}
	if lb, _ := st.ChangeLog(ctx, "bob"); len(lb) != 0 {
		t.Errorf("bob's change log has %d rows, want 0", len(lb))
	}
	// Outcome reads the scope of the context it is given.
	snap, err := app.Graph.GetState(ctx, graph.WithCheckpointer(saver), graph.WithThread("bob"))
	if err != nil {
		t.Fatal(err)
	}
	if out := app.Outcome(apps.WithScope(ctx, "bob"), snap.Values); !strings.Contains(out, "#20 Review for the algebra quiz: pending") {
		t.Errorf("bob's outcome:\n%s", out)
	}
}

// TestNewRejectsAnIncompleteConfig: a missing model or database is a
// clear error, not a panic later.
func TestNewRejectsAnIncompleteConfig(t *testing.T) {
	if _, err := New(context.Background(), Config{Database: "x.db"}); err == nil || !strings.Contains(err.Error(), "Config.Model") {
		t.Errorf("no model: %v", err)
	}
	if _, err := New(context.Background(), Config{Model: Script()}); err == nil || !strings.Contains(err.Error(), "Config.Database") {
		t.Errorf("no database: %v", err)
	}
	// A run with no scope anywhere fails saying how to give one.
	st := openStore(t)
	tools := Tools(st, "", nil)
	if _, err := tools[0].Call(context.Background(), []byte(`{}`)); err == nil || !strings.Contains(err.Error(), "apps.WithScope") {
		t.Errorf("unscoped call: %v", err)
	}
}

func isAsk(in graph.InterruptInfo) bool    { _, ok := planexec.AskFrom(in); return ok }
func isReview(in graph.InterruptInfo) bool { _, ok := planexec.ReviewFrom(in); return ok }

// TestScriptedAnswersShapeTheOutcome: the form's answers change what the
// scripted scenario does, and its delivered summary names exactly what
// the schedule shows — every task it says it placed is placed there, and
// none it did not.
func TestScriptedAnswersShapeTheOutcome(t *testing.T) {
	ctx := context.Background()
	db := filepath.Join(t.TempDir(), "app.db")
	app, err := New(ctx, Config{Model: Script(), Database: db})
	if err != nil {
		t.Fatal(err)
	}
	defer app.Close()
	st, err := Open(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	saver := checkpoint.NewMemory()
	run := func(thread string, form map[string]any) (string, *Schedule) {
		t.Helper()
		tctx := apps.WithScope(ctx, thread)
		opts := []graph.RunOption{graph.WithCheckpointer(saver), graph.WithThread(thread)}
		res, _ := app.Graph.Invoke(tctx, app.Input(""), opts...)
		for i := 0; len(res.Interrupts) > 0 && i < 10; i++ {
			answers := map[string]any{}
			for _, in := range res.Interrupts {
				switch {
				case isAsk(in):
					answers[in.ID] = planexec.FormAnswer(form)
				case isReview(in):
					answers[in.ID] = planexec.ApprovePlan()
				default:
					answers[in.ID] = tool.Approve()
				}
			}
			res, err = app.Graph.Invoke(tctx, nil, append(opts, graph.WithResumeMap(answers))...)
		}
		if err != nil || res.Status != graph.StatusCompleted {
			t.Fatalf("%s: %v %v", thread, res.Status, err)
		}
		answer, _ := planexec.Answer(res.State)
		sch, err := st.Load(ctx, thread)
		if err != nil {
			t.Fatal(err)
		}
		// The summary agrees with the schedule, item by item.
		for _, id := range []int{20, 21, 22, 23} {
			said := strings.Contains(answer, fmt.Sprintf("(#%d) at", id))
			if placed := sch.Items[id].Placed(); said != placed {
				t.Errorf("%s: the summary says #%d placed = %v, the schedule says %v:\n%s", thread, id, said, placed, answer)
			}
		}
		return answer, sch
	}
	relaxed, a := run("relaxed", map[string]any{"max_slots": 6, "first": "math", "friday_free": true})
	tight, b := run("tight", map[string]any{"max_slots": 2, "first": "cs", "friday_free": false})
	if !a.Items[21].Placed() || a.Items[22].Placed() || !strings.Contains(relaxed, "Friday stays free") {
		t.Errorf("6 slots a day, Friday free: #21 placed %v, #22 placed %v\n%s", a.Items[21].Placed(), a.Items[22].Placed(), relaxed)
	}
	if b.Items[21].Placed() || !b.Items[22].Placed() || strings.Contains(tight, "Friday stays free") {
		t.Errorf("2 slots a day, Friday not free: #21 placed %v, #22 placed %v\n%s", b.Items[21].Placed(), b.Items[22].Placed(), tight)
	}
	if !strings.Contains(tight, "Still pending: #21") {
		t.Errorf("the tight week does not say the assignment is pending:\n%s", tight)
	}
}

// autoAnswer answers the scheduler's interrupts: the form with form, the
// plan review with approval, every tool call with approval.
func autoAnswer(in graph.InterruptInfo, form map[string]any) any {
	switch {
	case isAsk(in):
		return planexec.FormAnswer(form)
	case isReview(in):
		return planexec.ApprovePlan()
	default:
		return tool.Approve()
	}
}
