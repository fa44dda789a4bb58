package eval

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"
)

// Runner runs a dataset's cases against a target: each case ×
// repetition on its own thread, a bounded number at a time, each within a
// timeout, answering interrupts from the case and sending its turns, then
// scoring the thread with the case's criteria.
type Runner struct {
	// Target is what is evaluated.
	Target Target
	// Experiment names the experiment; thread IDs derive from it (see
	// ThreadID). Required.
	Experiment string
	// Repeat is the number of repetitions of each case (default 1).
	Repeat int
	// Concurrency bounds the trials running at once (default 4).
	Concurrency int
	// Timeout bounds one trial, its runs and scoring (default 5 minutes).
	Timeout time.Duration
	// Tags, when set, select the cases that have at least one of them.
	Tags []string
	// Journal, when set, is the file the experiment is recorded in as it
	// runs, and resumed from: trials it holds a result for are not run
	// again (see the journal's doc in docs/eval.md).
	Journal string
	// Progress, when set, is called after each trial finishes (from the
	// trial's goroutine, one call at a time), with the number done and
	// the total.
	Progress func(t TrialResult, done, total int)
	// MaxRounds bounds the resumes of one phase of a trial (default 64):
	// an agent that keeps asking is stopped with an error.
	MaxRounds int
	// Users resolves the models of cases' simulated users; a case with a
	// simulated user fails when it is nil.
	Users UserResolver
}

// boundCase is a case with its criteria's evaluators built.
type boundCase struct {
	c        *Case
	criteria []Criterion
	evals    []Evaluator
}

// Run runs ds and returns the experiment. Everything that can be checked
// is checked before any trial runs: the target, the experiment name,
// every case's criteria (each names a registered evaluator whose params
// build). Cancelling ctx stops handing out trials and cancels those
// running; it returns the trials finished so far and ctx's error, and the
// journal lets the next Run continue.
func (r *Runner) Run(ctx context.Context, ds *Dataset) (*Experiment, error) {
	if r.Target == nil {
		return nil, errors.New("eval: Runner.Target is nil")
	}
	if r.Experiment == "" {
		return nil, errors.New("eval: Runner.Experiment is empty; name the experiment (thread IDs derive from it)")
	}
	repeat := max(r.Repeat, 1)
	conc := r.Concurrency
	if conc <= 0 {
		conc = 4
	}
	cases, err := r.bind(ds)
	if err != nil {
		return nil, err
	}
	head := journalHeader{Name: r.Experiment, Dataset: ds.Name, DatasetVersion: ds.Version, Target: r.Target.Name(), Repeat: repeat, Started: time.Now().UTC()}
	var j *journal
	if r.Journal != "" {
		if j, err = openJournal(r.Journal, head); err != nil {
			return nil, err
		}
		defer j.close()
		head.Started = j.head.Started
	}
	results := make([][]TrialResult, len(cases))
	type work struct{ ci, rep, attempt int }
	var todo []work
	for ci, bc := range cases {
		results[ci] = make([]TrialResult, repeat)
		for rep := range repeat {
			if j != nil {
				k := trialKey{Case: bc.c.ID, Repetition: rep}
				if t, ok := j.done[k]; ok {
					results[ci][rep] = t
					continue
				}
				todo = append(todo, work{ci, rep, j.next[k]})
				continue
			}
			todo = append(todo, work{ci, rep, 0})
		}
	}
	total := len(cases) * repeat
	done := total - len(todo)
	var (
		mu       sync.Mutex
		firstErr error
		wg       sync.WaitGroup
	)
	ch := make(chan work)
	for range min(conc, max(len(todo), 1)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for w := range ch {
				bc := cases[w.ci]
				if j != nil {
					if err := j.write(journalLine{Start: &trialKey{Case: bc.c.ID, Repetition: w.rep, Attempt: w.attempt}}); err != nil {
						mu.Lock()
						firstErr = cmpErr(firstErr, err)
						mu.Unlock()
						continue
					}
				}
				t := r.trial(ctx, bc, w.rep, w.attempt)
				if ctx.Err() != nil {
					continue // cancelled, not finished: the next Run runs it again
				}
				var jerr error
				if j != nil {
					jerr = j.write(journalLine{Trial: &t})
				}
				mu.Lock()
				results[w.ci][w.rep] = t
				done++
				firstErr = cmpErr(firstErr, jerr)
				if r.Progress != nil {
					r.Progress(t, done, total)
				}
				mu.Unlock()
			}
		}()
	}
feed:
	for _, w := range todo {
		select {
		case ch <- w:
		case <-ctx.Done():
			break feed
		}
	}
	close(ch)
	wg.Wait()
	exp := &Experiment{Name: r.Experiment, Dataset: ds.Name, DatasetVersion: ds.Version, Target: r.Target.Name(), Repeat: repeat,
		Started: head.Started, Finished: time.Now().UTC()}
	for ci, bc := range cases {
		cr := CaseResult{ID: bc.c.ID, Tags: bc.c.Tags}
		for _, t := range results[ci] {
			if t.ThreadID != "" {
				cr.Trials = append(cr.Trials, t)
			}
		}
		exp.Cases = append(exp.Cases, cr)
	}
	exp.Summarize()
	if err := ctx.Err(); err != nil {
		return exp, err
	}
	return exp, firstErr
}

func cmpErr(first, err error) error {
	if first != nil {
		return first
	}
	return err
}

// Check reports, without running anything, what would stop Run on ds: a
// case that does not check, a repeated ID, a case without criteria, a
// criterion whose evaluator is not registered or whose params do not
// build, and a tag selection that keeps no case. It needs no Target.
func (r *Runner) Check(ds *Dataset) error {
	_, err := r.bind(ds)
	return err
}

// bind selects ds's cases by tag and builds their evaluators.
func (r *Runner) bind(ds *Dataset) ([]boundCase, error) {
	if ds == nil || len(ds.Cases) == 0 {
		return nil, errors.New("eval: the dataset has no cases")
	}
	var out []boundCase
	seen := map[string]bool{}
	var errs []error
	for i := range ds.Cases {
		c := &ds.Cases[i]
		if len(r.Tags) > 0 && !slices.ContainsFunc(c.Tags, func(t string) bool { return slices.Contains(r.Tags, t) }) {
			continue
		}
		if err := c.check(); err != nil {
			errs = append(errs, err)
			continue
		}
		if seen[c.ID] {
			errs = append(errs, fmt.Errorf("case %q: the ID repeats", c.ID))
			continue
		}
		seen[c.ID] = true
		crit := c.Criteria
		if len(crit) == 0 {
			crit = ds.Criteria
		}
		if len(crit) == 0 {
			errs = append(errs, fmt.Errorf("case %q has no criteria, and the dataset names none", c.ID))
			continue
		}
		bc := boundCase{c: c, criteria: crit}
		for _, cr := range crit {
			e, err := New(cr)
			if err != nil {
				errs = append(errs, fmt.Errorf("case %q: %w", c.ID, err))
				continue
			}
			bc.evals = append(bc.evals, e)
		}
		out = append(out, bc)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("eval: no case of dataset %q has any of the tags %v", ds.Name, r.Tags)
	}
	return out, nil
}
