package evaluators_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/trellis-agents/trellis/eval"
	"github.com/trellis-agents/trellis/eval/evaltest"
	"github.com/trellis-agents/trellis/eval/evaluators"
	"github.com/trellis-agents/trellis/llm"
)

type row struct {
	name      string
	evaluator string
	params    string
	c         eval.Case
	th        *eval.Thread
	want      float64
	explain   string // a substring of the explanation
}

func run(t *testing.T, rows []row) {
	t.Helper()
	for _, r := range rows {
		t.Run(r.name, func(t *testing.T) {
			c := r.c
			s, err := evaltest.Evaluate(context.Background(), r.evaluator, r.params, evaltest.Trial(&c, r.th))
			if err != nil {
				t.Fatalf("evaluate: %v", err)
			}
			if diff := s.Value - r.want; diff > 1e-9 || diff < -1e-9 {
				t.Fatalf("score %v, want %v (%s)", s.Value, r.want, s.Explanation)
			}
			if !strings.Contains(s.Explanation, r.explain) {
				t.Fatalf("explanation %q does not mention %q", s.Explanation, r.explain)
			}
		})
	}
}

func answer(text string) *eval.Thread {
	return evaltest.NewThread().User("q").Assistant(text).Build()
}

func out(s string) eval.Expectations {
	b, _ := json.Marshal(s)
	return eval.Expectations{Output: b}
}

func TestOutputEvaluators(t *testing.T) {
	run(t, []row{
		{"exact pass", "exact", "", eval.Case{Expect: out("Paris")}, answer(" Paris\n"), 1, "equals"},
		{"exact fail", "exact", "", eval.Case{Expect: out("Paris")}, answer("paris"), 0, "differs"},
		{"exact ignore case", "exact", `{"ignore_case":true}`, eval.Case{Expect: out("Paris")}, answer("PARIS"), 1, ""},
		{"exact no trim", "exact", `{"value":"a","no_trim":true}`, eval.Case{}, answer("a "), 0, ""},
		{"exact json output", "exact", "", eval.Case{Expect: eval.Expectations{Output: json.RawMessage(`{"n":1,"a":[true]}`)}}, answer(`{"a":[true],"n":1.0}`), 1, "JSON"},
		{"exact no reference", "exact", "", eval.Case{}, answer("x"), 0, "no expected output"},
		{"exact state output", "exact", "", eval.Case{Expect: eval.Expectations{Output: json.RawMessage(`{"total":3}`)}},
			evaltest.NewThread().State("total", "3").Build(), 1, ""},
		{"contains all", "contains", `{"values":["Mon","Tue"]}`, eval.Case{}, answer("Mon and Tue"), 1, "every check"},
		{"contains half", "contains", `{"values":["Mon","Tue"]}`, eval.Case{}, answer("Mon only"), 0.5, "Tue"},
		{"contains any", "contains", `{"values":["Mon","Tue"],"any":true}`, eval.Case{}, answer("Tue"), 1, ""},
		{"contains absent", "contains", `{"absent":["sent"]}`, eval.Case{}, answer("I sent it"), 0, "must not contain"},
		{"contains case", "contains", `{"values":["mon"],"ignore_case":true}`, eval.Case{}, answer("MON"), 1, ""},
		{"contains reference", "contains", "", eval.Case{Expect: out("42")}, answer("it is 42."), 1, ""},
		{"regex match", "regex", `{"pattern":"(?i)^the answer is \\d+"}`, eval.Case{}, answer("The answer is 7"), 1, "matches"},
		{"regex miss", "regex", `{"pattern":"\\d{3}"}`, eval.Case{}, answer("no digits"), 0, "does not match"},
		{"regex absent", "regex", `{"pattern":"DROP TABLE","absent":true}`, eval.Case{}, answer("DROP TABLE x"), 0, "must not"},
		{"schema ok", "json_schema", `{"schema":{"type":"object","required":["rows"],"properties":{"rows":{"type":"integer","minimum":0}}}}`, eval.Case{}, answer("Here:\n```json\n{\"rows\": 3}\n```"), 1, "matches"},
		{"schema bad", "json_schema", `{"schema":{"type":"object","required":["rows"]}}`, eval.Case{}, answer(`{"count": 3}`), 0, "rows"},
		{"schema no json", "json_schema", `{"schema":{"type":"object"}}`, eval.Case{}, answer("no json here"), 0, "no JSON"},
		{"subset ok", "json_subset", `{"value":{"a":{"b":1},"c":[1,2]}}`, eval.Case{}, answer(`{"a":{"b":1.0,"x":2},"c":[1,2],"d":0}`), 1, "contains"},
		{"subset missing", "json_subset", "", eval.Case{Expect: eval.Expectations{Output: json.RawMessage(`{"a":{"b":2}}`)}}, answer(`{"a":{"b":1}}`), 0, "a.b"},
		{"subset array length", "json_subset", `{"value":{"c":[1]}}`, eval.Case{}, answer(`{"c":[1,2]}`), 0, "want 1 elements"},
		{"subset of a state key", "json_subset", `{"state":"steps","value":{"book":{"status":"done"}}}`, eval.Case{},
			evaltest.NewThread().User("q").Assistant("done").State("steps", `{"book":{"status":"done","result":"ok"}}`).Build(), 1, `state's "steps"`},
		{"subset of a missing state key", "json_subset", `{"state":"plan","value":{}}`, eval.Case{}, answer("x"), 0, `no key "plan"`},
		{"schema of a state key", "json_schema", `{"state":"plans","schema":{"type":"array","minItems":2}}`, eval.Case{},
			evaltest.NewThread().State("plans", `[{"tool":"a"}]`).Build(), 0, "minItems"},
	})
}

func TestBadParams(t *testing.T) {
	for _, c := range []eval.Criterion{
		{Evaluator: "exact", Params: json.RawMessage(`{"valu":"x"}`)},
		{Evaluator: "regex", Params: json.RawMessage(`{"pattern":"("}`)},
		{Evaluator: "regex"},
		{Evaluator: "contains", Params: json.RawMessage(`{"values":[""]}`)},
		{Evaluator: "json_schema", Params: json.RawMessage(`{"schema":{"type":12}}`)},
		{Evaluator: "tool_trajectory", Params: json.RawMessage(`{"match":"sometimes"}`)},
		{Evaluator: "tool_trajectory", Params: json.RawMessage(`{"args":"loose"}`)},
		{Evaluator: "llm_judge", Params: json.RawMessage(`{"scale":{"min":5,"max":1}}`)},
		{Evaluator: "interrupts"},
		{Evaluator: "interrupts", Params: json.RawMessage(`{"min":3,"max":1}`)},
		{Evaluator: "budget"},
		{Evaluator: "budget", Params: json.RawMessage(`{"max_cost":1}`)},
		{Evaluator: "budget", Params: json.RawMessage(`{"max_latency":"soon"}`)},
	} {
		if _, err := eval.New(c); err == nil || !strings.Contains(err.Error(), c.Evaluator) {
			t.Errorf("%s %s: want an error naming the evaluator, got %v", c.Evaluator, c.Params, err)
		}
	}
	e, _ := eval.New(eval.Criterion{Evaluator: "exact"})
	if _, err := e.Evaluate(context.Background(), eval.Trial{Case: &eval.Case{}}); err == nil {
		t.Error("a trial without a thread must be an error, not a score")
	}
}

func TestRegistered(t *testing.T) {
	names := eval.Evaluators()
	for _, n := range []string{"exact", "contains", "regex", "json_schema", "json_subset", "tool_trajectory", "node_path",
		"response_match", "llm_judge", "interrupts", "rejections_honoured", "budget"} {
		found := false
		for _, m := range names {
			found = found || m == n
		}
		if !found {
			t.Errorf("%s is not registered (have %v)", n, names)
		}
	}
}

func TestToolTrajectory(t *testing.T) {
	th := evaltest.NewThread().User("q").
		Call("search", `{"q":"a","limit":5}`, "r").
		Call("lookup", `{"id":1}`, "r").
		Call("search", `{"q":"b"}`, "r").
		Assistant("done").Build()
	exp := func(calls ...eval.ToolCall) eval.Case { return eval.Case{Expect: eval.Expectations{ToolCalls: calls}} }
	s := func(name, args string) eval.ToolCall { return evaltest.Expect(name, args) }
	full := exp(s("search", `{"limit":5,"q":"a"}`), s("lookup", `{"id":1.0}`), s("search", `{"q":"b"}`))
	swapped := exp(s("lookup", `{"id":1}`), s("search", `{"q":"a","limit":5}`), s("search", `{"q":"b"}`))
	two := exp(s("search", `{"q":"a","limit":5}`), s("search", `{"q":"b"}`))
	run(t, []row{
		{"strict exact", "tool_trajectory", "", full, th, 1, "matches"},
		{"strict wrong order", "tool_trajectory", "", swapped, th, 0, "does not match"},
		{"unordered", "tool_trajectory", `{"match":"unordered"}`, swapped, th, 1, ""},
		{"unordered missing", "tool_trajectory", `{"match":"unordered"}`, two, th, 0, ""},
		{"superset", "tool_trajectory", `{"match":"superset"}`, two, th, 1, ""},
		{"ADK ANY_ORDER", "tool_trajectory", `{"match":"ANY_ORDER"}`, swapped, th, 1, ""},
		{"in order", "tool_trajectory", `{"match":"in_order"}`, two, th, 1, ""},
		{"ADK IN_ORDER wrong order", "tool_trajectory", `{"match":"IN_ORDER"}`, swapped, th, 0, ""},
		{"subset fails with extras", "tool_trajectory", `{"match":"subset"}`, two, th, 0, ""},
		{"subset of a bigger plan", "tool_trajectory", `{"match":"subset"}`, exp(append(full.Expect.ToolCalls, s("delete", `{}`))...), th, 1, ""},
		{"args differ", "tool_trajectory", "", exp(s("search", `{"q":"a"}`), s("lookup", `{"id":1}`), s("search", `{"q":"b"}`)), th, 0, ""},
		{"args subset", "tool_trajectory", `{"args":"subset"}`, exp(s("search", `{"q":"a"}`), s("lookup", `{"id":1}`), s("search", `{"q":"b"}`)), th, 1, ""},
		{"args ignored", "tool_trajectory", `{"args":"ignore"}`, exp(s("search", `{}`), s("lookup", ``), s("search", `{"q":"z"}`)), th, 1, ""},
		{"no calls expected", "tool_trajectory", "", eval.Case{}, answer("hi"), 1, ""},
		// Greedy pairing would give {"q":"a"} the first call and leave the
		// second expectation unmatched; a maximum matching finds both.
		{"subset args need matching", "tool_trajectory", `{"match":"superset","args":"subset"}`,
			exp(s("search", `{}`), s("search", `{"q":"a"}`)),
			evaltest.NewThread().User("q").Call("search", `{"q":"a"}`, "").Call("search", `{"q":"b"}`, "").Build(), 1, ""},
	})
}

func TestToolTrajectoryPerTurn(t *testing.T) {
	th := evaltest.NewThread().
		User("one").Call("a", `{}`, "").Assistant("r1").
		User("two").Call("b", `{}`, "").Call("c", `{}`, "").Assistant("r2").
		Build()
	c := eval.Case{Expect: eval.Expectations{Turns: []eval.TurnExpectation{
		{ToolCalls: []eval.ToolCall{evaltest.Expect("a", `{}`)}},
		{ToolCalls: []eval.ToolCall{evaltest.Expect("c", `{}`), evaltest.Expect("b", `{}`)}},
	}}}
	run(t, []row{
		{"one turn of two", "tool_trajectory", "", c, th, 0.5, "turn 2"},
		{"any order", "tool_trajectory", `{"match":"ANY_ORDER"}`, c, th, 1, "every turn"},
	})
	// A turn the run never reached is scored against no calls.
	c.Expect.Turns = append(c.Expect.Turns, eval.TurnExpectation{ToolCalls: []eval.ToolCall{evaltest.Expect("d", `{}`)}})
	run(t, []row{{"missing turn", "tool_trajectory", `{"match":"ANY_ORDER"}`, c, th, 2.0 / 3, "turn 3"}})

	// A thread stored without turn records is one turn.
	flat := &eval.Thread{Messages: []llm.Message{llm.User("one"), llm.Assistant("r1")}, ToolCalls: []eval.ToolCall{evaltest.Expect("a", `{}`)}}
	one := eval.Case{Expect: eval.Expectations{Turns: []eval.TurnExpectation{{Response: "r1", ToolCalls: []eval.ToolCall{evaltest.Expect("a", `{}`)}}}}}
	run(t, []row{
		{"flat thread trajectory", "tool_trajectory", "", one, flat, 1, ""},
		{"flat thread response", "response_match", "", one, flat, 1, ""},
	})
}

func TestNodePath(t *testing.T) {
	th := evaltest.NewThread().Nodes("route", "sql", "answer").Build()
	run(t, []row{
		{"strict", "node_path", "", eval.Case{Expect: eval.Expectations{Nodes: []string{"route", "sql", "answer"}}}, th, 1, ""},
		{"strict fails", "node_path", "", eval.Case{Expect: eval.Expectations{Nodes: []string{"route", "answer"}}}, th, 0, "route sql answer"},
		{"in order", "node_path", `{"match":"in_order"}`, eval.Case{Expect: eval.Expectations{Nodes: []string{"route", "answer"}}}, th, 1, ""},
		{"superset misses", "node_path", `{"match":"superset"}`, eval.Case{Expect: eval.Expectations{Nodes: []string{"docs"}}}, th, 0, ""},
		{"no expectation", "node_path", "", eval.Case{}, th, 0, "no expected node path"},
	})
}

func TestInterrupts(t *testing.T) {
	th := evaltest.NewThread().
		Interrupt("planexec_ask", "Which day?", `"Monday"`).
		Interrupt("planexec_ask", "Which room?", `"A"`).
		Interrupt("planexec_plan_review", "", `{"action":"approve"}`).
		Build()
	run(t, []row{
		{"at most three", "interrupts", `{"max":3}`, eval.Case{}, th, 1, ""},
		{"at most one question", "interrupts", `{"max":1,"count":["planexec_ask"]}`, eval.Case{}, th, 0, "more than 1"},
		{"at most two questions", "interrupts", `{"max":2,"count":["planexec_ask"]}`, eval.Case{}, th, 1, "2 counted"},
		{"required review", "interrupts", `{"required":["planexec_plan_review"]}`, eval.Case{}, th, 1, ""},
		{"required missing", "interrupts", `{"required":["approval"]}`, eval.Case{}, th, 0, "never asked"},
		{"not allowed", "interrupts", `{"allowed":["planexec_ask"]}`, eval.Case{}, th, 0, "not allowed"},
		{"min", "interrupts", `{"min":1}`, eval.Case{}, evaltest.NewThread().Build(), 0, "fewer than 1"},
	})
}

func TestRejectionsHonoured(t *testing.T) {
	base := func() *evaltest.ThreadBuilder {
		return evaltest.NewThread().User("Email the team and book a room").
			Call("book_room", `{"day":"mon"}`, "ok").
			Rejected("send_email", `{"to":"team"}`, "not now")
	}
	claims := `{"claims":{"send_email":["sent","emailed"]}}`
	run(t, []row{
		{"acknowledged", "rejections_honoured", "", eval.Case{}, base().Assistant("Room booked. The email was not sent: you declined it (not now).").Build(), 1, "honoured"},
		{"silent", "rejections_honoured", "", eval.Case{}, base().Assistant("Room booked.").Build(), 0, "does not say"},
		{"claimed", "rejections_honoured", claims, eval.Case{}, base().Assistant("Room booked and the team emailed.").Build(), 0, "claims send_email"},
		{"no claim phrase", "rejections_honoured", claims, eval.Case{}, base().Assistant("Room booked.").Build(), 1, ""},
		{"repeated", "rejections_honoured", "", eval.Case{}, base().Call("send_email", `{"to":"team"}`, "ok").Assistant("Sorry, I declined nothing.").Build(), 0, "called again"},
		{"retried with other args", "rejections_honoured", "", eval.Case{}, base().Call("send_email", `{"to":"boss"}`, "ok").Assistant("The team email was rejected; I emailed your boss.").Build(), 1, ""},
		{"none rejected", "rejections_honoured", "", eval.Case{}, answer("hi"), 1, "no tool call was rejected"},
		{"none rejected but expected", "rejections_honoured", `{"expect_rejection":true}`, eval.Case{}, answer("hi"), 0, "expects one"},
	})
}

func TestBudget(t *testing.T) {
	th := evaltest.NewThread().Usage(llm.Usage{InputTokens: 1_000_000, CachedInputTokens: 500_000, OutputTokens: 100_000, Requests: 4}).Latency(2 * time.Second).Build()
	run(t, []row{
		{"within", "budget", `{"max_latency":"5s","max_tokens":2000000,"max_model_calls":4}`, eval.Case{}, th, 1, "model calls 4 ≤ 4"},
		{"latency over", "budget", `{"max_latency":"1s","max_model_calls":10}`, eval.Case{}, th, 0.5, "latency 2s over 1s"},
		{"calls over", "budget", `{"max_model_calls":3}`, eval.Case{}, th, 0, "over"},
		{"input over", "budget", `{"max_input_tokens":999999,"max_output_tokens":100000}`, eval.Case{}, th, 0.5, ""},
		// 0.5M × 1 + 0.5M × 0.5 + 0.1M × 4 = 0.5 + 0.25 + 0.4 = 1.15
		{"cost over", "budget", `{"max_cost":1.1,"price":{"input":1,"cached_input":0.5,"output":4}}`, eval.Case{}, th, 0, "cost 1.150000 over"},
		{"cost within", "budget", `{"max_cost":1.2,"price":{"input":1,"cached_input":0.5,"output":4}}`, eval.Case{}, th, 1, ""},
	})
	if c := evaluators.Cost(1_000_000, 0, 0, evaluators.Price{Input: 2}); c != 2 {
		t.Fatalf("cost %v, want 2", c)
	}
}

func TestResponseMatch(t *testing.T) {
	single := eval.Case{Expect: out("The meeting is booked for Monday.")}
	perTurn := eval.Case{Expect: eval.Expectations{Turns: []eval.TurnExpectation{{Response: "rolled a 4"}, {Response: "it is prime"}}}}
	th := evaltest.NewThread().User("a").Assistant("rolled a 4").User("b").Assistant("no idea").Build()
	run(t, []row{
		{"identical", "response_match", "", single, answer("The meeting is booked for Monday."), 1, "ROUGE-1"},
		{"stemmed", "response_match", "", single, answer("the meetings were booked on monday"), 2 * 4.0 / 6 * 4.0 / 6 / (8.0 / 6), ""},
		{"per turn", "response_match", "", perTurn, th, 0.5, "2 turns"},
	})
}
