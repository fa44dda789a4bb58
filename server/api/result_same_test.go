package api

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/trellis-agents/trellis/server/api/wire"
	"github.com/trellis-agents/trellis/server/db"
)

// oldResult is result as it was before it kept the values unparsed: the
// oracle for TestResultSameAsBefore.
type oldResult struct {
	values    map[string]json.RawMessage
	interrupt json.RawMessage
	failure   json.RawMessage
}

func (c *oldResult) add(ev db.Event) {
	base, ns, _ := strings.Cut(ev.Event, "|")
	if ns != "" {
		return
	}
	switch base {
	case "values", "updates":
		var obj map[string]json.RawMessage
		if json.Unmarshal(ev.Data, &obj) != nil {
			return
		}
		if in, ok := obj["__interrupt__"]; ok && len(obj) == 1 {
			c.interrupt = in
			return
		}
		if base == "values" {
			c.values, c.interrupt = obj, nil
		}
	case "error":
		c.failure = ev.Data
	}
}

// answerBody is what answer writes for the events, with thread as the
// thread's values and runFailed as the run's status being error: the
// answer before (old) and now.
func answerBody(t *testing.T, events []db.Event, thread string, runFailed, old bool) string {
	t.Helper()
	req := httptest.NewRequest(http.MethodPost, "/runs/wait", nil)
	w := httptest.NewRecorder()
	failure := func() json.RawMessage {
		if !runFailed {
			return nil
		}
		b, _ := json.Marshal(wire.RunFailure{Error: "RunError", Message: "boom"})
		return b
	}
	threadValues := func(out map[string]json.RawMessage) {
		if thread != "" {
			_ = json.Unmarshal([]byte(thread), &out)
		}
	}
	if old {
		var c oldResult
		for _, ev := range events {
			c.add(ev)
		}
		out := c.values
		if out == nil {
			out = map[string]json.RawMessage{}
			threadValues(out)
		}
		if c.interrupt != nil {
			out["__interrupt__"] = c.interrupt
		}
		if c.failure == nil {
			c.failure = failure()
		}
		if c.failure != nil {
			out["__error__"] = c.failure
		}
		wire.WriteJSON(w, req, http.StatusOK, out)
		return w.Body.String()
	}
	var c result
	for _, ev := range events {
		c.add(ev)
	}
	c.write(w, req, failure, func() []byte { return []byte(thread) })
	return w.Body.String()
}

// TestResultSameAsBefore: for runs' event sequences (values, updates,
// interrupts, errors, subgraph events, data that does not parse or is not
// canonical), the runs/wait answer is byte for byte what it was when every
// event was parsed and the answer encoded again.
func TestResultSameAsBefore(t *testing.T) {
	ev := func(name, data string) db.Event { return db.Event{Event: name, Data: []byte(data)} }
	seqs := [][]db.Event{
		{},
		{ev("metadata", `{"run_id":"r"}`), ev("values", `{"log":["hi"]}`), ev("values", `{"log":["hi","echo hi"]}`)},
		{ev("values", `{"b":1,"a":"<x>"}`)},
		{ev("values", `{ "a" : 1 }`)},
		{ev("values", `{"a":1}`), ev("values", `not json`)},
		{ev("values", `{"a":1}`), ev("values", `[1,2]`)},
		{ev("values", `{"a":1}`), ev("values", `null`)},
		{ev("values", `{"a":1}`), ev("updates", `{"__interrupt__":[{"value":"ask"}]}`)},
		{ev("values", `{"a":1}`), ev("values", `{"__interrupt__":[{"value":"ask"}]}`)},
		{ev("values", `{"a":1}`), ev("values", `{"\u005f_interrupt__":[{"value":"ask"}]}`)},
		{ev("values", `{"a":1}`), ev("updates", `{"__interrupt__":[1]}`), ev("values", `{"a":2}`)},
		{ev("values", `{"a":1,"__interrupt__":[1]}`)},
		{ev("values", `{"a":1}`), ev("updates", `{"node":{"a":2}}`)},
		{ev("values", `{"a":1}`), ev("values|sub:1", `{"z":9}`)},
		{ev("values", `{"a":1}`), ev("error", `{"error":"ValueError","message":"bad"}`)},
		{ev("updates", `{"__interrupt__":[1]}`)},
		{ev("values", `{"a":"x\u2028y"}`)},
		{ev("values", `{"a":1,"a":2}`)},
		{ev("values", `{}`)},
	}
	for _, thread := range []string{"", `{"from":"thread"}`} {
		for _, failed := range []bool{false, true} {
			for i, seq := range seqs {
				before, now := answerBody(t, seq, thread, failed, true), answerBody(t, seq, thread, failed, false)
				if before != now {
					t.Errorf("sequence %d (thread %q, failed %v): answered %s, before %s", i, thread, failed, now, before)
				}
			}
		}
	}
}
