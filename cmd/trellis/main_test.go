package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trellis-agents/trellis/apps/catalog"
)

func trellis(t *testing.T, stdin string, args ...string) (string, error) {
	t.Helper()
	t.Setenv("OPENAI_API_KEY", "")
	root := newRoot()
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&out)
	root.SetIn(strings.NewReader(stdin))
	root.SetArgs(args)
	err := root.ExecuteContext(context.Background())
	return out.String(), err
}

func TestRunBuilderScripted(t *testing.T) {
	db := filepath.Join(t.TempDir(), "t.db")
	out, err := trellis(t, "", "run", "builder", "--database", db)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	for _, want := range []string{"Model: SCRIPTED", `Thread "builder"`, "holds = true", "No changes needed"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if _, err := os.Stat(db); err != nil {
		t.Errorf("the thread file was not created: %v", err)
	}
}

func TestGraphAndList(t *testing.T) {
	out, err := trellis(t, "", "graph", "builder")
	if err != nil || !strings.HasPrefix(out, "flowchart TD") || !strings.Contains(out, "answer/route") {
		t.Fatalf("graph: %v\n%s", err, out)
	}
	out, err = trellis(t, "", "list")
	if err != nil || !strings.Contains(out, "builder") {
		t.Fatalf("list: %v\n%s", err, out)
	}
	if _, err := trellis(t, "", "run", "nosuch"); err == nil || !strings.Contains(err.Error(), "the apps are builder, deep, planner, scheduler, sqlrouter, testplanner") {
		t.Fatalf("unknown example: err = %v", err)
	}
	if _, err := trellis(t, "", "run", "builder", "--model", "gemini:pro"); err == nil || !strings.Contains(err.Error(), "unknown provider") {
		t.Fatalf("bad model spec: err = %v", err)
	}
}

func TestRunTestplannerScripted(t *testing.T) {
	db := filepath.Join(t.TempDir(), "t.db")
	out, err := trellis(t, "", "run", "testplanner", "--db", db)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if n := strings.Count(out, " cases (batch "); n != 7 {
		t.Errorf("%d plans in the outcome, want 7:\n%s", n, out)
	}
}

// TestDemoQuitAndResume runs the demo from the answers file CI uses, quits
// after the plan review, and resumes in a second invocation (a new
// scripted model, as in a new process) on the same database.
func TestDemoQuitAndResume(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "trellis.db")
	all, err := os.ReadFile(filepath.Join("..", "..", "apps", "scheduler", "testdata", "demo-answers.txt"))
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, l := range strings.Split(string(all), "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
			lines = append(lines, l)
		}
	}
	first := filepath.Join(dir, "first.txt")
	if err := os.WriteFile(first, []byte(strings.Join(lines[:4], "\n")+"\nq\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := trellis(t, "", "demo", "--database", db, "--answers", first)
	if err != nil || !strings.Contains(out, "Stopped. The thread is saved") || !strings.Contains(out, "Approval needed") {
		t.Fatalf("first run: %v\n%s", err, out)
	}
	out, err = trellis(t, strings.Join(lines[4:], "\n")+"\n", "demo", "--database", db)
	if err != nil {
		t.Fatalf("second run: %v\n%s", err, out)
	}
	for _, want := range []string{"Model: SCRIPTED", "Resuming the saved thread", "Delivered:", "#21 Programming assignment 3: Thursday slots 3-5"} {
		if !strings.Contains(out, want) {
			t.Errorf("second run lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "Question: A few details") {
		t.Errorf("the resumed demo asked the form again:\n%s", out)
	}
	// A finished thread shows its outcome rather than running again.
	out, err = trellis(t, "", "demo", "--database", db)
	if err != nil || !strings.Contains(out, "This thread finished earlier") || !strings.Contains(out, "#20 Review for the algebra quiz: Tuesday slots 1-2") {
		t.Errorf("third run: %v\n%s", err, out)
	}
	// --new starts over: the form is asked again and the schedule is reset.
	out, _ = trellis(t, "q\n", "demo", "--database", db, "--new")
	if !strings.Contains(out, "Question: A few details") {
		t.Errorf("--new did not start over:\n%s", out)
	}
}

// TestEveryExampleDraws prints every example's graph as Mermaid.
func TestEveryExampleDraws(t *testing.T) {
	for _, ex := range catalog.All() {
		t.Run(ex.Name, func(t *testing.T) {
			out, err := trellis(t, "", "graph", ex.Name)
			if err != nil || !strings.HasPrefix(out, "flowchart TD") {
				t.Fatalf("graph %s: %v\n%s", ex.Name, err, out)
			}
		})
	}
}

// TestMissingAnswersFileCreatesNothing: a wrong --answers fails before the
// data directory exists, with an error naming the file.
func TestMissingAnswersFileCreatesNothing(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	_, err := trellis(t, "", "demo", "--answers", "missing.txt")
	if err == nil || !strings.Contains(err.Error(), "missing.txt") {
		t.Fatalf("err = %v", err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("the failed command left %v behind", entries)
	}
}
