package eval

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/google/uuid"

	"github.com/trellis-agents/trellis/llm"
)

// Experiment is the result of running a dataset against a target: every
// case × repetition × criterion, and the aggregates. It is plain data:
// write it with encoding/json (ReadExperiment reads it back, as a
// baseline); reports are views of it.
type Experiment struct {
	// Name identifies the experiment; thread IDs derive from it.
	Name string `json:"name"`
	// Dataset and DatasetVersion name what ran.
	Dataset        string `json:"dataset"`
	DatasetVersion string `json:"dataset_version,omitempty"`
	// Target says what was evaluated (Target.Name).
	Target string `json:"target"`
	// Repeat is the number of repetitions of each case.
	Repeat int `json:"repeat"`
	// Started and Finished bracket the run (Started is the first start
	// when the experiment was resumed).
	Started  time.Time `json:"started"`
	Finished time.Time `json:"finished"`
	// Cases are the cases' results in the dataset's order.
	Cases []CaseResult `json:"cases"`
	// Summary aggregates them.
	Summary Summary `json:"summary"`
	// Comparison compares against a baseline, when one was given.
	Comparison *Comparison `json:"comparison,omitempty"`
}

// CaseResult is one case's repetitions.
type CaseResult struct {
	// ID and Tags are the case's.
	ID   string   `json:"id"`
	Tags []string `json:"tags,omitempty"`
	// Trials are the repetitions, by repetition number.
	Trials []TrialResult `json:"trials"`
	// Passed counts the repetitions that passed.
	Passed int `json:"passed"`
	// Pass is true when every repetition passed (the case "meets its
	// criteria"; the CLI's exit status gates on it).
	Pass bool `json:"pass"`
	// Consistency is the share of repetitions that agree with the
	// majority outcome: 1 when every repetition passed or every one
	// failed, 0.5 at worst.
	Consistency float64 `json:"consistency"`
	// MeanScore is the mean over repetitions of each repetition's mean
	// criterion score.
	MeanScore float64 `json:"mean_score"`
}

// TrialResult is one repetition of one case.
type TrialResult struct {
	// Case and Repetition (from 0) say which trial.
	Case       string `json:"case"`
	Repetition int    `json:"repetition"`
	// Attempt counts from 0; above 0 an interrupted experiment restarted
	// the trial on a new thread.
	Attempt int `json:"attempt,omitempty"`
	// ThreadID and CheckpointID locate the thread the trial ran on.
	ThreadID     string `json:"thread_id"`
	CheckpointID string `json:"checkpoint_id,omitempty"`
	// Pass is true when the run did not fail and every criterion passed.
	Pass bool `json:"pass"`
	// Error is why the run itself failed ("" when it did not): the run's
	// error, an unanswered question, a timeout.
	Error string `json:"error,omitempty"`
	// Scores are the criteria's verdicts, in the case's criteria order.
	Scores []CriterionResult `json:"scores"`
	// Output is the final response (cut at 4000 bytes), for reports.
	Output string `json:"output,omitempty"`
	// Latency is the wall time of the trial's runs; Usage their cost.
	Latency time.Duration `json:"latency"`
	Usage   llm.Usage     `json:"usage,omitzero"`
	// Simulated is what the case's simulated user said, in order (empty
	// for a case with fixed answers and turns).
	Simulated []SimulatedTurn `json:"simulated,omitempty"`
}

// CriterionResult is one criterion's verdict on a trial.
type CriterionResult struct {
	// Evaluator names the criterion's evaluator.
	Evaluator string `json:"evaluator"`
	// Threshold is the score the criterion requires.
	Threshold float64 `json:"threshold"`
	// Score is the evaluator's score (0 when it could not score).
	Score float64 `json:"score"`
	// Pass is true when Score reaches Threshold and the evaluator did not
	// fail.
	Pass bool `json:"pass"`
	// Explanation is the evaluator's.
	Explanation string `json:"explanation,omitempty"`
	// Error is why the evaluator could not score, "" when it could.
	Error string `json:"error,omitempty"`
}

// MeanScore is the mean of the trial's criterion scores (0 with none).
func (t *TrialResult) MeanScore() float64 {
	if len(t.Scores) == 0 {
		return 0
	}
	var s float64
	for _, c := range t.Scores {
		s += c.Score
	}
	return s / float64(len(t.Scores))
}

// PagePath is the path of the thread's timeline on a Trellis server's web
// page ("/#/thread/<id>"); prefix the server's URL.
func PagePath(threadID string) string { return "/#/thread/" + threadID }

// threadNS is the UUID namespace evaluation thread IDs derive in.
var threadNS = uuid.MustParse("6f1c3e0a-6d0b-4c39-9d47-3f1b2a7c9e11")

// ThreadID is the thread a trial runs on: a UUID derived from the
// experiment, the case, the repetition and the attempt, so running the
// same experiment again finds the same threads, and two experiments never
// share one.
func ThreadID(experiment, caseID string, repetition, attempt int) string {
	return uuid.NewSHA1(threadNS, fmt.Appendf(nil, "%s\x00%s\x00%d\x00%d", experiment, caseID, repetition, attempt)).String()
}

// WriteExperiment writes e as indented JSON.
func WriteExperiment(w io.Writer, e *Experiment) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(e)
}

// ReadExperiment reads an experiment written by WriteExperiment (the
// CLI's --json file), for use as a baseline.
func ReadExperiment(path string) (*Experiment, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var e Experiment
	dec := json.NewDecoder(io.LimitReader(f, 1<<30))
	if err := dec.Decode(&e); err != nil {
		return nil, fmt.Errorf("%s: not an experiment's JSON: %w", path, err)
	}
	if e.Name == "" || e.Cases == nil {
		return nil, fmt.Errorf("%s: not an experiment's JSON (no name or cases)", path)
	}
	return &e, nil
}
