package wire

import (
	"encoding/json"
	"fmt"
	"math"
)

// Evaluation datasets and run feedback (Trellis's own bodies: unknown
// fields are refused). A case is an eval.Case object and a criterion an
// eval.Criterion object, checked by the eval package (docs/eval.md): the
// schemas here leave them open, the handlers refuse what eval refuses,
// naming the field.

// DatasetCreate is the body of POST /datasets.
type DatasetCreate struct {
	// Name is unique among the tenant's datasets. Required.
	Name        string   `json:"name"`
	Description string   `json:"description,omitempty"`
	Metadata    Metadata `json:"metadata,omitempty"`
	// Criteria are the default criteria of every case (eval.Criterion
	// objects: evaluator, threshold, params).
	Criteria []json.RawMessage `json:"criteria,omitempty"`
	// Cases are the first version's cases (eval.Case objects); a case
	// without an "id" gets a new one.
	Cases []json.RawMessage `json:"cases,omitempty"`
}

// Strict refuses unknown fields.
func (*DatasetCreate) Strict() {}

// Validate checks the name.
func (b *DatasetCreate) Validate() []FieldError {
	return nonEmpty("/name", b.Name, "the dataset's name")
}

// DatasetPatch is the body of PATCH /datasets/{dataset_id}. Absent fields
// keep their value; it makes no new version (only case changes do).
type DatasetPatch struct {
	Name        *string `json:"name,omitempty"`
	Description *string `json:"description,omitempty"`
	// Metadata is merged into the dataset's, key by key.
	Metadata Metadata `json:"metadata,omitempty"`
	// Criteria, when present, replace the default criteria.
	Criteria []json.RawMessage `json:"criteria,omitempty"`
}

// Strict refuses unknown fields.
func (*DatasetPatch) Strict() {}

// Validate checks a new name is not empty.
func (b *DatasetPatch) Validate() []FieldError {
	if b.Name != nil {
		return nonEmpty("/name", *b.Name, "the dataset's name")
	}
	return nil
}

// DatasetSearch is the body of POST /datasets/search.
type DatasetSearch struct {
	// Name keeps datasets whose name contains it, case-insensitive.
	Name string `json:"name,omitempty"`
	// Limit is the page size, 1 to MaxLimit (default DefaultLimit).
	Limit  *int `json:"limit,omitempty"`
	Offset int  `json:"offset,omitempty"`
}

// Strict refuses unknown fields.
func (*DatasetSearch) Strict() {}

// Validate checks limit and offset.
func (b *DatasetSearch) Validate() []FieldError { return pageErrors("", b.Limit, b.Offset) }

// DatasetCasesAdd is the body of POST /datasets/{dataset_id}/cases.
type DatasetCasesAdd struct {
	// Cases are eval.Case objects, added in one new version; a case
	// without an "id" gets a new one. At least one.
	Cases []json.RawMessage `json:"cases"`
}

// Strict refuses unknown fields.
func (*DatasetCasesAdd) Strict() {}

// Validate checks there is a case.
func (b *DatasetCasesAdd) Validate() []FieldError {
	if len(b.Cases) == 0 {
		return []FieldError{{Pointer: "/cases", Detail: "must hold at least one case"}}
	}
	return nil
}

// DatasetCasesQuery is the query of GET /datasets/{dataset_id}/cases.
type DatasetCasesQuery struct {
	// Version is the version to read (default the latest).
	Version int `json:"version,omitempty"`
}

// Validate checks the version.
func (q *DatasetCasesQuery) Validate() []FieldError {
	if q.Version < 0 {
		return []FieldError{{Pointer: "/version", Detail: fmt.Sprintf("must be 1 or more, not %d", q.Version)}}
	}
	return nil
}

// DatasetExportQuery is the query of GET /datasets/{dataset_id}/export.
type DatasetExportQuery = DatasetCasesQuery

// Dataset is a dataset as the service shows it.
type Dataset struct {
	DatasetID   string   `json:"dataset_id"`
	Name        string   `json:"name"`
	Description string   `json:"description"`
	Metadata    Metadata `json:"metadata"`
	// Criteria are the default criteria (eval.Criterion objects).
	Criteria json.RawMessage `json:"criteria"`
	// Version is the latest version: 1 at creation, one more with every
	// change of the cases.
	Version int `json:"version"`
	// CaseCount counts the latest version's cases.
	CaseCount int  `json:"case_count"`
	CreatedAt Time `json:"created_at"`
	UpdatedAt Time `json:"updated_at"`
}

// DatasetCases is the answer of GET /datasets/{dataset_id}/cases.
type DatasetCases struct {
	DatasetID string `json:"dataset_id"`
	// Version is the version read.
	Version int `json:"version"`
	// Cases are eval.Case objects, in the order they were first added.
	Cases []json.RawMessage `json:"cases"`
}

// FeedbackCreate is the body of POST
// /threads/{thread_id}/runs/{run_id}/feedback.
type FeedbackCreate struct {
	// Key names what is judged (default "user_score").
	Key string `json:"key,omitempty"`
	// Score is in [0, 1]: 1 thumbs up, 0 thumbs down.
	Score *float64 `json:"score,omitempty"`
	// Value is any JSON judgement (a label, a rating).
	Value json.RawMessage `json:"value,omitempty"`
	// Comment is the person's words.
	Comment string `json:"comment,omitempty"`
	// Correction is what the answer should have been (any JSON).
	Correction json.RawMessage `json:"correction,omitempty"`
	// MessageID is the message of the run the feedback is about.
	MessageID string `json:"message_id,omitempty"`
	// Source says who gives it (default "api"): "person" for a person's
	// thumbs or comment, "evaluator" for an automatic score.
	Source FeedbackSource `json:"source,omitempty"`
}

// Strict refuses unknown fields.
func (*FeedbackCreate) Strict() {}

// FeedbackSource is who gave a feedback entry.
type FeedbackSource string

// Values lists the allowed values.
func (FeedbackSource) Values() []string { return []string{"person", "evaluator", "api"} }

// FeedbackListQuery is the query of GET
// /threads/{thread_id}/runs/{run_id}/feedback.
type FeedbackListQuery struct {
	// Source keeps only the entries of that source.
	Source FeedbackSource `json:"source,omitempty"`
}

// Validate checks the score.
func (b *FeedbackCreate) Validate() []FieldError {
	if b.Score != nil && (math.IsNaN(*b.Score) || *b.Score < 0 || *b.Score > 1) {
		return []FieldError{{Pointer: "/score", Detail: fmt.Sprintf("must be between 0 and 1 (1 thumbs up, 0 down), not %v", *b.Score)}}
	}
	return nil
}

// Feedback is one feedback entry on a run.
type Feedback struct {
	FeedbackID string          `json:"feedback_id"`
	ThreadID   string          `json:"thread_id"`
	RunID      string          `json:"run_id"`
	Key        string          `json:"key"`
	Score      *float64        `json:"score"`
	Value      json.RawMessage `json:"value"`
	Comment    string          `json:"comment"`
	Correction json.RawMessage `json:"correction"`
	MessageID  string          `json:"message_id"`
	// Source is who gave it: "person", "evaluator" or "api".
	Source    string `json:"source"`
	CreatedAt Time   `json:"created_at"`
}
