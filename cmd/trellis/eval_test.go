package main

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/trellis-agents/trellis/apps/builder"
	"github.com/trellis-agents/trellis/apps/terminal"
	"github.com/trellis-agents/trellis/eval"
	"github.com/trellis-agents/trellis/server"
)

// The CLI's test evaluators: "cli_finished" passes a trial whose run did
// not fail; "cli_contains" one whose state (as JSON) contains its text.
func init() {
	eval.Register("cli_finished", func(json.RawMessage) (eval.Evaluator, error) { return cliFinished{}, nil })
	eval.Register("cli_contains", func(p json.RawMessage) (eval.Evaluator, error) {
		var cfg struct{ Text string }
		err := json.Unmarshal(p, &cfg)
		return cliContains{cfg.Text}, err
	})
}

type cliFinished struct{}

func (cliFinished) Name() string { return "cli_finished" }
func (cliFinished) Evaluate(_ context.Context, t eval.Trial) (eval.Score, error) {
	if t.Thread.Error != "" {
		return eval.Score{Value: 0, Explanation: t.Thread.Error}, nil
	}
	return eval.Score{Value: 1}, nil
}

type cliContains struct{ text string }

func (cliContains) Name() string { return "cli_contains" }
func (c cliContains) Evaluate(_ context.Context, t eval.Trial) (eval.Score, error) {
	b, _ := json.Marshal(t.Thread.State)
	if strings.Contains(string(b), c.text) {
		return eval.Score{Value: 1}, nil
	}
	return eval.Score{Value: 0, Explanation: "the state does not mention " + c.text}, nil
}

// runEval runs trellis with args and returns stdout, stderr and the exit
// status Main would give.
func runEval(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	t.Setenv("OPENAI_API_KEY", "")
	t.Setenv("ANTHROPIC_API_KEY", "")
	root := newRoot()
	var out, errb bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&errb)
	root.SetArgs(args)
	err := root.ExecuteContext(context.Background())
	code := terminal.Report(&errb, "trellis", err)
	return out.String(), errb.String(), code
}

func writeDataset(t *testing.T, dir, text string) string {
	t.Helper()
	p := filepath.Join(dir, "ds.jsonl")
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// plannerDataset has a case the scripted planner passes (it books Quinta
// Verde) and one it fails (it never mentions Atlantis).
func plannerDataset(t *testing.T, dir string) string {
	return writeDataset(t, dir, `{"name":"planner-smoke","version":"1","criteria":[{"evaluator":"cli_finished"},{"evaluator":"cli_saw"},{"evaluator":"cli_contains","params":{"Text":"Quinta Verde"}}]}
`+plannerCase("books")+"\n"+strings.Replace(plannerCase("atlantis"), `"tags":["planner"]`, `"tags":["planner","wrong"],"criteria":[{"evaluator":"cli_contains","params":{"Text":"Atlantis"}}]`, 1)+"\n")
}

func TestEvalRunReportsAndExitStatus(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	ds := plannerDataset(t, dir)
	junit, js, page := filepath.Join(dir, "r.xml"), filepath.Join(dir, "r.json"), filepath.Join(dir, "r.html")
	out, errs, code := runEval(t, "eval", "run", ds, "--assistant", "planner", "--repeat", "2", "--concurrency", "2",
		"--junit", junit, "--json", js, "--html", page)
	if code != 1 {
		t.Fatalf("exit %d, want 1 (a case fails)\n%s\n%s", code, out, errs)
	}
	for _, want := range []string{"books", "atlantis", "FAIL", "1 of 2 cases passed", "pass@2"} {
		if !strings.Contains(out, want) {
			t.Errorf("the table lacks %q:\n%s", want, out)
		}
	}
	if !strings.Contains(errs, "[4/4]") || !strings.Contains(errs, "SCRIPTED") || !strings.Contains(errs, "1 of 2 cases failed") {
		t.Errorf("progress on stderr:\n%s", errs)
	}

	b, err := os.ReadFile(junit)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Tests    int `xml:"tests,attr"`
		Failures int `xml:"failures,attr"`
		Cases    []struct {
			Name    string `xml:"name,attr"`
			Failure *struct {
				Text string `xml:",chardata"`
			} `xml:"failure"`
		} `xml:"testsuite>testcase"`
	}
	if err := xml.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Tests != 2 || doc.Failures != 1 || len(doc.Cases) != 2 || doc.Cases[0].Failure != nil || doc.Cases[1].Failure == nil ||
		!strings.Contains(doc.Cases[1].Failure.Text, "the state does not mention Atlantis") {
		t.Fatalf("junit %+v", doc)
	}

	exp, err := eval.ReadExperiment(js)
	if err != nil {
		t.Fatal(err)
	}
	if exp.Repeat != 2 || len(exp.Cases) != 2 || !exp.Cases[0].Pass || exp.Cases[1].Pass || len(exp.Cases[0].Trials) != 2 {
		t.Fatalf("json %+v", exp)
	}

	h, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	html := string(h)
	if strings.Count(html, "<svg") < 2 || !strings.Contains(html, `data-case="books"`) || !strings.Contains(html, `data-case="atlantis"`) ||
		!strings.Contains(html, eval.PagePath(exp.Cases[0].Trials[0].ThreadID)) || strings.Contains(html, "<script") {
		t.Fatalf("html report lacks plots, case rows or thread links")
	}

	// Only the passing case: exit 0, and the comparison with the first run.
	out, errs, code = runEval(t, "eval", "run", ds, "--assistant", "planner", "--tag", "planner", "--tag", "nothing", "--baseline", js)
	if code != 1 {
		t.Fatalf("--tag planner selects both cases: exit %d\n%s%s", code, out, errs)
	}
	ds2 := writeDataset(t, dir, `{"name":"planner-smoke","criteria":[{"evaluator":"cli_finished"}]}
`+plannerCase("books")+"\n")
	out, errs, code = runEval(t, "eval", "run", ds2, "--assistant", "planner", "--baseline", js)
	if code != 0 {
		t.Fatalf("every case passes: exit %d\n%s%s", code, out, errs)
	}
	if !strings.Contains(out, "Against planner-smoke-planner-") {
		t.Fatalf("no comparison in the table:\n%s", out)
	}
}

func TestEvalRunBadUsage(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	ds := plannerDataset(t, dir)
	bad := filepath.Join(dir, "bad.jsonl")
	if err := os.WriteFile(bad, []byte(`{"name":"x"}`+"\n"+`{"id":"a","input":{"message":"m"},"expcet":{}}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	noEval := filepath.Join(dir, "noeval.jsonl")
	if err := os.WriteFile(noEval, []byte(`{"name":"x","criteria":[{"evaluator":"not_registered"}]}`+"\n"+`{"id":"a","input":{"message":"m"}}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// An ADK eval set that is not one: read by eval/adk, refused by name.
	badADK := filepath.Join(dir, "x.evalset.json")
	if err := os.WriteFile(badADK, []byte(`{"eval_set_id": 5, "eval_cases": "none"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"eval", "run"}, "give one DATASET"},
		{[]string{"eval", "run", ds}, "--assistant"},
		{[]string{"eval", "run", ds, "--assistant", "planner", "--bogus"}, "unknown flag"},
		{[]string{"eval", "run", filepath.Join(dir, "missing.jsonl"), "--assistant", "planner"}, "no such file"},
		{[]string{"eval", "run", bad, "--assistant", "planner"}, "bad.jsonl:2: json: unknown field \"expcet\""},
		{[]string{"eval", "run", badADK, "--assistant", "planner"}, "x.evalset.json"},
		{[]string{"eval", "run", ds, "--assistant", "nope"}, `no app "nope"`},
		{[]string{"eval", "run", noEval, "--assistant", "planner"}, `no evaluator "not_registered"`},
		{[]string{"eval", "run", ds, "--assistant", "planner", "--repeat", "0"}, "must be positive"},
		{[]string{"eval", "run", ds, "--assistant", "planner", "--baseline", ds}, "not an experiment"},
		{[]string{"eval"}, "run or record"},
		{[]string{"eval", "run", ds, "--assistant", "planner", "--assistant-version", "2"}, "needs --url"},
		{[]string{"eval", "run", ds, "--assistant", "planner", "--url", "http://127.0.0.1:1", "--assistant-version", "-1"}, "positive number"},
	} {
		out, errs, code := runEval(t, c.args...)
		if strings.Contains(errs, "Model:") {
			t.Errorf("%v: a model was chosen before the usage error:\n%s", c.args, errs)
		}
		if code != 2 || !strings.Contains(errs, c.want) {
			t.Errorf("%v: exit %d, stderr %q, want 2 and %q (stdout %q)", c.args, code, errs, c.want, out)
		}
	}
}

func TestEvalRunResumesANamedExperiment(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	ds := plannerDataset(t, dir)
	args := []string{"eval", "run", ds, "--assistant", "planner", "--experiment", "nightly", "--repeat", "2"}
	_, errs, code := runEval(t, args...)
	if code != 1 || !strings.Contains(errs, "[4/4]") {
		t.Fatalf("first run: exit %d\n%s", code, errs)
	}
	journal := filepath.Join(dir, ".trellis", "eval", "nightly.journal.jsonl")
	if _, err := os.Stat(journal); err != nil {
		t.Fatalf("no journal: %v", err)
	}
	out, errs, code := runEval(t, args...)
	if code != 1 || strings.Contains(errs, "[") || !strings.Contains(out, "1 of 2 cases passed") {
		t.Fatalf("the second run of a finished experiment ran trials again or lost results: exit %d\n%s\n%s", code, out, errs)
	}
}

func TestEvalRecordPrintsACase(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	ds := plannerDataset(t, dir)
	if _, errs, code := runEval(t, "eval", "run", ds, "--assistant", "planner", "--experiment", "rec", "--tag", "wrong", "--json", "e.json"); code != 1 {
		t.Fatalf("exit %d\n%s", code, errs)
	}
	exp, err := eval.ReadExperiment("e.json")
	if err != nil {
		t.Fatal(err)
	}
	out, errs, code := runEval(t, "eval", "record", exp.Cases[0].Trials[0].ThreadID, "--assistant", "planner")
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, errs)
	}
	back, err := eval.ReadDataset(strings.NewReader(`{"name":"r"}` + "\n" + out))
	if err != nil {
		t.Fatalf("record did not print a case line: %v\n%s", err, out)
	}
	c := back.Cases[0]
	if c.Input.Message != "Plan our team offsite" || len(c.Expect.Output) == 0 || !strings.Contains(errs, "answers") {
		t.Fatalf("recorded %+v\nstderr %s", c, errs)
	}
	if _, errs, code := runEval(t, "eval", "record", "no-such-thread", "--assistant", "planner"); code != 1 || !strings.Contains(errs, "no-such-thread") {
		t.Fatalf("a missing thread: exit %d %s", code, errs)
	}
}

// plannerCase is a case the scripted planner passes: the city, the form,
// the plan approved (twice: it is revised once the venues are known) and
// the booking approved.
func plannerCase(id string) string {
	return `{"id":"` + id + `","tags":["planner"],"input":{"message":"Plan our team offsite"},"answers":[` +
		`{"kind":"planexec_ask","question":"city","value":"Lisbon"},` +
		`{"kind":"planexec_ask","value":{"people":12,"length":"2 days","notes":"vegetarian food"}},` +
		`{"kind":"planexec_plan_review","repeat":true,"value":{"action":"approve"}},` +
		`{"kind":"tool_approval","repeat":true,"value":{"action":"approve"}}]}`
}

// cliSaw passes when the thread has messages, a node path and the
// interrupts answered, and explains what it lacked otherwise.
type cliSaw struct{}

func (cliSaw) Name() string { return "cli_saw" }
func (cliSaw) Evaluate(_ context.Context, t eval.Trial) (eval.Score, error) {
	th := t.Thread
	answered := 0
	for _, in := range th.Interrupts {
		if len(in.Answer) > 0 && in.Node != "" && in.Kind != "" {
			answered++
		}
	}
	if len(th.Messages) == 0 || len(th.Nodes) == 0 || answered < 4 || th.CheckpointID == "" {
		return eval.Score{Explanation: fmt.Sprintf("%d messages, nodes %v, %d answered interrupts, checkpoint %q", len(th.Messages), th.Nodes, answered, th.CheckpointID)}, nil
	}
	return eval.Score{Value: 1}, nil
}

func init() {
	eval.Register("cli_saw", func(json.RawMessage) (eval.Evaluator, error) { return cliSaw{}, nil })
}

// trellis eval run --url evaluates an assistant on a running trellis
// serve: the same planner case passes over HTTP, the evaluators see the
// messages, node path and answered interrupts, and the JUnit names the
// threads' pages on that server.
func TestEvalRunAgainstAServer(t *testing.T) {
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "")
	t.Setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "")
	t.Setenv("OPENAI_API_KEY", "")
	t.Setenv("ANTHROPIC_API_KEY", "")
	dir := t.TempDir()
	t.Chdir(dir)
	ctx, cancel := context.WithCancel(context.Background())
	root := newRoot()
	var out syncBuffer
	root.SetOut(&out)
	root.SetErr(&out)
	root.SetArgs([]string{"serve", "--addr", "127.0.0.1:0", "--log-format", "json", "--db", filepath.Join(dir, "s.db")})
	done := make(chan error, 1)
	go func() { done <- root.ExecuteContext(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v\n%s", err, out.String())
		}
	}()
	var url string
	for deadline := time.Now().Add(30 * time.Second); url == ""; time.Sleep(20 * time.Millisecond) {
		for _, line := range strings.Split(out.String(), "\n") {
			var rec map[string]any
			if json.Unmarshal([]byte(line), &rec) == nil && rec["msg"] == "trellis serve listening" {
				url, _ = rec["url"].(string)
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("serve did not start:\n%s", out.String())
		}
	}
	url = strings.TrimRight(url, "/")
	ds := writeDataset(t, dir, `{"name":"remote","criteria":[{"evaluator":"cli_finished"},{"evaluator":"cli_saw"},{"evaluator":"cli_contains","params":{"Text":"Quinta Verde"}}]}
`+plannerCase("books")+"\n")
	junit := filepath.Join(dir, "r.xml")
	stdout, errs, code := runEval(t, "eval", "run", ds, "--url", url, "--assistant", server.DefaultAssistantID("planner"), "--junit", junit, "--experiment", "remote1")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, errs)
	}
	b, err := os.ReadFile(junit)
	if err != nil {
		t.Fatal(err)
	}
	id := eval.ThreadID("remote1", "books", 0, 0)
	if !strings.Contains(string(b), url+"/#/thread/"+id) {
		t.Fatalf("the JUnit does not link the thread's page:\n%s", b)
	}
	// The thread is an ordinary one on the server, tagged with the case.
	resp, err := http.Get(url + "/threads/" + id)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var th struct {
		Metadata map[string]any `json:"metadata"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&th); err != nil || th.Metadata["eval_case"] != "books" || th.Metadata["eval_experiment"] != "remote1" {
		t.Fatalf("thread metadata %v (%v)", th.Metadata, err)
	}
	// Record reads it back over HTTP.
	rec, errs, code := runEval(t, "eval", "record", id, "--url", url, "--assistant", "planner")
	if code != 0 || !strings.Contains(rec, `"message":"Plan our team offsite"`) {
		t.Fatalf("record over HTTP: exit %d\n%s\n%s", code, rec, errs)
	}
	// The answers the runs sent come back, in order, and the recorded
	// case passes when run again.
	var recorded eval.Case
	if err := json.Unmarshal([]byte(rec), &recorded); err != nil {
		t.Fatal(err)
	}
	if len(recorded.Answers) != 5 || string(recorded.Answers[0].Value) != `"Lisbon"` || recorded.Answers[0].Kind != "" {
		t.Fatalf("recorded answers %+v", recorded.Answers)
	}
	recorded.ID = "again"
	recorded.Expect = eval.Expectations{}
	line, _ := json.Marshal(recorded)
	ds2 := writeDataset(t, dir, `{"name":"remote","criteria":[{"evaluator":"cli_finished"},{"evaluator":"cli_contains","params":{"Text":"Quinta Verde"}}]}`+"\n"+string(line)+"\n")
	if stdout, errs, code := runEval(t, "eval", "run", ds2, "--url", url, "--assistant", server.DefaultAssistantID("planner")); code != 0 {
		t.Fatalf("the recorded case does not pass again: exit %d\n%s\n%s", code, stdout, errs)
	}
	// A pinned version runs: the bundled assistant's version 1 passes; a
	// version it does not have fails the case with the server's reason.
	if stdout, errs, code := runEval(t, "eval", "run", ds2, "--url", url, "--assistant", server.DefaultAssistantID("planner"), "--assistant-version", "1"); code != 0 {
		t.Fatalf("--assistant-version 1: exit %d\n%s\n%s", code, stdout, errs)
	}
	// A dataset stored on the server runs by its name (and NAME@VERSION);
	// a name the server does not have is an unreadable dataset (exit 2).
	stored := `{"name":"stored-set","criteria":[{"evaluator":"cli_finished"},{"evaluator":"cli_contains","params":{"Text":"Quinta Verde"}}]}` + "\n" + string(line) + "\n"
	imp, err := http.Post(url+"/datasets/import", "application/x-ndjson", strings.NewReader(stored))
	if err != nil {
		t.Fatal(err)
	}
	imp.Body.Close()
	if imp.StatusCode != http.StatusOK {
		t.Fatalf("import: %s", imp.Status)
	}
	for _, ref := range []string{"stored-set", "stored-set@1"} {
		stdout, errs, code := runEval(t, "eval", "run", ref, "--url", url, "--assistant", server.DefaultAssistantID("planner"))
		if code != 0 || !strings.Contains(stdout+errs, "again") {
			t.Fatalf("stored dataset %s: exit %d\n%s\n%s", ref, code, stdout, errs)
		}
	}
	for ref, want := range map[string]string{"no-such-set": "no dataset with that ID or name", "stored-set@7": "version 7"} {
		stdout, errs, code := runEval(t, "eval", "run", ref, "--url", url, "--assistant", server.DefaultAssistantID("planner"))
		if code != 2 || !strings.Contains(errs, want) {
			t.Fatalf("stored dataset %s: exit %d, want 2 and %q\n%s\n%s", ref, code, want, stdout, errs)
		}
	}
	stdout, errs, code = runEval(t, "eval", "run", ds2, "--url", url, "--assistant", server.DefaultAssistantID("planner"), "--assistant-version", "9", "--verbose")
	if code != 1 || !strings.Contains(stdout+errs, "422 Unprocessable Entity") {
		t.Fatalf("--assistant-version 9: exit %d, want 1 and the server's 422\n%s\n%s", code, stdout, errs)
	}
}

// TestEvalRunShippedSets runs every app's own eval set through the CLI, as
// a team gating CI on it would: each passes on its scripted model.
func TestEvalRunShippedSets(t *testing.T) {
	for _, app := range []string{"planner", "scheduler", "sqlrouter", "builder", "testplanner", "deep"} {
		t.Run(app, func(t *testing.T) {
			dir := t.TempDir()
			set, err := filepath.Abs(filepath.Join("..", "..", "apps", app, "eval", app+".jsonl"))
			if err != nil {
				t.Fatal(err)
			}
			t.Chdir(dir)
			out, errs, code := runEval(t, "eval", "run", set, "--assistant", app, "--database", filepath.Join(dir, "d", "app.db"))
			if code != 0 {
				t.Fatalf("exit %d\n%s\n%s", code, out, errs)
			}
			if !strings.Contains(out, "cases passed (100.0%") {
				t.Fatalf("table:\n%s", out)
			}
		})
	}
}

// TestEvalRunADKSet runs an ADK eval set in the older *.test.json form,
// with test_config.json beside it, against the builder: its criteria come
// from the config (the trajectory must match), and a wrong expected
// argument fails the case with exit 1.
func TestEvalRunADKSet(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	write("test_config.json", `{"criteria": {"tool_trajectory_avg_score": 1.0}}`)
	set := func(topic string) string {
		return `[{"query": ` + strconvQuote(builder.Question) + `,
  "expected_tool_use": [
    {"tool_name": "lookup_policy", "tool_input": {"topic": "` + topic + `"}},
    {"tool_name": "lookup_policy", "tool_input": {"topic": "shipping"}}],
  "reference": "unused: the config sets no response criterion"}]`
	}
	good := write("returns.test.json", set("returns"))
	out, errs, code := runEval(t, "eval", "run", good, "--assistant", "builder", "--database", filepath.Join(dir, "d", "app.db"))
	if code != 0 || !strings.Contains(out, "TOOL_TRAJECTORY") {
		t.Fatalf("exit %d\n%s\n%s", code, out, errs)
	}
	bad := write("warranty.test.json", set("warranty"))
	out, errs, code = runEval(t, "eval", "run", bad, "--assistant", "builder", "--database", filepath.Join(dir, "d", "app.db"))
	if code != 1 || !strings.Contains(out, "warranty") {
		t.Fatalf("a wrong expected argument: exit %d, want 1\n%s\n%s", code, out, errs)
	}
}

func strconvQuote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// TestJudgeResolverOnlyDeclaredModels: a dataset's llm_judge may only name
// a model the operator declared; the error lists the declared ones. A
// declared model resolves through the same provider path as serve's.
func TestJudgeResolverOnlyDeclaredModels(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "trellis.yaml")
	if err := os.WriteFile(cfg, []byte("models:\n  judge: openai:gpt-4o-mini\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("OPENAI_API_KEY", "test-key")
	r, err := judgeResolver(evalFlags{config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r(context.Background(), "gpt-4o"); err == nil || !strings.Contains(err.Error(), `not declared`) || !strings.Contains(err.Error(), "[judge]") {
		t.Fatalf("an undeclared judge: %v", err)
	}
	if _, err := r(context.Background(), ""); err == nil || !strings.Contains(err.Error(), `"default"`) {
		t.Fatalf("no default model declared: %v", err)
	}
	m, err := r(context.Background(), "judge")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(m.Name(), "gpt-4o-mini") {
		t.Fatalf("the declared judge resolved to %s", m.Name())
	}
}
