package tool_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/tool"
)

func TestPolicyMatrix(t *testing.T) {
	read := tool.Info{Name: "read", ReadOnly: true}
	write := tool.Info{Name: "write"}
	small := func(args json.RawMessage) bool { return string(args) == `{"n":1}` }
	cases := []struct {
		name   string
		policy tool.Policy
		info   tool.Info
		args   string
		asks   bool
	}{
		{"read, no rule", nil, read, `{}`, false},
		{"write, no rule: fails closed", nil, write, `{}`, true},
		{"write, rule for another tool", tool.Policy{"other": tool.AutoApprove()}, write, `{}`, true},
		{"write, auto-approve", tool.Policy{"write": tool.AutoApprove()}, write, `{}`, false},
		{"write, require approval", tool.Policy{"write": tool.RequireApproval()}, write, `{}`, true},
		{"write, predicate true", tool.Policy{"write": tool.ApproveIf(small)}, write, `{"n":1}`, false},
		{"write, predicate false", tool.Policy{"write": tool.ApproveIf(small)}, write, `{"n":2}`, true},
		{"write, nil predicate", tool.Policy{"write": tool.ApproveIf(nil)}, write, `{}`, true},
		{"write, predicate panics", tool.Policy{"write": tool.ApproveIf(func(json.RawMessage) bool { panic("x") })}, write, `{}`, true},
		{"write, zero rule", tool.Policy{"write": {}}, write, `{}`, true},
		{"read, require approval wins", tool.Policy{"read": tool.RequireApproval()}, read, `{}`, true},
		{"read, predicate false wins", tool.Policy{"read": tool.ApproveIf(small)}, read, `{"n":2}`, true},
	}
	for _, tc := range cases {
		if got := tc.policy.NeedsApproval(tc.info, json.RawMessage(tc.args)); got != tc.asks {
			t.Errorf("%s: NeedsApproval = %v, want %v", tc.name, got, tc.asks)
		}
	}
}

// Decisions and requests cross processes as JSON.
func TestApprovalJSON(t *testing.T) {
	for _, d := range []tool.Decision{tool.Approve(), tool.Edit(json.RawMessage(`{"a":1}`)), tool.Reject("no")} {
		var back tool.Decision
		if err := json.Unmarshal(mustJSON(t, d), &back); err != nil || !cmp.Equal(d, back) {
			t.Errorf("%v round-trips to %v (%v)", d, back, err)
		}
	}
	for _, tc := range []struct {
		d    tool.Decision
		want string
	}{{tool.Approve(), "approve"}, {tool.Edit(json.RawMessage(`{"a":1}`)), `edit {"a":1}`}, {tool.Reject("no"), `reject "no"`}} {
		if got := tc.d.String(); got != tc.want {
			t.Errorf("String = %q, want %q", got, tc.want)
		}
	}
	if got := string(mustJSON(t, tool.Edit(json.RawMessage(`{"a":1}`)))); got != `{"action":"edit","arguments":{"a":1}}` {
		t.Errorf("edit encodes as %s", got)
	}
	req := tool.ApprovalRequest{Kind: tool.ApprovalKind, CallID: "c", Tool: "t", Arguments: json.RawMessage(`{}`), Summary: "s", Problem: "p"}
	got, ok := tool.ApprovalFrom(graph.InterruptInfo{Payload: mustJSON(t, req)})
	if !ok || !cmp.Equal(req, got) {
		t.Errorf("ApprovalFrom = %+v, %v", got, ok)
	}
	for _, p := range []string{`"text"`, `{"kind":"other"}`, `not json`, ``} {
		if _, ok := tool.ApprovalFrom(graph.InterruptInfo{Payload: json.RawMessage(p)}); ok {
			t.Errorf("ApprovalFrom accepted %s", p)
		}
	}
}

// People answer approvals plainly: true/false, approve/reject, 是/否.
func TestDecisionPlainAnswers(t *testing.T) {
	for in, want := range map[string]tool.Decision{
		`true`: tool.Approve(), `"approve"`: tool.Approve(), `"Accept"`: tool.Approve(), `"确认"`: tool.Approve(), `"是"`: tool.Approve(),
		`false`: tool.Reject(""), `"reject"`: tool.Reject(""), `"否"`: tool.Reject(""), `"拒绝"`: tool.Reject(""),
		`{"action":"edit","arguments":{"a":1}}`:   tool.Edit(json.RawMessage(`{"a":1}`)),
		`{"action":"reject","message":"not now"}`: tool.Reject("not now"),
	} {
		var d tool.Decision
		if err := json.Unmarshal([]byte(in), &d); err != nil || d.String() != want.String() {
			t.Errorf("%s: %v %v, want %v", in, d, err, want)
		}
	}
	var d tool.Decision
	if err := json.Unmarshal([]byte(`"maybe"`), &d); err == nil || !strings.Contains(err.Error(), "approve") {
		t.Errorf("a word that is not a decision: err = %v", err)
	}
}
