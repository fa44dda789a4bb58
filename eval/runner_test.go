package eval_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/trellis-agents/trellis/eval"
)

func chatDataset() *eval.Dataset {
	return &eval.Dataset{Name: "chat", Version: "1",
		Criteria: []eval.Criterion{{Evaluator: "test_contains", Params: raw(`{"Text":"echo"}`)}},
		Cases: []eval.Case{
			{ID: "plain", Input: eval.Input{Message: "hello"}},
			{ID: "asks", Tags: []string{"hitl"}, Input: eval.Input{Message: "ask me"},
				Answers: []eval.Answer{{Kind: "confirm", Question: "^Proceed", Value: raw(`"yes"`)}}},
			{ID: "asks-twice", Tags: []string{"hitl"}, Input: eval.Input{Message: "ask twice"},
				// A rule-less answer takes the next question whatever it is.
				Answers: []eval.Answer{{Kind: "choice", Value: raw(`"b"`)}, {Value: raw(`"ok"`)}}},
			{ID: "turns", Input: eval.Input{Message: "first"},
				Turns:    []eval.Turn{{Message: "ask again", Answers: []eval.Answer{{Value: raw(`"sure"`)}}}},
				Criteria: []eval.Criterion{{Evaluator: "test_contains", Params: raw(`{"Text":"again (sure)"}`)}}},
			{ID: "bad-tool", Input: eval.Input{Message: "bad one"}},
			{ID: "wrong", Input: eval.Input{Message: "hello"},
				Criteria: []eval.Criterion{{Evaluator: "test_contains", Params: raw(`{"Text":"nope"}`)}}},
		}}
}

func TestRunnerDrivesCasesOnFreshThreads(t *testing.T) {
	tg := newTarget(t)
	r := &eval.Runner{Target: tg, Experiment: "exp1", Concurrency: 3, Repeat: 2}
	exp, err := r.Run(context.Background(), chatDataset())
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, c := range exp.Cases {
		ids = append(ids, c.ID)
	}
	if want := []string{"plain", "asks", "asks-twice", "turns", "bad-tool", "wrong"}; !slices.Equal(ids, want) {
		t.Fatalf("case order %v, want the dataset's %v", ids, want)
	}
	byID := map[string]eval.CaseResult{}
	threads := map[string]bool{}
	for _, c := range exp.Cases {
		byID[c.ID] = c
		if len(c.Trials) != 2 {
			t.Fatalf("case %s: %d trials, want 2", c.ID, len(c.Trials))
		}
		for rep, tr := range c.Trials {
			if tr.Repetition != rep || tr.ThreadID != eval.ThreadID("exp1", c.ID, rep, 0) {
				t.Fatalf("case %s trial %d: repetition %d thread %s", c.ID, rep, tr.Repetition, tr.ThreadID)
			}
			if threads[tr.ThreadID] {
				t.Fatalf("thread %s reused", tr.ThreadID)
			}
			threads[tr.ThreadID] = true
		}
	}
	for _, id := range []string{"plain", "asks", "asks-twice", "turns", "bad-tool"} {
		if !byID[id].Pass {
			t.Errorf("case %s failed: %+v", id, byID[id].Trials[0])
		}
	}
	if got := byID["asks-twice"].Trials[0].Output; got != "echo: ask twice (ok,b)" {
		t.Errorf("asks-twice answered %q; want the confirm to get the rule-less answer and the choice its own", got)
	}
	w := byID["wrong"]
	if w.Pass || w.Trials[0].Scores[0].Pass || !strings.Contains(w.Trials[0].Scores[0].Explanation, "nope") {
		t.Errorf("wrong: %+v", w.Trials[0])
	}
	if s := exp.Summary; s.Cases != 6 || s.CasesPassed != 5 || s.Trials != 12 || s.TrialsPassed != 10 {
		t.Errorf("summary %+v", s)
	}
	if exp.Summary.Usage.Requests == 0 || exp.Cases[0].Trials[0].Latency <= 0 {
		t.Errorf("usage %+v latency %v: the target's usage and the runs' time are kept", exp.Summary.Usage, exp.Cases[0].Trials[0].Latency)
	}
	if exp.Cases[0].Trials[0].CheckpointID == "" {
		t.Error("no checkpoint ID")
	}

	// What the evaluators saw, read back from the thread.
	th, err := tg.Thread(context.Background(), byID["bad-tool"].Trials[0].ThreadID)
	if err != nil {
		t.Fatal(err)
	}
	calls := eval.Trajectory(th.Messages)
	if len(calls) != 1 || calls[0].Name != "lookup" || calls[0].Status != "error" || string(calls[0].Args) != `{"q":"bad"}` {
		t.Errorf("trajectory %+v", calls)
	}
}

// seeingEval records the threads it is shown.
type seeingEval struct{ seen chan *eval.Thread }

func (seeingEval) Name() string { return "test_seeing" }
func (s seeingEval) Evaluate(_ context.Context, t eval.Trial) (eval.Score, error) {
	s.seen <- t.Thread
	return eval.Score{Value: 1}, nil
}

var seen = make(chan *eval.Thread, 16)

func init() {
	eval.Register("test_seeing", func(json.RawMessage) (eval.Evaluator, error) { return seeingEval{seen}, nil })
}

func TestEvaluatorsSeeTheWholeThread(t *testing.T) {
	ds := &eval.Dataset{Name: "d", Criteria: []eval.Criterion{{Evaluator: "test_seeing"}}, Cases: []eval.Case{
		{ID: "c", Input: eval.Input{Message: "ask bad"}, Answers: []eval.Answer{{Node: "agent", Value: raw(`"yes"`)}},
			Turns: []eval.Turn{{Message: "and more"}}},
	}}
	if _, err := (&eval.Runner{Target: newTarget(t), Experiment: "see"}).Run(context.Background(), ds); err != nil {
		t.Fatal(err)
	}
	th := <-seen
	if want := []string{"agent", "respond", "agent", "respond"}; !slices.Equal(th.Nodes, want) {
		t.Errorf("nodes %v, want %v (the resumed agent task, then the turn's; an interrupted task is no entry)", th.Nodes, want)
	}
	if len(th.Interrupts) != 1 || th.Interrupts[0].Kind != "confirm" || th.Interrupts[0].Question != "Proceed with ask bad?" ||
		string(th.Interrupts[0].Answer) != `"yes"` || th.Interrupts[0].Node != "agent" {
		t.Errorf("interrupts %+v", th.Interrupts)
	}
	if len(th.ToolCalls) != 2 || th.ToolCalls[0].Status != "error" || th.ToolCalls[1].Status != "ok" {
		t.Errorf("tool calls %+v", th.ToolCalls)
	}
	if len(th.Turns) != 2 || th.Turns[1].User != "and more" || th.Turns[1].Response != "echo: and more ()" || len(th.Turns[1].ToolCalls) != 1 {
		t.Errorf("turns %+v", th.Turns)
	}
	if th.Usage.Requests != 2 || th.Latency <= 0 {
		t.Errorf("usage %+v latency %v", th.Usage, th.Latency)
	}
}

func TestRunnerFailures(t *testing.T) {
	ds := &eval.Dataset{Name: "f", Criteria: []eval.Criterion{{Evaluator: "test_contains", Params: raw(`{"Text":""}`)}}, Cases: []eval.Case{
		{ID: "unanswered", Input: eval.Input{Message: "ask me"}, Answers: []eval.Answer{{Kind: "choice", Value: raw(`"x"`)}}},
		{ID: "fails", Input: eval.Input{Message: "fail now"}},
		{ID: "slow", Input: eval.Input{Message: "slow one"}},
		{ID: "judge-down", Input: eval.Input{Message: "hi"}, Criteria: []eval.Criterion{{Evaluator: "test_broken"}}},
	}}
	exp, err := (&eval.Runner{Target: newTarget(t), Experiment: "f", Timeout: 200 * time.Millisecond}).Run(context.Background(), ds)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"unanswered": `unanswered question: "Proceed with ask me?" (node agent, kind confirm)`,
		"fails": "the agent broke", "slow": "took longer than 200ms"}
	for _, c := range exp.Cases {
		tr := c.Trials[0]
		if c.Pass || tr.Pass {
			t.Errorf("case %s passed", c.ID)
		}
		if w := want[c.ID]; w != "" && !strings.Contains(tr.Error, w) {
			t.Errorf("case %s: error %q, want %q", c.ID, tr.Error, w)
		}
	}
	jd := exp.Cases[3].Trials[0]
	if jd.Error != "" || jd.Scores[0].Error != "the judge is down" || jd.Scores[0].Pass {
		t.Errorf("an evaluator's error is the criterion's, not the run's: %+v", jd)
	}
	if cs := exp.Summary.Criteria; len(cs) != 2 || cs[1].Errors != 1 {
		t.Errorf("criteria summary %+v", cs)
	}
}

func TestRunnerRefusesBadCriteriaBeforeRunning(t *testing.T) {
	tg := &countingTarget{Target: newTarget(t)}
	ds := &eval.Dataset{Name: "b", Cases: []eval.Case{
		{ID: "a", Input: eval.Input{Message: "x"}, Criteria: []eval.Criterion{{Evaluator: "no_such"}}},
		{ID: "b", Input: eval.Input{Message: "x"}},
	}}
	_, err := (&eval.Runner{Target: tg, Experiment: "b"}).Run(context.Background(), ds)
	if err == nil || !strings.Contains(err.Error(), `no evaluator "no_such"`) || !strings.Contains(err.Error(), `case "b" has no criteria`) {
		t.Fatalf("err %v", err)
	}
	if tg.starts.Load() != 0 {
		t.Fatal("runs started before the dataset was checked")
	}
	if cerr := (&eval.Runner{}).Check(ds); cerr == nil || cerr.Error() != err.Error() {
		t.Fatalf("Check without a target: %v, want Run's %v", cerr, err)
	}
	if err := (&eval.Runner{}).Check(chatDataset()); err != nil {
		t.Fatalf("Check of a good dataset: %v", err)
	}
	_, err = (&eval.Runner{Target: tg, Experiment: "b", Tags: []string{"none"}}).Run(context.Background(), chatDataset())
	if err == nil || !strings.Contains(err.Error(), "tags") {
		t.Fatalf("no case selected: %v", err)
	}
	exp, err := (&eval.Runner{Target: tg, Experiment: "t", Tags: []string{"hitl"}}).Run(context.Background(), chatDataset())
	if err != nil || len(exp.Cases) != 2 {
		t.Fatalf("--tag hitl: %v, %d cases", err, len(exp.Cases))
	}
}

func TestRunnerResumesFromItsJournal(t *testing.T) {
	journal := filepath.Join(t.TempDir(), "exp.jsonl")
	tg := &countingTarget{Target: newTarget(t)}
	ds := chatDataset()
	ctx, cancel := context.WithCancel(context.Background())
	r := &eval.Runner{Target: tg, Experiment: "resume", Concurrency: 1, Repeat: 2, Journal: journal,
		Progress: func(_ eval.TrialResult, done, _ int) {
			if done == 5 {
				cancel()
			}
		}}
	partial, err := r.Run(ctx, ds)
	if err == nil {
		t.Fatal("a cancelled experiment returned no error")
	}
	if partial.Summary.Trials != 5 {
		t.Fatalf("partial experiment has %d trials, want 5", partial.Summary.Trials)
	}
	first := tg.starts.Load()
	r.Progress = nil
	exp, err := r.Run(context.Background(), ds)
	if err != nil {
		t.Fatal(err)
	}
	if exp.Summary.Trials != 12 || exp.Summary.TrialsPassed != 10 {
		t.Fatalf("resumed summary %+v", exp.Summary)
	}
	// The second run started only the 7 trials without a result (asks-twice
	// once, turns twice with two runs each, bad-tool and wrong twice).
	if got := tg.starts.Load() - first; got != 9 {
		t.Fatalf("the resumed run started %d runs; want 9", got)
	}
	if exp.Started != partial.Started {
		t.Errorf("started %v, want the first run's %v", exp.Started, partial.Started)
	}
	// A third run finds everything done and starts nothing.
	before := tg.starts.Load()
	again, err := r.Run(context.Background(), ds)
	if err != nil || tg.starts.Load() != before || again.Summary.Trials != 12 {
		t.Fatalf("third run: %v, %d new runs", err, tg.starts.Load()-before)
	}
	// The journal belongs to this experiment.
	other := &eval.Runner{Target: tg, Experiment: "resume", Repeat: 3, Journal: journal}
	if _, err := other.Run(context.Background(), ds); err == nil || !strings.Contains(err.Error(), "2 repetitions") {
		t.Fatalf("a journal of another shape: %v", err)
	}
}

func TestThreadIDs(t *testing.T) {
	a := eval.ThreadID("e", "c", 0, 0)
	if a != eval.ThreadID("e", "c", 0, 0) || a == eval.ThreadID("e", "c", 1, 0) || a == eval.ThreadID("e", "c", 0, 1) || a == eval.ThreadID("f", "c", 0, 0) {
		t.Fatal("thread IDs are not a function of experiment, case, repetition and attempt")
	}
	if eval.PagePath(a) != "/#/thread/"+a {
		t.Fatal(eval.PagePath(a))
	}
}
