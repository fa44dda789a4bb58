package adk_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/trellis-agents/trellis/eval"
	"github.com/trellis-agents/trellis/eval/adk"
	"github.com/trellis-agents/trellis/eval/evaltest"
	_ "github.com/trellis-agents/trellis/eval/evaluators"
	"github.com/trellis-agents/trellis/internal/jsonmatch"
)

func read(t *testing.T, path string) *eval.Dataset {
	t.Helper()
	ds, err := adk.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return ds
}

func TestImportEvalSet(t *testing.T) {
	ds := read(t, "testdata/library/library.evalset.json")
	if ds.Name != "library_desk" || ds.Description == "" || len(ds.Cases) != 3 {
		t.Fatalf("dataset %q %q with %d cases", ds.Name, ds.Description, len(ds.Cases))
	}
	c := ds.Cases[0]
	if c.ID != "reserve_two_books" || c.Input.Message != "Is 'Tide Tables' on the shelf?" || len(c.Turns) != 1 || c.Turns[0].Message != "Reserve it, and also 'Salt Roads'." {
		t.Fatalf("case input and turns: %+v %+v", c.Input, c.Turns)
	}
	if c.Input.Context["branch"] != "harbour" {
		t.Fatalf("session state must become the run context: %v", c.Input.Context)
	}
	if len(c.Expect.Turns) != 2 || c.Expect.Turns[1].Response != "Both books are reserved for you until Friday." ||
		len(c.Expect.Turns[1].ToolCalls) != 2 || c.Expect.Turns[1].ToolCalls[1].Name != "reserve_book" {
		t.Fatalf("expectations: %+v", c.Expect.Turns)
	}
	if _, ok := c.Metadata[adk.MetadataKey]; !ok {
		t.Fatal("ADK-only fields (app_name, user_id, timestamps, tool responses) must be kept in metadata")
	}
	if calls := ds.Cases[2].Expect.Turns[0].ToolCalls; len(calls) != 1 || calls[0].Name != "renew_loan" {
		t.Fatalf("tool uses from invocation_events: %+v", calls)
	}
	// test_config.json beside the set.
	// Sorted by ADK metric name.
	want := []string{"response_match", "tool_trajectory"}
	if len(ds.Criteria) != 2 || ds.Criteria[0].Evaluator != want[0] || ds.Criteria[1].Evaluator != want[1] ||
		*ds.Criteria[0].Threshold != 0.6 || !strings.Contains(string(ds.Criteria[1].Params), `"in_order"`) {
		t.Fatalf("criteria: %+v", ds.Criteria)
	}
	for _, cr := range ds.Criteria {
		if _, err := eval.New(cr); err != nil {
			t.Errorf("criterion %s does not build: %v", cr.Evaluator, err)
		}
	}
}

// normal is a JSON document with null fields and empty lists and objects
// dropped and keys snake-cased: ADK's "modulo defaults".
func normal(t *testing.T, b []byte) any {
	t.Helper()
	v, err := jsonmatch.Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	return prune(v)
}

func prune(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := map[string]any{}
		for k, e := range x {
			e = prune(e)
			if m, ok := e.(map[string]any); e == nil || ok && len(m) == 0 {
				continue
			}
			if l, ok := e.([]any); ok && len(l) == 0 {
				continue
			}
			var b strings.Builder
			for i, r := range k {
				if r >= 'A' && r <= 'Z' {
					if i > 0 {
						b.WriteByte('_')
					}
					r += 'a' - 'A'
				}
				b.WriteRune(r)
			}
			out[b.String()] = e
		}
		return out
	case []any:
		for i := range x {
			x[i] = prune(x[i])
		}
	}
	return v
}

// byValue compares JSON numbers by value: 1.0 read back through float64
// is 1.
var byValue = cmp.Comparer(func(a, b json.Number) bool { return jsonmatch.Equal(a, b) })

func TestRoundTrip(t *testing.T) {
	for _, path := range []string{"testdata/library/library.evalset.json", "testdata/camel/camel.evalset.json"} {
		t.Run(filepath.Base(path), func(t *testing.T) {
			orig, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			ds := read(t, path)
			out, dropped, err := adk.Export(ds)
			if err != nil {
				t.Fatal(err)
			}
			if len(dropped) > 0 {
				t.Fatalf("an imported set must export without loss, dropped %v", dropped)
			}
			// Export is the original, modulo key order, case style and defaults.
			if d := cmp.Diff(normal(t, orig), normal(t, out)); d != "" {
				t.Fatalf("export differs from the original (-orig +export):\n%s", d)
			}
			// Import → export → import gives the same dataset.
			again, err := adk.Parse(out, ds.Name)
			if err != nil {
				t.Fatal(err)
			}
			again.Criteria = ds.Criteria
			if d := cmp.Diff(ds, again); d != "" {
				t.Fatalf("re-import differs (-first +second):\n%s", d)
			}
			// And through JSON, as a dataset file would hold it.
			b, _ := json.Marshal(ds)
			var stored eval.Dataset
			if err := json.Unmarshal(b, &stored); err != nil {
				t.Fatal(err)
			}
			out2, _, err := adk.Export(&stored)
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(normal(t, orig), normal(t, out2), byValue); d != "" {
				t.Fatalf("export after a JSON round trip differs:\n%s", d)
			}
		})
	}
}

func TestEditedFieldsWinOverKeptOnes(t *testing.T) {
	ds := read(t, "testdata/library/library.evalset.json")
	ds.Cases[0].Expect.Turns[0].Response = "Tide Tables is out on loan."
	ds.Cases[0].Expect.Turns[0].ToolCalls = []eval.ToolCall{{Name: "find_book", Args: json.RawMessage(`{"title":"Tide Tables","branch":"harbour"}`)}}
	out, _, err := adk.Export(ds)
	if err != nil {
		t.Fatal(err)
	}
	back, err := adk.Parse(out, "x")
	if err != nil {
		t.Fatal(err)
	}
	got := back.Cases[0].Expect.Turns[0]
	if got.Response != "Tide Tables is out on loan." || !strings.Contains(string(got.ToolCalls[0].Args), "branch") {
		t.Fatalf("edited expectations were not exported: %+v", got)
	}
	if strings.Contains(string(out), "fc-1") {
		t.Fatal("the kept tool responses belong to the old trajectory and must not be exported with the new one")
	}
	if !strings.Contains(string(out), `"inv-1"`) {
		t.Fatal("fields unrelated to the edit (invocation_id) must stay")
	}
}

func TestExportTrellisCase(t *testing.T) {
	ds := &eval.Dataset{Name: "native", Cases: []eval.Case{{
		ID:      "one",
		Tags:    []string{"smoke"},
		Input:   eval.Input{Message: "Find 'Salt Roads'.", Context: map[string]any{"branch": "harbour"}},
		Answers: []eval.Answer{{Value: json.RawMessage(`"yes"`)}},
		Expect:  eval.Expectations{Output: json.RawMessage(`"Shelf C1."`), ToolCalls: []eval.ToolCall{{Name: "find_book", Args: json.RawMessage(`{"title":"Salt Roads"}`)}}},
	}}}
	out, dropped, err := adk.Export(ds)
	if err != nil {
		t.Fatal(err)
	}
	if len(dropped) != 2 || !strings.Contains(strings.Join(dropped, ";"), "interrupt answers") || !strings.Contains(strings.Join(dropped, ";"), "tags") {
		t.Fatalf("dropped %v, want the answers and the tags", dropped)
	}
	back, err := adk.Parse(out, "native")
	if err != nil {
		t.Fatal(err)
	}
	c := back.Cases[0]
	if c.Input.Message != "Find 'Salt Roads'." || c.Input.Context["branch"] != "harbour" || c.Expect.Turns[0].Response != "Shelf C1." || c.Expect.Turns[0].ToolCalls[0].Name != "find_book" {
		t.Fatalf("re-imported: %+v", c)
	}
}

func TestOldFormats(t *testing.T) {
	ds := read(t, "testdata/old/renewals.test.json")
	if len(ds.Cases) != 1 {
		t.Fatalf("a .test.json is one case, got %d", len(ds.Cases))
	}
	c := ds.Cases[0]
	if c.ID != "renewals" || c.Input.Message != "How many books can I borrow?" || len(c.Turns) != 1 || len(c.Expect.Turns) != 2 ||
		len(c.Expect.Turns[1].ToolCalls) != 2 || c.Expect.Turns[1].ToolCalls[0].Result != "" {
		t.Fatalf("case: %+v", c)
	}
	if d := cmp.Diff(adk.DefaultCriteria(), ds.Criteria); d != "" {
		t.Fatalf("without test_config.json the criteria are ADK's defaults:\n%s", d)
	}
	if *ds.Criteria[0].Threshold != 1 || *ds.Criteria[1].Threshold != 0.8 {
		t.Fatal("ADK's default thresholds are 1.0 and 0.8")
	}

	list := read(t, "testdata/oldlist/desk.evalset.json")
	if len(list.Cases) != 2 || list.Cases[0].ID != "opening_hours" || list.Cases[0].Input.Context["branch"] != "harbour" || list.Cases[1].Expect.Turns[0].Response == "" {
		t.Fatalf("old list: %+v", list.Cases)
	}
	out, _, err := adk.Export(list)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"reader-1"`, `"cards_agent"`, `"Blocking the card."`} {
		if !strings.Contains(string(out), want) {
			t.Errorf("the export of an old list lacks %s", want)
		}
	}
}

func TestConfig(t *testing.T) {
	ds := read(t, "testdata/camel/camel.evalset.json")
	if len(ds.Criteria) != 3 {
		t.Fatalf("criteria %+v", ds.Criteria)
	}
	// Sorted by ADK metric name: final_response_match_v2, rubric…, tool_trajectory….
	judge, rubric, traj := ds.Criteria[0], ds.Criteria[1], ds.Criteria[2]
	if judge.Evaluator != "llm_judge" || !strings.Contains(string(judge.Params), `"model":"judge-small"`) || *judge.Threshold != 0.8 {
		t.Fatalf("final_response_match_v2: %+v %s", judge, judge.Params)
	}
	if rubric.Evaluator != "llm_judge" || !strings.Contains(string(rubric.Params), "names the shelf") {
		t.Fatalf("rubric criterion: %s", rubric.Params)
	}
	if traj.Evaluator != "tool_trajectory" || string(traj.Params) != `{"args":"ignore","match":"superset"}` || *traj.Threshold != 0.5 {
		t.Fatalf("trajectory: %s", traj.Params)
	}
	for _, c := range ds.Criteria {
		if _, err := eval.New(c); err != nil {
			t.Errorf("%s: %v", c.Evaluator, err)
		}
	}

	for cfg, want := range map[string]string{
		`{"criteria":{"tool_trajectory_avg_score":1.0}}`:                                     `{"match":"strict"}`,
		`{"criteria":{"tool_trajectory_avg_score":{"threshold":1,"match_type":"EXACT"}}}`:    `{"match":"strict"}`,
		`{"criteria":{"tool_trajectory_avg_score":{"threshold":1,"match_type":"in_order"}}}`: `{"match":"in_order"}`,
		`{"criteria":{"tool_trajectory_avg_score":{"threshold":1,"match_type":2}}}`:          `{"match":"superset"}`,
		`{"criteria":{"response_evaluation_score":3}}`:                                       `coherent`,
	} {
		crit, err := adk.ParseConfig([]byte(cfg))
		if err != nil || len(crit) != 1 || !strings.Contains(string(crit[0].Params), want) {
			t.Errorf("%s: got %+v %v, want params with %s", cfg, crit, err, want)
		}
	}
	if crit, _ := adk.ParseConfig([]byte(`{"criteria":{"response_evaluation_score":3}}`)); *crit[0].Threshold != 0.5 {
		t.Errorf("a coherence threshold of 3 on 1–5 is 0.5 on 0–1, got %v", *crit[0].Threshold)
	}
	for _, bad := range []string{
		`{"criteria":{"safety_v1":0.8}}`,
		`{"criteria":{"tool_trajectory_avg_score":{"match_type":"EXACT"}}}`,
		`{"criteria":{"tool_trajectory_avg_score":{"threshold":1,"match_type":"SOMETIMES"}}}`,
		`{"criteria":{"tool_trajectory_avg_score":"high"}}`,
		`{"criteria":{"rubric_based_final_response_quality_v1":{"threshold":1}}}`,
		`{"criteria":[1]}`,
		`[]`,
	} {
		if _, err := adk.ParseConfig([]byte(bad)); err == nil {
			t.Errorf("%s: want an error", bad)
		}
	}
	if _, err := adk.ParseConfig([]byte(`{"criteria":{"safety_v1":0.8,"hallucinations_v1":0.5}}`)); err == nil || !strings.Contains(err.Error(), "hallucinations_v1, safety_v1") {
		t.Errorf("unsupported metrics must be named: %v", err)
	}

	// ExportConfig writes back what ADK can read, and says what it cannot.
	lib := read(t, "testdata/library/library.evalset.json")
	crit := append(lib.Criteria, eval.Criterion{Evaluator: "interrupts"})
	out, dropped, err := adk.ExportConfig(crit)
	if err != nil || len(dropped) != 1 {
		t.Fatalf("export config: %v, dropped %v", err, dropped)
	}
	back, err := adk.ParseConfig(out)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(lib.Criteria, back); d != "" {
		t.Fatalf("config round trip:\n%s", d)
	}
}

func TestBadInput(t *testing.T) {
	for name, in := range map[string]string{
		"empty":            ``,
		"not json":         `{`,
		"no id":            `{"eval_cases":[]}`,
		"no cases":         `{"eval_set_id":"x"}`,
		"case without id":  `{"eval_set_id":"x","eval_cases":[{"conversation":[{"user_content":{"parts":[{"text":"a"}]}}]}]}`,
		"empty talk":       `{"eval_set_id":"x","eval_cases":[{"eval_id":"a","conversation":[]}]}`,
		"neither":          `{"eval_set_id":"x","eval_cases":[{"eval_id":"a"}]}`,
		"no user content":  `{"eval_set_id":"x","eval_cases":[{"eval_id":"a","conversation":[{"final_response":null}]}]}`,
		"duplicate":        `{"eval_set_id":"x","eval_cases":[{"eval_id":"a","conversation":[{"user_content":{"parts":[{"text":"a"}]}}]},{"eval_id":"a","conversation":[{"user_content":{"parts":[{"text":"b"}]}}]}]}`,
		"nameless tool":    `{"eval_set_id":"x","eval_cases":[{"eval_id":"a","conversation":[{"user_content":{"parts":[{"text":"a"}]},"intermediate_data":{"tool_uses":[{"args":{}}]}}]}]}`,
		"old no query":     `[{"reference":"x"}, {"query":"y"}]`,
		"old bad tool use": `[{"query":"y","expected_tool_use":[{"tool_input":{}}]}]`,
		"old empty list":   `[]`,
		"list of junk":     `[1,2]`,
	} {
		if _, err := adk.Parse([]byte(in), "x"); err == nil {
			t.Errorf("%s: want an error", name)
		} else if !strings.Contains(err.Error(), "adk") {
			t.Errorf("%s: the error should say where it comes from: %v", name, err)
		}
	}
}

// TestScoring scores ADK-style cases the way ADK documents its match
// types: the right tools in the wrong order fail EXACT and IN_ORDER and
// pass ANY_ORDER; an extra call between the right ones fails only EXACT.
func TestScoring(t *testing.T) {
	ds, err := adk.Parse([]byte(`{"eval_set_id":"s","eval_cases":[{"eval_id":"two","conversation":[
		{"user_content":{"parts":[{"text":"Reserve both."}]},"final_response":{"parts":[{"text":"Both books are reserved for you."}]},
		 "intermediate_data":{"tool_uses":[{"name":"find_book","args":{"title":"A"}},{"name":"reserve_book","args":{"title":"A"}}]}}]}]}`), "s")
	if err != nil {
		t.Fatal(err)
	}
	c := &ds.Cases[0]
	thread := func(calls ...[2]string) *eval.Thread {
		b := evaltest.NewThread().User("Reserve both.")
		for _, cl := range calls {
			b.Call(cl[0], cl[1], "ok")
		}
		return b.Assistant("Both books are now reserved for you.").Build()
	}
	find, reserve, extra := [2]string{"find_book", `{"title":"A"}`}, [2]string{"reserve_book", `{"title":"A"}`}, [2]string{"check_card", `{}`}
	score := func(cfg string, th *eval.Thread) float64 {
		crit, err := adk.ParseConfig([]byte(cfg))
		if err != nil {
			t.Fatal(err)
		}
		e, err := eval.New(crit[0])
		if err != nil {
			t.Fatal(err)
		}
		s, err := e.Evaluate(context.Background(), evaltest.Trial(c, th))
		if err != nil {
			t.Fatal(err)
		}
		return s.Value
	}
	cfg := func(match string) string {
		return `{"criteria":{"tool_trajectory_avg_score":{"threshold":1,"match_type":"` + match + `"}}}`
	}
	for _, tc := range []struct {
		name  string
		th    *eval.Thread
		exact float64
		order float64
		any   float64
	}{
		{"right", thread(find, reserve), 1, 1, 1},
		{"wrong order", thread(reserve, find), 0, 0, 1},
		{"extra between", thread(find, extra, reserve), 0, 1, 1},
		{"missing", thread(find), 0, 0, 0},
	} {
		if got := score(cfg("EXACT"), tc.th); got != tc.exact {
			t.Errorf("%s EXACT: %v, want %v", tc.name, got, tc.exact)
		}
		if got := score(cfg("IN_ORDER"), tc.th); got != tc.order {
			t.Errorf("%s IN_ORDER: %v, want %v", tc.name, got, tc.order)
		}
		if got := score(cfg("ANY_ORDER"), tc.th); got != tc.any {
			t.Errorf("%s ANY_ORDER: %v, want %v", tc.name, got, tc.any)
		}
	}
	// response_match_score: ROUGE-1 F of "both books are now reserved for
	// you" against "both books are reserved for you": p 6/7, r 1.
	got := score(`{"criteria":{"response_match_score":0.8}}`, thread(find, reserve))
	if want := 2 * (6.0 / 7) / (6.0/7 + 1); got < want-1e-9 || got > want+1e-9 {
		t.Errorf("response_match_score %v, want %v", got, want)
	}
}

func TestReadFileErrors(t *testing.T) {
	dir := t.TempDir()
	set := filepath.Join(dir, "a.evalset.json")
	if err := os.WriteFile(set, []byte(`{"eval_set_id":"a","eval_cases":[{"eval_id":"x","conversation":[{"user_content":{"parts":[{"text":"hi"}]}}]}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "test_config.json"), []byte(`{"criteria":{"safety_v1":1}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := adk.ReadFile(set); err == nil || !strings.Contains(err.Error(), "test_config.json") || !strings.Contains(err.Error(), "safety_v1") {
		t.Fatalf("a bad config beside the set: %v", err)
	}
	if _, err := adk.ReadFile(filepath.Join(dir, "missing.evalset.json")); err == nil {
		t.Fatal("a missing file must be an error")
	}
	if _, _, err := adk.Export(nil); err == nil {
		t.Fatal("exporting nothing must be an error")
	}
}
