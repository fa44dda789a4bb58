package tool_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/trellis-agents/trellis/checkpoint"
	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/tool"
)

// An approval answered in LangChain's human-in-the-loop shape
// ({decisions: [one]}) runs as the same Decision: approve, edit with
// edited_action.args, reject with its message.
func TestApprovalAnsweredWithDecisions(t *testing.T) {
	cases := []struct {
		name, answer, want string
	}{
		{"approve", `{"decisions":[{"type":"approve"}]}`, "c2:echo:b"},
		{"edit", `{"decisions":[{"type":"edit","edited_action":{"name":"send","args":{"text":"z"}}}]}`,
			`c2:Note: a person changed the arguments of this call before it ran; it ran with {"text":"z"}.` + "\n\necho:z"},
		{"reject", `{"decisions":[{"type":"reject","message":"not today"}]}`, "!c2:A person rejected this call, so it was not run. Their message: not today"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var c counter
			_, g := approvalSetup(t, &c)
			opts := threadOpts(checkpoint.NewMemory(), "t")
			res, err := g.Invoke(context.Background(), userInput("go"), opts...)
			if !isInterrupted(err) || len(res.Interrupts) != 1 {
				t.Fatalf("err = %v, interrupts %+v", err, res.Interrupts)
			}
			validate(t, res.Interrupts[0].Schema, tc.answer, true)
			res, err = g.Invoke(context.Background(), nil, append(opts, graph.WithResume(json.RawMessage(tc.answer)))...)
			if err != nil {
				t.Fatal(err)
			}
			if got := summarize(msgsKey.Get(res.State)); len(got) != 2 || got[1] != tc.want {
				t.Errorf("tool messages %q, want c2's to be %q", got, tc.want)
			}
		})
	}
}

// A decisions answer that does not fit — not one decision, a type not
// allowed, an edit of another tool or without args — is refused by the
// interrupt's schema (the server answers 422 and the thread keeps
// waiting), and the node never reads it as an approval.
func TestDecisionsThatDoNotFit(t *testing.T) {
	var c counter
	_, g := approvalSetup(t, &c)
	res, err := g.Invoke(context.Background(), userInput("go"), threadOpts(checkpoint.NewMemory(), "t")...)
	if !isInterrupted(err) {
		t.Fatal(err)
	}
	schema := res.Interrupts[0].Schema
	for _, bad := range []string{
		`{"decisions":[]}`,
		`{"decisions":[{"type":"approve"},{"type":"approve"}]}`,
		`{"decisions":[{"type":"maybe"}]}`,
		`{"decisions":[{"type":"edit","edited_action":{"name":"lookup","args":{"text":"z"}}}]}`,
		`{"decisions":[{"type":"edit"}]}`,
	} {
		validate(t, schema, bad, false)
		var d tool.Decision
		if err := json.Unmarshal([]byte(bad), &d); err == nil && (d.Action != tool.ActionEdit || d.Tool != "lookup") {
			t.Errorf("%s decoded as %v without an error", bad, d)
		}
	}
}

func validate(t *testing.T, schema json.RawMessage, answer string, want bool) {
	t.Helper()
	var s jsonschema.Schema
	if err := json.Unmarshal(schema, &s); err != nil {
		t.Fatal(err)
	}
	rs, err := s.Resolve(nil)
	if err != nil {
		t.Fatal(err)
	}
	var v any
	_ = json.Unmarshal([]byte(answer), &v)
	if err := rs.Validate(v); (err == nil) != want {
		t.Errorf("schema check of %s: %v, want fits=%v (schema %s)", answer, err, want, strings.TrimSpace(string(schema))[:80])
	}
}
