package router_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/trellis-agents/trellis/agent/react"
	"github.com/trellis-agents/trellis/agent/router"
	"github.com/trellis-agents/trellis/checkpoint"
	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/llm/llmtest"
	"github.com/trellis-agents/trellis/tool"
)

// When the deadline passes while a sub-agent works, the run completes
// with an answer saying that time ran out, what was done and what was not.
// (synctest: the clock is virtual, so the test takes no real time.)
func TestDeadlineStopsSubAgent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var r ran
		m := llmtest.New()
		m.When(llmtest.Namespace("researcher:"), llmtest.Text("too late").After(time.Hour))
		m.Reply(
			llmtest.ToolCalls(llmtest.Call("find_tables", `{}`), llmtest.Call("researcher", `{"task":"dig"}`)), // call_1, call_2
			llmtest.Text("never asked"),
		)
		g := mustNew(t, router.Config{
			Model:    m,
			Deadline: 30 * time.Second,
			Tools:    []tool.Tool{fixedTool(&r, "find_tables", "orders, customers")},
			Agents:   []router.Agent{{Name: "researcher", Description: "Digs.", Graph: reactAgent(t, m)}},
		})
		start := time.Now()
		res, err := g.Invoke(context.Background(), react.Input("Dig into orders."))
		if err != nil || res.Status != graph.StatusCompleted {
			t.Fatalf("err %v, status %s", err, res.Status)
		}
		if took := time.Since(start); took != 30*time.Second {
			t.Errorf("the run took %v; want the deadline, 30s", took)
		}
		o := finished(t, res.State)
		want := "Time ran out: this request had 30s, and the time passed before the work was finished.\n\n" +
			"Done before the deadline:\n- find_tables (call_1): orders, customers\n\n" +
			"Not done:\n- researcher (call_2): stopped: the deadline passed while it ran"
		if o.Reason != router.ReasonDeadline || o.Answer != want || o.Failed() {
			t.Errorf("outcome %+v\nwant answer:\n%s", o, want)
		}
		if n := len(routerRequests(m)); n != 1 {
			t.Errorf("%d router requests; want 1", n)
		}
		rec, _ := tool.LookupCall(res.State, react.Calls, "call_2")
		if !strings.HasPrefix(rec.Error, "stopped: ") {
			t.Errorf("record of the stopped call: %+v", rec)
		}
	})
}

// When the deadline passes while the router model thinks, the run ends
// with the time-out answer too.
func TestDeadlineStopsRouterModel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var r ran
		m := llmtest.New().Reply(
			llmtest.ToolCalls(llmtest.Call("find_tables", `{}`)).After(10*time.Second),
			llmtest.Text("too late").After(time.Hour),
		)
		g := mustNew(t, router.Config{Model: m, Deadline: time.Minute, Tools: []tool.Tool{fixedTool(&r, "find_tables", "orders")}})
		res, err := g.Invoke(context.Background(), react.Input("Tables?"))
		if err != nil || res.Status != graph.StatusCompleted {
			t.Fatalf("err %v, status %s", err, res.Status)
		}
		o := finished(t, res.State)
		if o.Reason != router.ReasonDeadline || !strings.Contains(o.Answer, "Done before the deadline:\n- find_tables (call_1): orders") ||
			strings.Contains(o.Answer, "Not done") {
			t.Errorf("outcome %+v", o)
		}
		msgs := react.Messages.Get(res.State)
		if last := msgs[len(msgs)-1]; last.Text() != o.Answer || len(last.ToolCalls) != 0 {
			t.Errorf("the history ends with %+v", last)
		}
	})
}

// The deadline bounds each run, not the time a person takes to answer: a
// run resumed after the deadline would have passed has the whole deadline
// again, in a fresh graph too.
func TestDeadlineRestartsOnResume(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := llmtest.New().Reply(
			llmtest.ToolCalls(llmtest.Call(router.AskHumanName, `{"question":"Which city?"}`)).After(40*time.Second),
			llmtest.Text("Booked Oslo.").After(40*time.Second),
			llmtest.ToolCalls(llmtest.Call(router.AskHumanName, `{"question":"Which date?"}`)).After(40*time.Second),
			llmtest.Text("Booked for Monday.").After(90*time.Second),
		)
		cfg := router.Config{Model: m, AskHuman: true, Deadline: time.Minute}
		opts := []graph.RunOption{graph.WithCheckpointer(checkpoint.NewMemory()), graph.WithThread("trip")}

		_, err := mustNew(t, cfg).Invoke(context.Background(), react.Input("Book a trip."), opts...)
		if !errors.Is(err, graph.ErrInterrupted) {
			t.Fatalf("err %v; want an interrupt", err)
		}
		time.Sleep(3 * time.Hour) // the person takes their time
		res, err := mustNew(t, cfg).Invoke(context.Background(), nil, append(opts, graph.WithResume("Oslo"))...)
		if err != nil {
			t.Fatal(err)
		}
		if o := finished(t, res.State); o.Reason != router.ReasonAnswer || o.Answer != "Booked Oslo." {
			t.Errorf("after the resume: outcome %+v", o)
		}

		// The next turn has its own deadline, which the slow reply misses.
		_, err = mustNew(t, cfg).Invoke(context.Background(), react.Input("And the date?"), opts...)
		if !errors.Is(err, graph.ErrInterrupted) {
			t.Fatalf("err %v; want an interrupt", err)
		}
		res, err = mustNew(t, cfg).Invoke(context.Background(), nil, append(opts, graph.WithResume("Monday"))...)
		if err != nil {
			t.Fatal(err)
		}
		if o := finished(t, res.State); o.Reason != router.ReasonDeadline {
			t.Errorf("a reply slower than the deadline: outcome %+v", o)
		}
	})
}
