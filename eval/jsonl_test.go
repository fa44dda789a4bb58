package eval_test

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/trellis-agents/trellis/eval"
)

func TestDatasetRoundTrip(t *testing.T) {
	ds := chatDataset()
	var buf bytes.Buffer
	if err := eval.WriteDataset(&buf, ds); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(buf.String(), "\n"); n != 1+len(ds.Cases) {
		t.Fatalf("%d lines, want a header and one per case", n)
	}
	back, err := eval.ReadDataset(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(ds, back); d != "" {
		t.Fatalf("round trip (-want +got):\n%s", d)
	}
}

func TestReadDatasetErrors(t *testing.T) {
	const head = `{"name":"d","criteria":[{"evaluator":"x"}]}` + "\n"
	for _, c := range []struct{ in, want string }{
		{"", "line 0: the dataset is empty"},
		{`{"version":"1"}`, `line 1: the header has no "name"`},
		{`{"name":"d","crtieria":[]}`, `line 1: the header: json: unknown field "crtieria"`},
		{head, "has no cases"},
		{head + "\n" + `{"id":"a","input":{"message":"hi"},"expcet":{}}`, `line 3: json: unknown field "expcet"`},
		{head + `{"input":{"message":"hi"}}`, `line 2: the case has no "id"`},
		{head + `{"id":"a","input":{}}`, `line 2: case "a": the input needs exactly one of "message" and "state"`},
		{head + `{"id":"a","input":{"state":[1]}}`, "input.state must be a JSON object"},
		{head + `{"id":"a","input":{"message":"x"},"answers":[{"question":"("}]}`, "answer 1 has no \"value\""},
		{head + `{"id":"a","input":{"message":"x"},"answers":[{"question":"(","value":"y"}]}`, "answer 1: question pattern"},
		{head + `{"id":"a","input":{"message":"x"}}` + "\n" + `{"id":"a","input":{"message":"y"}}`, `line 3: case "a" repeats the ID of line 2`},
		{head + `{"id":"a","input":{"message":"x"}} {}`, "line 2: more than one JSON value"},
		{head + `{"id":"a",`, "line 2: unexpected EOF"},
		{head + strings.Repeat(" ", eval.MaxLineBytes+1), "longer than"},
	} {
		_, err := eval.ReadDataset(strings.NewReader(c.in))
		var le *eval.LineError
		if err == nil || !errors.As(err, &le) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("input %.60q: error %v, want %q", c.in, err, c.want)
		}
	}
}

func TestLoadDatasetNamesTheFile(t *testing.T) {
	if _, err := eval.LoadDataset("testdata/missing.jsonl"); err == nil {
		t.Fatal("a missing file read")
	}
	ds, err := eval.LoadDataset("testdata/chat.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	if ds.Name != "chat" || len(ds.Cases) != 3 || ds.Cases[1].Answers[0].Kind != "confirm" {
		t.Fatalf("%+v", ds)
	}
}

// DecodeCase refuses what a dataset line may not hold and accepts what it
// may; DecodeCriterion also refuses an unregistered evaluator.
func TestDecodeCaseAndCriterion(t *testing.T) {
	c, err := eval.DecodeCase([]byte(`{"id":"a","input":{"message":"hi"},"tags":["x"]}`))
	if err != nil || c.ID != "a" || c.Input.Message != "hi" || len(c.Tags) != 1 {
		t.Fatalf("a good case: %+v %v", c, err)
	}
	for _, bad := range []string{
		`{"id":"a","input":{"message":"hi"},"expcet":{}}`, // misspelt
		`{"input":{"message":"hi"}}`,                      // no ID
		`{"id":"a","input":{}}`,                           // no input
		`{"id":"a","input":{"message":"hi"}} {}`,          // two values
		`[1]`,
	} {
		if _, err := eval.DecodeCase([]byte(bad)); err == nil {
			t.Errorf("DecodeCase(%s) accepted it", bad)
		}
	}
	if _, err := eval.DecodeCriterion([]byte(`{"evaluator":"no-such-evaluator"}`)); err == nil || !strings.Contains(err.Error(), "no-such-evaluator") {
		t.Errorf("an unknown evaluator: %v", err)
	}
	if _, err := eval.DecodeCriterion([]byte(`{"evaluator":"x","treshold":1}`)); err == nil || !strings.Contains(err.Error(), "treshold") {
		t.Errorf("a misspelt member: %v", err)
	}
}
