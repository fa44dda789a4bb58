package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/trellis-agents/trellis/apps/planner"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// The demo as CI runs it: the scripted model, the answers file, a SQLite
// thread. Run again, the finished thread takes the task anew and, with no
// answers left, stops at the first question, saved.
func TestScriptedDemo(t *testing.T) {
	db := filepath.Join(t.TempDir(), "planner.db")
	answers := filepath.Join("..", "..", "apps", "planner", "testdata", "answers.txt")
	var out strings.Builder
	if err := run(context.Background(), []string{"--database", db, "--answers", answers}, &out, strings.NewReader("")); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	got := out.String()
	for _, want := range []string{
		"Model: SCRIPTED",
		"Question: " + planner.CityQuestion,
		"The plan was revised:",
		"Approval needed: Book Quinta Verde",
		"Delivered:\n" + planner.DeliveredText,
		"[done] book: Book the better venue",
		"OFF-001: Quinta Verde from Jun 9",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("the output lacks %q:\n%s", want, got)
		}
	}
	out.Reset()
	if err := run(context.Background(), []string{"--database", db}, &out, strings.NewReader("")); err != nil {
		t.Fatalf("second run: %v\n%s", err, out.String())
	}
	// The finished thread shows its outcome instead of running again...
	if got := out.String(); !strings.Contains(got, "This thread finished earlier") || !strings.Contains(got, "[done] book: Book the better venue") {
		t.Errorf("second run:\n%s", got)
	}
	// ...and -new starts it over, stopping saved at the first question.
	out.Reset()
	if err := run(context.Background(), []string{"--database", db, "--new"}, &out, strings.NewReader("")); err != nil {
		t.Fatalf("third run: %v\n%s", err, out.String())
	}
	if got := out.String(); !strings.Contains(got, "Question: "+planner.CityQuestion) || !strings.Contains(got, "Stopped. The thread is saved") {
		t.Errorf("third run:\n%s", got)
	}
	if err := run(context.Background(), []string{"--model", "nosuch:model", "--database", db}, &out, strings.NewReader("")); err == nil {
		t.Error("an unknown model spec was accepted")
	}
}
