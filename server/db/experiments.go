package db

import (
	"context"
	"encoding/json"
	"time"
)

// MaxExperimentUnits bounds the units (cases × repetitions) of one
// experiment; more is ErrInvalid.
const MaxExperimentUnits = 100000

// ExperimentStatus is an experiment's status.
type ExperimentStatus string

// Experiment statuses. Pending and running are live; the others are
// terminal and final: once an experiment reached one, no update changes
// it.
const (
	ExperimentPending   ExperimentStatus = "pending"
	ExperimentRunning   ExperimentStatus = "running"
	ExperimentSuccess   ExperimentStatus = "success"
	ExperimentError     ExperimentStatus = "error"
	ExperimentCancelled ExperimentStatus = "cancelled"
)

// Terminal reports whether the status is final.
func (s ExperimentStatus) Terminal() bool {
	return s == ExperimentSuccess || s == ExperimentError || s == ExperimentCancelled
}

// Valid reports whether s is one of the statuses.
func (s ExperimentStatus) Valid() bool {
	return s == ExperimentPending || s == ExperimentRunning || s.Terminal()
}

// Experiment is a dataset version run against an assistant, each case
// Repetitions times: Total units, each recorded once as an
// ExperimentResult. Deleting its dataset deletes it with its results.
type Experiment struct {
	ID             string
	Name           string
	DatasetID      string
	DatasetVersion int
	AssistantID    string
	// AssistantVersion is the assistant version its units run; 0 runs
	// the assistant's latest version at the time each unit runs.
	AssistantVersion int
	Repetitions      int
	// Criteria is the dataset's default criteria (a JSON array of
	// eval.Criterion) as they were when the experiment was created, so
	// that editing the dataset's criteria later does not change how it
	// scores. Nil for an experiment stored without them (before they were
	// kept): it scores with the dataset's criteria when each unit runs.
	Criteria json.RawMessage
	// Concurrency is how many units run at once (at least 1).
	Concurrency int
	// BaselineID is the experiment it is compared with by default ("").
	BaselineID string
	Metadata   Metadata
	Status     ExperimentStatus
	// Total is the number of units: cases × repetitions.
	Total int
	// Summary is the aggregates (an eval.Summary as JSON) once done; nil
	// before.
	Summary json.RawMessage
	// Error says why an experiment ended in error.
	Error     string
	CreatedAt time.Time
	UpdatedAt time.Time
}

// ExperimentQuery filters a tenant's experiments, newest first.
type ExperimentQuery struct {
	DatasetID   string // "" does not filter
	AssistantID string // "" does not filter
	Limit       int    // 0: 10
	Offset      int
}

// ExperimentUpdate is a status change: Summary and Error replace the
// stored ones when set.
type ExperimentUpdate struct {
	Status  ExperimentStatus
	Summary json.RawMessage
	Error   string
}

// ExperimentResult is one unit's result: a case at a repetition (from 0).
// Data is the unit's result as JSON (an eval.TrialResult with the run's
// ID), opaque here.
type ExperimentResult struct {
	ExperimentID string
	CaseID       string
	Repetition   int
	Passed       bool
	Data         json.RawMessage
	CreatedAt    time.Time
}

// ExperimentProgress counts an experiment's recorded units.
type ExperimentProgress struct {
	Done   int
	Passed int
}

// Experiments stores experiments and their units' results.
type Experiments interface {
	// CreateExperiment stores e (a new ID when e.ID is empty) as pending;
	// its dataset must exist (ErrNotFound).
	CreateExperiment(ctx context.Context, tenant string, e Experiment) (Experiment, error)
	GetExperiment(ctx context.Context, tenant, id string) (Experiment, error)
	SearchExperiments(ctx context.Context, tenant string, q ExperimentQuery) ([]Experiment, error)
	// UpdateExperiment changes a live experiment's status (with summary
	// and error). A terminal experiment is left as it is and changed is
	// false, so of replicas racing to end an experiment one wins.
	UpdateExperiment(ctx context.Context, tenant, id string, u ExperimentUpdate) (e Experiment, changed bool, err error)
	// RecordExperimentResult stores a unit's result once: when the
	// experiment has a result for the same case and repetition already,
	// that one is kept and inserted is false. The experiment must exist
	// (ErrNotFound).
	RecordExperimentResult(ctx context.Context, tenant string, r ExperimentResult) (inserted bool, err error)
	// ExperimentResults lists an experiment's results by case ID and
	// repetition.
	ExperimentResults(ctx context.Context, tenant, id string) ([]ExperimentResult, error)
	// ExperimentProgress counts an experiment's results.
	ExperimentProgress(ctx context.Context, tenant, id string) (ExperimentProgress, error)
}
