package eval

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/trellis-agents/trellis/llm"
)

// maxOutput bounds TrialResult.Output.
const maxOutput = 4000

// trialRun is what the runner saw while driving a trial.
type trialRun struct {
	interrupts []Interrupt
	nodes      []string
	usage      llm.Usage
	latency    time.Duration
	err        string
	simulated  []SimulatedTurn
}

// trial runs one repetition of bc and scores it.
func (r *Runner) trial(ctx context.Context, bc boundCase, rep, attempt int) TrialResult {
	timeout := r.Timeout
	if timeout <= 0 {
		timeout = 5 * time.Minute
	}
	tctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	c := bc.c
	id := ThreadID(r.Experiment, c.ID, rep, attempt)
	res := TrialResult{Case: c.ID, Repetition: rep, Attempt: attempt, ThreadID: id}
	run := &trialRun{}
	md := map[string]string{"eval_experiment": r.Experiment, "eval_case": c.ID, "eval_repetition": strconv.Itoa(rep)}
	err := r.drive(tctx, c, id, md, run)
	if err != nil {
		run.err = err.Error()
		if errors.Is(tctx.Err(), context.DeadlineExceeded) && ctx.Err() == nil {
			run.err = fmt.Sprintf("the trial took longer than %s: %v", timeout, err)
		}
	}
	// The thread is read even when the trial timed out, so what it did
	// is scored and shown.
	rctx := tctx
	if tctx.Err() != nil {
		var rcancel context.CancelFunc
		rctx, rcancel = context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer rcancel()
	}
	th, terr := r.Target.Thread(rctx, id)
	if terr != nil {
		th = &Thread{ThreadID: id}
		if run.err == "" {
			run.err = "cannot read the thread: " + terr.Error()
		}
	}
	run.fill(th)
	res.CheckpointID = th.CheckpointID
	res.Error = th.Error
	res.Latency, res.Usage = th.Latency, th.Usage
	res.Output = th.FinalResponse()
	if len(res.Output) > maxOutput {
		res.Output = res.Output[:maxOutput] + "…"
	}
	res.Simulated = run.simulated
	res.Pass = res.Error == ""
	trial := Trial{Case: c, Repetition: rep, Thread: th}
	for i, e := range bc.evals {
		cr := CriterionResult{Evaluator: bc.criteria[i].Evaluator, Threshold: bc.criteria[i].ThresholdOrDefault()}
		s, err := evaluate(rctx, e, trial)
		switch {
		case err != nil:
			cr.Error = err.Error()
		case math.IsNaN(s.Value) || s.Value < 0 || s.Value > 1:
			cr.Error = fmt.Sprintf("the evaluator scored %v, outside [0, 1]", s.Value)
		default:
			cr.Score, cr.Explanation = s.Value, s.Explanation
			cr.Pass = s.Value >= cr.Threshold
		}
		res.Pass = res.Pass && cr.Pass
		res.Scores = append(res.Scores, cr)
	}
	return res
}

// evaluate calls e, turning a panic into an error: one broken evaluator
// fails its criterion, not the experiment.
func evaluate(ctx context.Context, e Evaluator, t Trial) (s Score, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("the evaluator panicked: %v", p)
		}
	}()
	return e.Evaluate(ctx, t)
}

// fill completes th with what the runner saw: the interrupts and their
// answers, the node path and usage when the target reported them per
// run, the latency, and the error; and derives the trajectory and turns
// from the messages when the target did not.
func (run *trialRun) fill(th *Thread) {
	th.Interrupts = run.interrupts
	if len(run.nodes) > 0 {
		th.Nodes = run.nodes
	}
	if !run.usage.IsZero() {
		th.Usage = run.usage
	}
	th.Latency = run.latency
	if run.err != "" {
		th.Error = run.err
	}
	if th.ToolCalls == nil {
		th.ToolCalls = Trajectory(th.Messages)
	}
	if th.Turns == nil {
		th.Turns = SplitTurns(th.Messages)
	}
}

// drive runs the case's input and turns on thread id, answering the
// interrupts they meet.
func (r *Runner) drive(ctx context.Context, c *Case, id string, md map[string]string, run *trialRun) error {
	if c.User != nil {
		return r.driveSimulated(ctx, c, id, md, run)
	}
	if err := r.phase(ctx, RunRequest{ThreadID: id, Input: c.Input, Metadata: md}, c.Answers, run); err != nil {
		return err
	}
	for i, t := range c.Turns {
		in := Input{Message: t.Message, Context: c.Input.Context, Config: c.Input.Config}
		if err := r.phase(ctx, RunRequest{ThreadID: id, Input: in, Metadata: md}, t.Answers, run); err != nil {
			return fmt.Errorf("turn %d: %w", i+1, err)
		}
	}
	return nil
}

// phase runs req and resumes it until it finishes, answering each
// interrupt by Answer's rules.
func (r *Runner) phase(ctx context.Context, req RunRequest, answers []Answer, run *trialRun) error {
	ans, err := newAnswerer(answers)
	if err != nil {
		return err
	}
	return r.run(ctx, req, ans, nil, run)
}

// run runs req and resumes it until it finishes, answering each interrupt
// from ans or, when none of its answers applies, from fallback (a
// simulated user; nil: the interrupt is unanswered).
func (r *Runner) run(ctx context.Context, req RunRequest, ans *answerer, fallback func(Interrupt) (json.RawMessage, error), run *trialRun) error {
	rounds := r.MaxRounds
	if rounds <= 0 {
		rounds = 64
	}
	for round := 0; ; round++ {
		start := time.Now()
		out, err := r.Target.Run(ctx, req)
		run.latency += time.Since(start)
		if err != nil {
			return err
		}
		run.nodes = append(run.nodes, out.Nodes...)
		run.usage = run.usage.Add(out.Usage)
		if out.Error != "" {
			return errors.New(out.Error)
		}
		if len(out.Interrupts) == 0 {
			return nil
		}
		if round >= rounds {
			return fmt.Errorf("the run still asks after %d answers; stopped (Runner.MaxRounds)", rounds)
		}
		resume := map[string]json.RawMessage{}
		for _, in := range out.Interrupts {
			interruptFields(&in)
			v, ok := ans.answer(in)
			if !ok && fallback != nil {
				var ferr error
				if v, ferr = fallback(in); ferr != nil {
					run.interrupts = append(run.interrupts, in)
					return ferr
				}
				ok = true
			}
			if !ok {
				run.interrupts = append(run.interrupts, in)
				return fmt.Errorf("unanswered question: %s", describe(in))
			}
			in.Answer = v
			run.interrupts = append(run.interrupts, in)
			resume[in.ID] = v
		}
		req = RunRequest{ThreadID: req.ThreadID, Resume: resume, Metadata: req.Metadata}
	}
}

func describe(in Interrupt) string {
	s := in.Question
	if s == "" {
		s = string(in.Payload)
	}
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	where := ""
	if in.Node != "" {
		where = " (node " + in.Node
		if in.Kind != "" {
			where += ", kind " + in.Kind
		}
		where += ")"
	} else if in.Kind != "" {
		where = " (kind " + in.Kind + ")"
	}
	return fmt.Sprintf("%q%s; add an answer that matches it to the case", s, where)
}
