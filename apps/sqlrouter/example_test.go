package sqlrouter

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trellis-agents/trellis/apps"
	"github.com/trellis-agents/trellis/apps/terminal"
	"github.com/trellis-agents/trellis/checkpoint"
	"github.com/trellis-agents/trellis/graph"
)

// The example as the CLI runs it: the sample database is created under
// the data directory, the scripted scenario runs in a console session, and
// the answer and the call chain are printed.
func TestExampleRunsInTheConsole(t *testing.T) {
	dir := t.TempDir()
	ex := Entry()
	if ex.Name != "sqlrouter" || ex.Summary == "" {
		t.Fatalf("app %q: %q", ex.Name, ex.Summary)
	}
	t.Setenv("OPENAI_API_KEY", "")
	var out strings.Builder
	db := filepath.Join(dir, "trellis.db")
	if err := terminal.Run(t.Context(), terminal.Streams{Out: &out, In: strings.NewReader("")}, ex, nil, "sqlrouter", terminal.Flags{Database: db}); err != nil {
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
	if err := terminal.PrintGraph(t.Context(), &graphOut, ex); err != nil || !strings.Contains(graphOut.String(), ExecuteAgent) {
		t.Errorf("PrintGraph: %v\n%s", err, graphOut.String())
	}
}

func TestExampleOpenFailsOnABadDataDir(t *testing.T) {
	file := filepath.Join(t.TempDir(), "plain-file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Entry().Open(t.Context(), apps.Env{Model: Script(), DataDir: file})
	if err == nil || !strings.Contains(err.Error(), "sample database") {
		t.Errorf("Open under a file: %v", err)
	}
}

// TestScriptServesManyThreads: one scripted model answers any number of
// threads the same way (its replies follow the request, not a queue).
func TestScriptServesManyThreads(t *testing.T) {
	app, err := New(t.Context(), Config{Model: Script(), Database: filepath.Join(t.TempDir(), SampleFile), Sample: true})
	if err != nil {
		t.Fatal(err)
	}
	defer app.Close()
	saver := checkpoint.NewMemory()
	for _, thread := range []string{"t1", "t2", "t3"} {
		res, err := app.Graph.Invoke(t.Context(), app.Input(""), graph.WithCheckpointer(saver), graph.WithThread(thread))
		if err != nil {
			t.Fatalf("%s: %v", thread, err)
		}
		if out := app.Outcome(t.Context(), res.State); !strings.Contains(out, "- fiction: 8 loans") {
			t.Errorf("%s:\n%s", thread, out)
		}
	}
}
