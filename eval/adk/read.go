package adk

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/trellis-agents/trellis/eval"
)

// keep is what an imported case or set keeps of ADK's fields that Trellis
// has no place for, stored in Metadata[MetadataKey].
type keep struct {
	// Set holds an eval set's fields other than eval_set_id, description
	// and eval_cases.
	Set map[string]json.RawMessage `json:"set,omitempty"`
	// Case holds a case's fields other than eval_id and conversation, and
	// session_input without its state.
	Case map[string]json.RawMessage `json:"case,omitempty"`
	// Invocations hold, per invocation, the fields other than the three
	// Trellis maps, and any of those three whose form differs from the one
	// Export would write from the Trellis fields alone.
	Invocations []map[string]json.RawMessage `json:"invocations,omitempty"`
}

func (k keep) empty() bool {
	if len(k.Set) > 0 || len(k.Case) > 0 {
		return false
	}
	for _, inv := range k.Invocations {
		if len(inv) > 0 {
			return false
		}
	}
	return true
}

// keptOf reads Metadata[MetadataKey], whatever form a JSON round trip left
// it in.
func keptOf(md map[string]any) (keep, error) {
	var k keep
	v, ok := md[MetadataKey]
	if !ok || v == nil {
		return k, nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return k, err
	}
	if err := json.Unmarshal(b, &k); err != nil {
		return k, fmt.Errorf("adk: metadata %q: %w", MetadataKey, err)
	}
	return k, nil
}

// ReadFile reads an ADK eval set file — *.evalset.json, or the older
// *.test.json or eval-set list — with the test_config.json in the same
// directory, or ADK's default criteria when there is none.
func ReadFile(path string) (*eval.Dataset, error) {
	data, err := readBounded(path)
	if err != nil {
		return nil, err
	}
	name := strings.TrimSuffix(strings.TrimSuffix(filepath.Base(path), ".json"), ".evalset")
	name = strings.TrimSuffix(name, ".test")
	ds, err := Parse(data, name)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	cfg, err := readBounded(filepath.Join(filepath.Dir(path), "test_config.json"))
	switch {
	case errors.Is(err, os.ErrNotExist):
		ds.Criteria = DefaultCriteria()
	case err != nil:
		return nil, err
	default:
		crit, err := ParseConfig(cfg)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", filepath.Join(filepath.Dir(path), "test_config.json"), err)
		}
		ds.Criteria = crit
	}
	return ds, nil
}

func readBounded(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxFile+1))
	if err != nil {
		return nil, err
	}
	if len(data) > maxFile {
		return nil, fmt.Errorf("adk: %s is larger than %d bytes", path, maxFile)
	}
	return data, nil
}

// Parse reads an eval set in any of ADK's formats: an EvalSet object, a
// list of {query, expected_tool_use, reference} turns (one case, whose ID
// is name), or the old list of {name, data, initial_session} cases. The
// dataset has no criteria; see ParseConfig.
func Parse(data []byte, name string) (*eval.Dataset, error) {
	data = bytes.TrimSpace(data)
	if len(data) == 0 {
		return nil, errors.New("adk: empty eval set")
	}
	if data[0] == '{' {
		return parseEvalSet(data)
	}
	var list []map[string]json.RawMessage
	if err := json.Unmarshal(data, &list); err != nil {
		return nil, fmt.Errorf("adk: want an EvalSet object or a list of turns or cases: %w", err)
	}
	if len(list) == 0 {
		return nil, errors.New("adk: the eval set has no cases")
	}
	if _, ok := list[0]["query"]; ok {
		c, err := oldCase(name, list, nil)
		if err != nil {
			return nil, err
		}
		return &eval.Dataset{Name: name, Cases: []eval.Case{c}}, nil
	}
	ds := &eval.Dataset{Name: name}
	for i, item := range list {
		var turns []map[string]json.RawMessage
		if err := json.Unmarshal(item["data"], &turns); err != nil || len(turns) == 0 {
			return nil, fmt.Errorf("adk: case %d: want a non-empty \"data\" list of turns", i)
		}
		id, err := str(item, "name", fmt.Sprintf("case %d", i))
		if err != nil {
			return nil, err
		}
		if id == "" {
			id = fmt.Sprintf("case-%d", i+1)
		}
		c, err := oldCase(id, turns, item["initial_session"])
		if err != nil {
			return nil, err
		}
		ds.Cases = append(ds.Cases, c)
	}
	return ds, nil
}

// oldCase converts the older format's turns, as ADK's own migration does:
// query → user content, expected_tool_use (tool_name, tool_input) → tool
// uses, reference → final response; mock_tool_output is not compared by
// ADK and is dropped; expected_intermediate_agent_responses are kept.
func oldCase(id string, turns []map[string]json.RawMessage, session json.RawMessage) (eval.Case, error) {
	c := eval.Case{ID: id}
	var k keep
	for i, t := range turns {
		what := fmt.Sprintf("%s turn %d", id, i+1)
		q, err := str(t, "query", what)
		if err != nil {
			return c, err
		}
		if _, ok := t["query"]; !ok {
			return c, fmt.Errorf("adk: %s: no query", what)
		}
		ref, err := str(t, "reference", what)
		if err != nil {
			return c, err
		}
		var uses []struct {
			ToolName  string          `json:"tool_name"`
			ToolInput json.RawMessage `json:"tool_input"`
		}
		if present(t, "expected_tool_use") {
			if err := json.Unmarshal(t["expected_tool_use"], &uses); err != nil {
				return c, fmt.Errorf("adk: %s: expected_tool_use: %w", what, err)
			}
		}
		te := eval.TurnExpectation{Response: ref}
		for _, u := range uses {
			if u.ToolName == "" {
				return c, fmt.Errorf("adk: %s: an expected tool use has no tool_name", what)
			}
			te.ToolCalls = append(te.ToolCalls, eval.ToolCall{Name: u.ToolName, Args: normArgs(u.ToolInput)})
		}
		if i == 0 {
			c.Input.Message = q
		} else {
			c.Turns = append(c.Turns, eval.Turn{Message: q})
		}
		c.Expect.Turns = append(c.Expect.Turns, te)
		inv := map[string]json.RawMessage{}
		if present(t, "expected_intermediate_agent_responses") {
			var rs []struct{ Author, Text string }
			if err := json.Unmarshal(t["expected_intermediate_agent_responses"], &rs); err != nil {
				return c, fmt.Errorf("adk: %s: expected_intermediate_agent_responses: %w", what, err)
			}
			if len(rs) > 0 {
				idata := map[string]any{"tool_uses": toolUses(te.ToolCalls)}
				var ir []any
				for _, r := range rs {
					ir = append(ir, []any{r.Author, []map[string]string{{"text": r.Text}}})
				}
				idata["intermediate_responses"] = ir
				inv["intermediate_data"] = mustJSON(idata)
			}
		}
		k.Invocations = append(k.Invocations, inv)
	}
	if !isNull(session) {
		s, err := fields(session, id+" initial_session")
		if err != nil {
			return c, err
		}
		if len(s) > 0 {
			if err := takeSession(&c, &k, s, id); err != nil {
				return c, err
			}
		}
	}
	setKept(&c.Metadata, k)
	return c, nil
}

// normArgs is a call's arguments, compact; null or none is {}.
func normArgs(a json.RawMessage) json.RawMessage {
	if isNull(a) {
		return json.RawMessage(`{}`)
	}
	var b bytes.Buffer
	if json.Compact(&b, a) != nil {
		return a
	}
	return b.Bytes()
}

// takeSession maps a session input: its state becomes the run context,
// the rest (app_name, user_id, session_id…) is kept.
func takeSession(c *eval.Case, k *keep, s map[string]json.RawMessage, what string) error {
	if present(s, "state") {
		var st map[string]any
		if err := json.Unmarshal(s["state"], &st); err != nil {
			return fmt.Errorf("adk: %s: session_input.state: want an object: %w", what, err)
		}
		if len(st) > 0 {
			c.Input.Context = st
		}
	}
	rest := map[string]json.RawMessage{}
	for key, v := range s {
		if key != "state" {
			rest[key] = v
		}
	}
	if k.Case == nil {
		k.Case = map[string]json.RawMessage{}
	}
	k.Case["session_input"] = mustJSON(rest)
	return nil
}

func setKept(md *map[string]any, k keep) {
	if k.empty() {
		return
	}
	if *md == nil {
		*md = map[string]any{}
	}
	(*md)[MetadataKey] = json.RawMessage(mustJSON(k))
}

func parseEvalSet(data []byte) (*eval.Dataset, error) {
	s, err := fields(data, "eval set")
	if err != nil {
		return nil, err
	}
	id, err := str(s, "eval_set_id", "eval set")
	if err != nil {
		return nil, err
	}
	if id == "" {
		return nil, errors.New("adk: the eval set has no eval_set_id")
	}
	if !present(s, "eval_cases") {
		return nil, fmt.Errorf("adk: eval set %s has no eval_cases", id)
	}
	desc, err := str(s, "description", "eval set")
	if err != nil {
		return nil, err
	}
	var raws []json.RawMessage
	if err := json.Unmarshal(s["eval_cases"], &raws); err != nil {
		return nil, fmt.Errorf("adk: eval set %s: eval_cases: %w", id, err)
	}
	ds := &eval.Dataset{Name: id, Description: desc, Cases: make([]eval.Case, 0, len(raws))}
	seen := map[string]bool{}
	for i, raw := range raws {
		c, err := parseCase(raw, i)
		if err != nil {
			return nil, err
		}
		if seen[c.ID] {
			return nil, fmt.Errorf("adk: eval set %s: duplicate eval_id %q", id, c.ID)
		}
		seen[c.ID] = true
		ds.Cases = append(ds.Cases, c)
	}
	var k keep
	for key, v := range s {
		switch key {
		case "eval_set_id", "description", "eval_cases":
		default:
			if k.Set == nil {
				k.Set = map[string]json.RawMessage{}
			}
			k.Set[key] = v
		}
	}
	setKept(&ds.Metadata, k)
	return ds, nil
}

func parseCase(raw json.RawMessage, i int) (eval.Case, error) {
	var c eval.Case
	m, err := fields(raw, fmt.Sprintf("eval case %d", i))
	if err != nil {
		return c, err
	}
	c.ID, err = str(m, "eval_id", fmt.Sprintf("eval case %d", i))
	if err != nil {
		return c, err
	}
	if c.ID == "" {
		return c, fmt.Errorf("adk: eval case %d has no eval_id", i)
	}
	var k keep
	k.Case = map[string]json.RawMessage{}
	switch {
	case present(m, "conversation"):
		var invs []json.RawMessage
		if err := json.Unmarshal(m["conversation"], &invs); err != nil {
			return c, fmt.Errorf("adk: %s: conversation: %w", c.ID, err)
		}
		if len(invs) == 0 {
			return c, fmt.Errorf("adk: %s: the conversation has no invocations", c.ID)
		}
		for j, raw := range invs {
			if err := parseInvocation(&c, &k, raw, j); err != nil {
				return c, err
			}
		}
	case present(m, "conversation_scenario"):
		sc, err := fields(m["conversation_scenario"], c.ID+" conversation_scenario")
		if err != nil {
			return c, err
		}
		if c.Input.Message, err = str(sc, "starting_prompt", c.ID+" conversation_scenario"); err != nil {
			return c, err
		}
		goal, err := str(sc, "conversation_plan", c.ID+" conversation_scenario")
		if err != nil {
			return c, err
		}
		c.User = &eval.SimulatedUser{Goal: goal}
		if p, err := str(sc, "user_persona", ""); err == nil {
			c.User.Persona = p
		}
	default:
		return c, fmt.Errorf("adk: %s: neither a conversation nor a conversation_scenario", c.ID)
	}
	for key, v := range m {
		switch key {
		case "eval_id", "conversation":
		case "session_input":
			if isNull(v) {
				continue
			}
			s, err := fields(v, c.ID+" session_input")
			if err != nil {
				return c, err
			}
			if err := takeSession(&c, &k, s, c.ID); err != nil {
				return c, err
			}
		default:
			k.Case[key] = v
		}
	}
	setKept(&c.Metadata, k)
	return c, nil
}

func parseInvocation(c *eval.Case, k *keep, raw json.RawMessage, j int) error {
	what := fmt.Sprintf("%s invocation %d", c.ID, j+1)
	inv, err := fields(raw, what)
	if err != nil {
		return err
	}
	if !present(inv, "user_content") {
		return fmt.Errorf("adk: %s: no user_content", what)
	}
	user, err := contentText(inv["user_content"], what+" user_content")
	if err != nil {
		return err
	}
	resp, err := contentText(inv["final_response"], what+" final_response")
	if err != nil {
		return err
	}
	calls, err := toolCalls(inv["intermediate_data"], what)
	if err != nil {
		return err
	}
	if j == 0 {
		c.Input.Message = user
	} else {
		c.Turns = append(c.Turns, eval.Turn{Message: user})
	}
	c.Expect.Turns = append(c.Expect.Turns, eval.TurnExpectation{Response: resp, ToolCalls: calls})
	rest := map[string]json.RawMessage{}
	for key, v := range inv {
		switch key {
		case "user_content":
			if !sameJSON(v, defaultContent("user", user)) {
				rest[key] = v
			}
		case "final_response":
			if !sameJSON(v, responseContent(resp)) {
				rest[key] = v
			}
		case "intermediate_data":
			if !sameJSON(v, intermediate(calls)) {
				rest[key] = v
			}
		default:
			rest[key] = v
		}
	}
	k.Invocations = append(k.Invocations, rest)
	return nil
}

// responseContent is the final_response Export writes for a text: none
// for "".
func responseContent(text string) json.RawMessage {
	if text == "" {
		return json.RawMessage("null")
	}
	return defaultContent("model", text)
}

// intermediate is the intermediate_data Export writes for a trajectory.
func intermediate(calls []eval.ToolCall) json.RawMessage {
	if len(calls) == 0 {
		return json.RawMessage("null")
	}
	return mustJSON(map[string]any{"tool_uses": toolUses(calls)})
}

func toolUses(calls []eval.ToolCall) []object {
	out := make([]object, len(calls))
	for i, c := range calls {
		out[i] = object{{"name", mustJSON(c.Name)}, {"args", normArgs(c.Args)}}
	}
	return out
}

// toolCalls reads an invocation's trajectory: intermediate_data.tool_uses,
// or the function calls in intermediate_data.invocation_events, as ADK's
// get_all_tool_calls does.
func toolCalls(raw json.RawMessage, what string) ([]eval.ToolCall, error) {
	if isNull(raw) {
		return nil, nil
	}
	d, err := fields(raw, what+" intermediate_data")
	if err != nil {
		return nil, err
	}
	type call struct {
		Name string          `json:"name"`
		Args json.RawMessage `json:"args"`
	}
	var calls []call
	if present(d, "invocation_events") {
		var events []struct {
			Content *struct {
				Parts []map[string]json.RawMessage `json:"parts"`
			} `json:"content"`
		}
		if err := json.Unmarshal(d["invocation_events"], &events); err != nil {
			return nil, fmt.Errorf("adk: %s: invocation_events: %w", what, err)
		}
		for _, e := range events {
			if e.Content == nil {
				continue
			}
			for _, p := range e.Content.Parts {
				fc, ok := p["function_call"]
				if !ok {
					fc, ok = p["functionCall"]
				}
				if !ok || isNull(fc) {
					continue
				}
				var c call
				if err := json.Unmarshal(fc, &c); err != nil {
					return nil, fmt.Errorf("adk: %s: function_call: %w", what, err)
				}
				calls = append(calls, c)
			}
		}
	} else if present(d, "tool_uses") {
		if err := json.Unmarshal(d["tool_uses"], &calls); err != nil {
			return nil, fmt.Errorf("adk: %s: tool_uses: %w", what, err)
		}
	}
	out := make([]eval.ToolCall, 0, len(calls))
	for _, c := range calls {
		if c.Name == "" {
			return nil, fmt.Errorf("adk: %s: a tool use has no name", what)
		}
		out = append(out, eval.ToolCall{Name: c.Name, Args: normArgs(c.Args)})
	}
	if len(out) == 0 {
		return nil, nil
	}
	return out, nil
}

// The eval runner and `trellis eval run` read ADK's files by their names'
// endings once this package is imported.
func init() {
	eval.RegisterFormat(".evalset.json", ReadFile)
	eval.RegisterFormat(".test.json", ReadFile)
}
