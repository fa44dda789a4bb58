package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
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
	out, err := trellis(t, "", "run", "builder", "--db", db)
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
	if _, err := trellis(t, "", "run", "nosuch"); err == nil || !strings.Contains(err.Error(), "the examples are builder, testplanner") {
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
