package db

import (
	"context"
	"encoding/json"
	"time"
)

// Bounds of the evaluation tables, so one request or one dataset cannot
// grow without limit: a dataset holds at most MaxDatasetCases live cases
// and a run at most MaxRunFeedback feedback entries. Going over is
// ErrInvalid.
const (
	MaxDatasetCases = 10000
	MaxRunFeedback  = 1000
)

// Dataset is a tenant's evaluation dataset (eval.Dataset on the server):
// its cases are versioned. Version is the latest version; it is 1 at
// creation and grows by one with every change to the cases (adding,
// editing or removing some). Its name, description, metadata and
// criteria are not versioned: a change replaces them.
type Dataset struct {
	ID          string
	Name        string // unique per tenant
	Description string
	Metadata    Metadata
	// Criteria is the default criteria, a JSON array of eval.Criterion
	// ("[]" when none); the service validates it, the store keeps it.
	Criteria json.RawMessage
	Version  int
	// Cases counts the cases of the latest version.
	Cases     int
	CreatedAt time.Time
	UpdatedAt time.Time
}

// DatasetPatch changes a dataset without making a version. Nil fields
// keep their value; Metadata is merged key by key; Criteria, when set,
// replaces the criteria.
type DatasetPatch struct {
	Name        *string
	Description *string
	Metadata    Metadata
	Criteria    json.RawMessage
}

// DatasetQuery filters a tenant's datasets, newest first.
type DatasetQuery struct {
	Name   string // substring, case-insensitive; "" does not filter
	Limit  int    // 0: 10
	Offset int
}

// DatasetCase is one case of a dataset at a version. ID is stable across
// edits; Data is the case as JSON (an eval.Case object, validated by the
// service); Version is the version that wrote this content.
type DatasetCase struct {
	ID        string
	Data      json.RawMessage
	Version   int
	CreatedAt time.Time
}

// Datasets stores evaluation datasets and their versioned cases. A case is
// stored once per content: a row carries the version that added it and
// the version that removed or replaced it (none while it is current), so
// a dataset reads as of any of its versions.
type Datasets interface {
	// CreateDataset stores d (a new ID when d.ID is empty) at version 1
	// with cases; a name another dataset of the tenant has is
	// ErrConflict, a case ID repeated in cases ErrInvalid.
	CreateDataset(ctx context.Context, tenant string, d Dataset, cases []DatasetCase) (Dataset, error)
	GetDataset(ctx context.Context, tenant, id string) (Dataset, error)
	// UpdateDataset applies p; a name taken by another dataset is
	// ErrConflict.
	UpdateDataset(ctx context.Context, tenant, id string, p DatasetPatch) (Dataset, error)
	// DeleteDataset deletes the dataset with every version of its cases.
	DeleteDataset(ctx context.Context, tenant, id string) error
	SearchDatasets(ctx context.Context, tenant string, q DatasetQuery) ([]Dataset, error)
	// AddCases adds cases in one new version; an ID a current case has
	// is ErrConflict, one repeated in cases ErrInvalid.
	AddCases(ctx context.Context, tenant, id string, cases []DatasetCase) (Dataset, error)
	// ReplaceCase replaces the content of a current case in a new
	// version; ErrNotFound when the dataset has no such current case.
	ReplaceCase(ctx context.Context, tenant, id string, c DatasetCase) (Dataset, error)
	// RemoveCase removes a current case in a new version.
	RemoveCase(ctx context.Context, tenant, id, caseID string) (Dataset, error)
	// DatasetCases returns the cases as of version (0: the latest), in
	// the order they were first added; a version the dataset never had
	// is ErrNotFound.
	DatasetCases(ctx context.Context, tenant, id string, version int) ([]DatasetCase, error)
}

// Feedback is a person's judgement of a run: a key ("user_score" by
// default in the service), a score in [0, 1] (1 thumbs up, 0 down) or
// none, any JSON value, a comment, a correction (what the answer should
// have been, any JSON) and optionally the message of the run it is about.
// Source says who gave it (FeedbackPerson, FeedbackEvaluator, FeedbackAPI).
type Feedback struct {
	ID         string
	ThreadID   string
	RunID      string
	Key        string
	Score      *float64
	Value      json.RawMessage // nil when none
	Comment    string
	Correction json.RawMessage // nil when none
	MessageID  string
	// Source is who gave the feedback; "" stores FeedbackAPI.
	Source    string
	CreatedAt time.Time
}

// Sources of feedback.
const (
	// FeedbackPerson: a person on the page (thumbs, a comment).
	FeedbackPerson = "person"
	// FeedbackEvaluator: an online evaluator scoring a sampled run.
	FeedbackEvaluator = "evaluator"
	// FeedbackAPI: a client of the API that did not say (the default).
	FeedbackAPI = "api"
)

// SourceOrDefault is f.Source, or FeedbackAPI when it is empty.
func (f Feedback) SourceOrDefault() string {
	if f.Source == "" {
		return FeedbackAPI
	}
	return f.Source
}

// RunFeedback stores feedback on runs. It goes with its run: deleting the
// run or its thread deletes it.
type RunFeedback interface {
	// CreateFeedback stores f (a new ID when f.ID is empty); the run
	// must exist on f.ThreadID for the tenant (ErrNotFound).
	CreateFeedback(ctx context.Context, tenant string, f Feedback) (Feedback, error)
	// ListFeedback lists a run's feedback, oldest first; ErrNotFound when
	// the run does not exist on the thread.
	ListFeedback(ctx context.Context, tenant, threadID, runID string) ([]Feedback, error)
	DeleteFeedback(ctx context.Context, tenant, threadID, runID, feedbackID string) error
}
