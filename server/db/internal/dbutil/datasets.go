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
