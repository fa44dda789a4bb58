package wire

import (
	"fmt"
	"time"

	"github.com/trellis-agents/trellis/eval"
)

// Experiments: a dataset version run against an assistant on the
// service (Trellis's own bodies: unknown fields are refused). Each case ×
// repetition is a unit run as a job of the run queue on a fresh thread;
// see docs/eval.md.

// MaxRepetitions and MaxConcurrency bound an experiment's request.
const (
	MaxRepetitions = 100
	MaxConcurrency = 64
)

// ExperimentCreate is the body of POST /experiments.
type ExperimentCreate struct {
	// Name names the experiment (default: dataset name, assistant and
	// time).
	Name      string `json:"name,omitempty"`
	DatasetID string `json:"dataset_id"`
	// DatasetVersion is the version run (default the latest).
	DatasetVersion int    `json:"dataset_version,omitempty"`
	AssistantID    string `json:"assistant_id"`
	// AssistantVersion pins the assistant version the units run (its
	// context and config given to every run); default the latest.
	AssistantVersion int `json:"assistant_version,omitempty"`
	// Repetitions of each case, 1 to MaxRepetitions.
	Repetitions int `json:"repetitions"`
	// Concurrency is how many units run at once (default 4, at most
	// MaxConcurrency).
	Concurrency int `json:"concurrency,omitempty"`
	// BaselineExperimentID is the experiment compare uses when the
	// request names none.
	BaselineExperimentID string   `json:"baseline_experiment_id,omitempty"`
	Metadata             Metadata `json:"metadata,omitempty"`
}

// Strict refuses unknown fields.
func (*ExperimentCreate) Strict() {}

// Validate checks the required fields and bounds.
func (b *ExperimentCreate) Validate() []FieldError {
	var errs []FieldError
	errs = append(errs, nonEmpty("/dataset_id", b.DatasetID, "the dataset's ID")...)
	errs = append(errs, nonEmpty("/assistant_id", b.AssistantID, "the assistant's ID")...)
	if b.Repetitions < 1 || b.Repetitions > MaxRepetitions {
		errs = append(errs, FieldError{Pointer: "/repetitions", Detail: fmt.Sprintf("must be 1 to %d, not %d", MaxRepetitions, b.Repetitions)})
	}
	if b.Concurrency < 0 || b.Concurrency > MaxConcurrency {
		errs = append(errs, FieldError{Pointer: "/concurrency", Detail: fmt.Sprintf("must be 1 to %d, not %d", MaxConcurrency, b.Concurrency)})
	}
	if b.AssistantVersion < 0 {
		errs = append(errs, FieldError{Pointer: "/assistant_version", Detail: fmt.Sprintf("must be 1 or more (or left out for the latest), not %d", b.AssistantVersion)})
	}
	if b.DatasetVersion < 0 {
		errs = append(errs, FieldError{Pointer: "/dataset_version", Detail: fmt.Sprintf("must be 1 or more, not %d", b.DatasetVersion)})
	}
	return errs
}

// ExperimentListQuery is the query of GET /experiments.
type ExperimentListQuery struct {
	DatasetID   string `json:"dataset_id,omitempty"`
	AssistantID string `json:"assistant_id,omitempty"`
	// Limit is the page size, 1 to MaxLimit (default DefaultLimit).
	Limit  *int `json:"limit,omitempty"`
	Offset int  `json:"offset,omitempty"`
}

// Validate checks limit and offset.
func (q *ExperimentListQuery) Validate() []FieldError { return pageErrors("", q.Limit, q.Offset) }

// ExperimentCompareQuery is the query of GET /experiments/{id}/compare.
type ExperimentCompareQuery struct {
	// Baseline is the experiment compared with (default the
	// experiment's baseline_experiment_id).
	Baseline string `json:"baseline,omitempty"`
}

// ExperimentProgress counts an experiment's units.
type ExperimentProgress struct {
	Total  int `json:"total"`
	Done   int `json:"done"`
	Passed int `json:"passed"`
	Failed int `json:"failed"`
}

// Experiment is an experiment as the service shows it.
type Experiment struct {
	ExperimentID   string `json:"experiment_id"`
	Name           string `json:"name"`
	DatasetID      string `json:"dataset_id"`
	DatasetVersion int    `json:"dataset_version"`
	AssistantID    string `json:"assistant_id"`
	// AssistantVersion is the pinned assistant version; absent when
	// the units run the latest.
	AssistantVersion     int      `json:"assistant_version,omitempty"`
	Repetitions          int      `json:"repetitions"`
	Concurrency          int      `json:"concurrency"`
	BaselineExperimentID string   `json:"baseline_experiment_id,omitempty"`
	Metadata             Metadata `json:"metadata"`
	// Status is pending, running, success, error or cancelled.
	Status   string             `json:"status"`
	Progress ExperimentProgress `json:"progress"`
	// Summary is the aggregates with their intervals, once the
	// experiment succeeded.
	Summary *eval.Summary `json:"summary,omitempty"`
	// Error says why the experiment ended in error.
	Error     string    `json:"error,omitempty"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

// ExperimentScore is one criterion's verdict on a unit.
type ExperimentScore struct {
	Evaluator   string  `json:"evaluator"`
	Score       float64 `json:"score"`
	Passed      bool    `json:"passed"`
	Explanation string  `json:"explanation,omitempty"`
}

// ExperimentResult is one unit's result: a case at a repetition (from 0).
type ExperimentResult struct {
	CaseID     string            `json:"case_id"`
	Repetition int               `json:"repetition"`
	Passed     bool              `json:"passed"`
	Scores     []ExperimentScore `json:"scores"`
	// ThreadID is the fresh thread the unit ran on; RunID its last run.
	ThreadID string `json:"thread_id"`
	RunID    string `json:"run_id,omitempty"`
	// Output is the final response (cut at 4000 bytes).
	Output    string `json:"output"`
	LatencyMS int64  `json:"latency_ms"`
	// Error is why the run itself failed.
	Error string `json:"error,omitempty"`
}

// ExperimentProgressEvent is the data of a "progress" event of GET
// /experiments/{id}/stream.
type ExperimentProgressEvent struct {
	ExperimentID string             `json:"experiment_id"`
	Status       string             `json:"status"`
	Progress     ExperimentProgress `json:"progress"`
}
