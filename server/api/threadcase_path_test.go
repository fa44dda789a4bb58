package api

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/trellis-agents/trellis/server/internal/transcript"
)

// The recorded trajectory is the agent's own calls in order: its
// messages' and its plan steps' (once, even when asked again after an
// approval), not a nested agent's nor the events of calls its messages
// already hold.
func TestCaseTrajectory(t *testing.T) {
	ev := func(ns, data string) transcript.Turn {
		return transcript.Turn{Kind: transcript.KindEvent, Namespace: ns, Data: json.RawMessage(data)}
	}
	msg := func(data string) transcript.Turn {
		return transcript.Turn{Kind: transcript.KindMessage, Message: json.RawMessage(data)}
	}
	turns := []transcript.Turn{
		msg(`{"type":"human","content":"go","id":"h1"}`),
		msg(`{"type":"ai","content":"","id":"a1","tool_calls":[{"id":"c1","name":"lookup","args":{"q":"x"}}]}`),
		msg(`{"type":"tool","content":"found","tool_call_id":"c1","id":"t1"}`),
		ev("", `{"kind":"tool_call","tool":{"call_id":"c1","name":"lookup"}}`), // no step: in the messages already
		ev("step:1", `{"kind":"tool_call","step_id":"s1","tool":{"call_id":"k1","name":"book","arguments":{"day":1}}}`),
		ev("step:1", `{"kind":"tool_call","step_id":"s1","tool":{"call_id":"k1","name":"book","arguments":{"day":1}}}`), // after its approval
		ev("step:1", `{"kind":"tool_result","step_id":"s1","tool":{"call_id":"k1","name":"book","result":"booked"}}`),
		ev("sub:2|step:3", `{"kind":"tool_call","step_id":"s9","tool":{"call_id":"n1","name":"inner"}}`), // a sub-agent's
		ev("step:4", `{"kind":"step_finished","step_id":"s1"}`),
	}
	got := caseTrajectory(turns)
	var names []string
	for _, c := range got {
		names = append(names, c.Name+":"+c.Status)
	}
	if want := []string{"lookup:ok", "book:ok"}; !slices.Equal(names, want) {
		t.Fatalf("trajectory %v, want %v", names, want)
	}
	if string(got[1].Args) != `{"day":1}` || got[1].Result != "booked" {
		t.Errorf("the step's call: %+v", got[1])
	}
}
