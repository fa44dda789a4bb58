package adk

import (
	"encoding/json"
	"fmt"
	"slices"

	"github.com/trellis-agents/trellis/eval"
)

// Export writes ds as an ADK EvalSet (*.evalset.json), in snake_case.
// A set read by Parse is written back as it was read, every field ADK
// defines included, except where the Trellis fields were changed since:
// then those win. What ADK cannot express (interrupt answers, tags,
// per-case criteria, node paths, a state input…) is listed in dropped.
// Criteria go to test_config.json: see ExportConfig.
func Export(ds *eval.Dataset) (data []byte, dropped []string, err error) {
	if ds == nil {
		return nil, nil, fmt.Errorf("adk: no dataset")
	}
	sk, err := keptOf(ds.Metadata)
	if err != nil {
		return nil, nil, err
	}
	cases := make([]json.RawMessage, 0, len(ds.Cases))
	for i := range ds.Cases {
		c, d, err := exportCase(&ds.Cases[i])
		if err != nil {
			return nil, nil, err
		}
		cases = append(cases, c)
		dropped = append(dropped, d...)
	}
	set := object{{"eval_set_id", mustJSON(ds.Name)}}
	if n, ok := sk.Set["name"]; ok {
		set.set("name", n)
	}
	if ds.Description != "" {
		set.set("description", mustJSON(ds.Description))
	}
	set.set("eval_cases", mustJSON(cases))
	set.rest(sk.Set)
	if ds.Version != "" {
		dropped = append(dropped, "the dataset's version")
	}
	out, err := json.MarshalIndent(set, "", "  ")
	return out, dropped, err
}

func exportCase(c *eval.Case) (json.RawMessage, []string, error) {
	k, err := keptOf(c.Metadata)
	if err != nil {
		return nil, nil, fmt.Errorf("adk: case %s: %w", c.ID, err)
	}
	var dropped []string
	drop := func(what string) { dropped = append(dropped, fmt.Sprintf("case %s: %s", c.ID, what)) }
	if len(c.Answers) > 0 || slices.ContainsFunc(c.Turns, func(t eval.Turn) bool { return len(t.Answers) > 0 }) {
		drop("interrupt answers")
	}
	if len(c.Tags) > 0 {
		drop("tags")
	}
	if len(c.Criteria) > 0 {
		drop("its own criteria")
	}
	if len(c.Expect.Nodes) > 0 {
		drop("expected node path")
	}
	if c.Expect.Rubric != "" {
		drop("rubric")
	}
	if len(c.Input.State) > 0 || len(c.Input.Config) > 0 {
		drop("state input and config")
	}
	out := object{{"eval_id", mustJSON(c.ID)}}
	if c.User != nil {
		sc := map[string]json.RawMessage{}
		if kept, ok := k.Case["conversation_scenario"]; ok {
			if m, err := fields(kept, "conversation_scenario"); err == nil {
				sc = m
			}
		}
		sc["starting_prompt"] = mustJSON(c.Input.Message)
		sc["conversation_plan"] = mustJSON(c.User.Goal)
		o := object{{"starting_prompt", sc["starting_prompt"]}, {"conversation_plan", sc["conversation_plan"]}}
		o.rest(sc)
		out.set("conversation_scenario", mustJSON(o))
		if c.User.Model != "" {
			drop("simulated user's model")
		}
	} else {
		invs, d := exportConversation(c, k)
		dropped = append(dropped, d...)
		out.set("conversation", mustJSON(invs))
	}
	// session_input: the kept fields, with the run context as its state.
	var session map[string]json.RawMessage
	if kept, ok := k.Case["session_input"]; ok {
		session, _ = fields(kept, "session_input")
	}
	if session != nil || len(c.Input.Context) > 0 {
		if session == nil {
			session = map[string]json.RawMessage{"app_name": mustJSON(""), "user_id": mustJSON("")}
		}
		o := object{}
		for _, key := range []string{"app_name", "user_id", "session_id"} {
			if v, ok := session[key]; ok {
				o.set(key, v)
			}
		}
		state := c.Input.Context
		if state == nil {
			state = map[string]any{}
		}
		o.set("state", mustJSON(state))
		o.rest(session)
		out.set("session_input", mustJSON(o))
	}
	rest := map[string]json.RawMessage{}
	for key, v := range k.Case {
		if key != "session_input" && key != "conversation_scenario" {
			rest[key] = v
		}
	}
	out.rest(rest)
	return mustJSON(out), dropped, nil
}

func exportConversation(c *eval.Case, k keep) ([]object, []string) {
	var dropped []string
	users := []string{c.Input.Message}
	for _, t := range c.Turns {
		users = append(users, t.Message)
	}
	exp := c.Expect.Turns
	if len(exp) == 0 && (len(c.Expect.Output) > 0 || len(c.Expect.ToolCalls) > 0) {
		// A case with whole-run expectations: ADK's single invocation
		// carries them; with several turns they belong to none.
		if len(users) == 1 {
			ref, _, _ := referenceTextOf(c.Expect.Output)
			exp = []eval.TurnExpectation{{Response: ref, ToolCalls: c.Expect.ToolCalls}}
		} else {
			dropped = append(dropped, fmt.Sprintf("case %s: whole-run expectations of a multi-turn case (ADK's are per invocation)", c.ID))
		}
	}
	invs := make([]object, len(users))
	for i, user := range users {
		var want eval.TurnExpectation
		if i < len(exp) {
			want = exp[i]
		}
		var kept map[string]json.RawMessage
		if i < len(k.Invocations) {
			kept = k.Invocations[i]
		}
		inv := object{}
		if v, ok := kept["invocation_id"]; ok {
			inv.set("invocation_id", v)
		}
		// Each field: the kept form when it still says what the Trellis
		// fields say, else the plain form built from them.
		uc := defaultContent("user", user)
		if v, ok := kept["user_content"]; ok {
			if t, err := contentText(v, "user_content"); err == nil && t == user {
				uc = v
			}
		}
		inv.set("user_content", uc)
		fr := responseContent(want.Response)
		if v, ok := kept["final_response"]; ok {
			if t, err := contentText(v, "final_response"); err == nil && t == want.Response {
				fr = v
			}
		}
		if !isNull(fr) || kept["final_response"] != nil {
			inv.set("final_response", fr)
		}
		id := intermediate(want.ToolCalls)
		if v, ok := kept["intermediate_data"]; ok {
			if calls, err := toolCalls(v, "intermediate_data"); err == nil && sameCalls(calls, want.ToolCalls) {
				id = v
			}
		}
		if !isNull(id) || kept["intermediate_data"] != nil {
			inv.set("intermediate_data", id)
		}
		inv.rest(kept)
		invs[i] = inv
	}
	if len(exp) > len(users) {
		dropped = append(dropped, fmt.Sprintf("case %s: %d expected turns beyond its %d user turns", c.ID, len(exp)-len(users), len(users)))
	}
	return invs, dropped
}

func sameCalls(a, b []eval.ToolCall) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Name != b[i].Name || !sameJSON(normArgs(a[i].Args), normArgs(b[i].Args)) {
			return false
		}
	}
	return true
}

// referenceTextOf reads an expected output as text (a JSON string's
// value, or the JSON itself).
func referenceTextOf(raw json.RawMessage) (string, bool, bool) {
	if isNull(raw) {
		return "", false, false
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, true, true
	}
	return string(raw), false, true
}
