package dbutil

import (
	"bytes"
	"encoding/json"
	"math"
	"strings"

	"github.com/trellis-agents/trellis/server/db"
)

// Dataset checks a dataset's fields and returns its metadata and criteria
// encoded ("[]" for no criteria).
func Dataset(d db.Dataset) (md, criteria []byte, err error) {
	if strings.TrimSpace(d.Name) == "" {
		return nil, nil, Invalid("a dataset needs a name")
	}
	if md, err = EncodeMetadata(d.Metadata); err != nil {
		return nil, nil, err
	}
	criteria = bytes.TrimSpace(d.Criteria)
	if len(criteria) == 0 || string(criteria) == "null" {
		return md, []byte("[]"), nil
	}
	var list []json.RawMessage
	if err := json.Unmarshal(criteria, &list); err != nil {
		return nil, nil, Invalid("criteria must be a JSON array, not %s", short(criteria))
	}
	return md, criteria, nil
}

// Cases checks cases to add or replace: each has an ID, the IDs do not
// repeat, and each case's data is a JSON object.
func Cases(cases []db.DatasetCase) error {
	seen := map[string]bool{}
	for _, c := range cases {
		if strings.TrimSpace(c.ID) == "" {
			return Invalid("a case needs an ID")
		}
		if seen[c.ID] {
			return Invalid("case %q appears twice", c.ID)
		}
		seen[c.ID] = true
		if _, err := Object("case "+c.ID, c.Data); err != nil || len(bytes.TrimSpace(c.Data)) == 0 {
			return Invalid("case %q must be a JSON object", c.ID)
		}
	}
	return nil
}

// Feedback checks feedback and returns its score, value and correction
// as stored JSON (nil for none).
func Feedback(f db.Feedback) (score, value, correction []byte, err error) {
	if f.ThreadID == "" || f.RunID == "" {
		return nil, nil, nil, Invalid("feedback needs a thread and a run")
	}
	if strings.TrimSpace(f.Key) == "" {
		return nil, nil, nil, Invalid("feedback needs a key")
	}
	if f.Score != nil {
		s := *f.Score
		if math.IsNaN(s) || s < 0 || s > 1 {
			return nil, nil, nil, Invalid("the score %v is not in [0, 1]", s)
		}
		score, _ = json.Marshal(s)
	}
	if value, err = OptionalJSON("value", f.Value); err != nil {
		return nil, nil, nil, err
	}
	if correction, err = OptionalJSON("correction", f.Correction); err != nil {
		return nil, nil, nil, err
	}
	return score, value, correction, nil
}

// DecodeScore decodes a stored score (nil when NULL).
func DecodeScore(b []byte) (*float64, error) {
	if len(b) == 0 {
		return nil, nil
	}
	var s float64
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, err
	}
	return &s, nil
}

// Experiment checks an experiment before it is stored and encodes its
// metadata.
func Experiment(e db.Experiment) (md []byte, err error) {
	switch {
	case e.DatasetID == "" || e.AssistantID == "":
		return nil, Invalid("an experiment needs a dataset and an assistant")
	case e.DatasetVersion < 1:
		return nil, Invalid("dataset version %d is not positive", e.DatasetVersion)
	case e.AssistantVersion < 0:
		return nil, Invalid("assistant version %d is negative (0 runs the latest)", e.AssistantVersion)
	case e.Repetitions < 1 || e.Concurrency < 1:
		return nil, Invalid("repetitions %d and concurrency %d must be positive", e.Repetitions, e.Concurrency)
	case e.Total < 0 || e.Total > db.MaxExperimentUnits:
		return nil, Invalid("an experiment has at most %d units, this one %d", db.MaxExperimentUnits, e.Total)
	case e.Criteria != nil && !json.Valid(e.Criteria):
		return nil, Invalid("the experiment's criteria are not JSON")
	}
	return EncodeMetadata(e.Metadata)
}

// ExperimentUpdate checks a status change.
func ExperimentUpdate(u db.ExperimentUpdate) error {
	if !u.Status.Valid() {
		return Invalid("unknown experiment status %q", u.Status)
	}
	if len(u.Summary) > 0 && !json.Valid(u.Summary) {
		return Invalid("the experiment summary is not JSON")
	}
	return nil
}

// ExperimentResult checks a unit's result.
func ExperimentResult(r db.ExperimentResult) error {
	switch {
	case r.ExperimentID == "" || r.CaseID == "":
		return Invalid("a result needs its experiment and case")
	case r.Repetition < 0:
		return Invalid("repetition %d is negative", r.Repetition)
	case !json.Valid(r.Data):
		return Invalid("the result of case %q is not JSON", r.CaseID)
	}
	return nil
}
