package sqlrouter

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trellis-agents/trellis/agent/router"
	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/internal/examples"
	"github.com/trellis-agents/trellis/internal/examples/cli"
	"github.com/trellis-agents/trellis/internal/examples/console"
)

// The example as the CLI runs it: the sample database is created under
// the data directory, the scripted scenario runs in a console session, and
// the answer and the call chain are printed.
func TestExampleRunsInTheConsole(t *testing.T) {
	dir := t.TempDir()
	ex := Example()
	if ex.Name != "sqlrouter" || ex.Summary == "" {
		t.Fatalf("example %q: %q", ex.Name, ex.Summary)
	}
	var out strings.Builder
	db := filepath.Join(dir, "trellis.db")
	if err := cli.Run(t.Context(), &out, strings.NewReader(""), ex, ex.Script(), cli.Flags{DB: db}); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	if _, err := os.Stat(filepath.Join(dir, SampleFile)); err != nil {
		t.Errorf("the sample database was not created: %v", err)
	}
	got := out.String()
	for _, want := range []string{
		"- discovery (call_discover): The question needs two tables:",
		"- validate_sql (call_validate) using call_generate: invalid: SQLite cannot compile the query",
		"- execute_sql (call_execute) using call_fix: Loans per genre in 2025:",
		"Answer (terminal, from execute_sql):",
		"- fiction: 8 loans",
		"Call chain:",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("the output lacks %q:\n%s", want, got)
		}
	}

	var graphOut strings.Builder
	if err := cli.PrintGraph(t.Context(), &graphOut, ex); err != nil || !strings.Contains(graphOut.String(), ExecuteAgent) {
		t.Errorf("PrintGraph: %v\n%s", err, graphOut.String())
	}
}

func TestExampleOpenFailsOnABadDataDir(t *testing.T) {
	file := filepath.Join(t.TempDir(), "plain-file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Example().Open(t.Context(), examples.Env{Model: Script(), DataDir: file})
	if err == nil || !strings.Contains(err.Error(), "sample database") {
		t.Errorf("Open under a file: %v", err)
	}
}

func TestAskHumanHandler(t *testing.T) {
	payload, _ := json.Marshal(router.Question{Kind: router.QuestionKind, CallID: "c1", Question: "Which year?"})
	var out strings.Builder
	p := &console.Prompter{Out: &out, Answers: []string{"2025"}}
	answer, ok, err := AskHuman(p, graph.InterruptInfo{ID: "x:0", Payload: payload})
	if err != nil || !ok || answer != "2025" || !strings.Contains(out.String(), "The router asks: Which year?") {
		t.Errorf("AskHuman = %v, %v, %v; printed %q", answer, ok, err, out.String())
	}
	if _, ok, _ := AskHuman(p, graph.InterruptInfo{ID: "y:0", Payload: json.RawMessage(`{"kind":"approval"}`)}); ok {
		t.Error("AskHuman took an interrupt that is not a question")
	}
}
