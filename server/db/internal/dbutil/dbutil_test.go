package dbutil

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/trellis-agents/trellis/server/db"
)

func TestContainment(t *testing.T) {
	for _, c := range ContainmentCases {
		f, err := ObjectFilter("values", json.RawMessage(c.Filter))
		if err != nil {
			t.Fatalf("filter %s: %v", c.Filter, err)
		}
		if got := f.Match([]byte(c.Doc)); got != c.Want {
			t.Errorf("%s contains %s = %v, want %v", c.Doc, c.Filter, got, c.Want)
		}
	}
}

func TestMatchRejectsBadDocuments(t *testing.T) {
	f, err := ObjectFilter("values", json.RawMessage(`{"a":1}`))
	if err != nil {
		t.Fatal(err)
	}
	for _, doc := range []string{``, `{`, `[{"a":1}]`, `null`} {
		if f.Match([]byte(doc)) {
			t.Errorf("a filter matched the document %q", doc)
		}
	}
}

func TestValidation(t *testing.T) {
	for name, err := range map[string]error{
		"negative offset": func() error { _, _, err := Page(1, -1); return err }(),
		"sort column":     func() error { _, _, err := Order(db.Query{SortBy: "x"}, ThreadSort); return err }(),
		"object":          func() error { _, err := Object("config", json.RawMessage(`1`)); return err }(),
		"filter":          func() error { _, err := ObjectFilter("values", json.RawMessage(`[]`)); return err }(),
		"status":          ThreadStatus("x", true),
		"terminal":        TerminalStatus(db.RunPending),
		"action":          CancelAction("stop"),
		"tenant":          Tenant(""),
	} {
		if !errors.Is(err, db.ErrInvalid) {
			t.Errorf("%s: %v, want ErrInvalid", name, err)
		}
	}
	if l, o, err := Page(0, 3); err != nil || l != DefaultLimit || o != 3 {
		t.Errorf("Page(0, 3) = %d, %d, %v; want the default limit", l, o, err)
	}
	md, err := DecodeMetadata([]byte(`null`))
	if err == nil {
		t.Errorf("DecodeMetadata(null) = %v, want an error", md)
	}
}
