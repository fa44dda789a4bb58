package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestRunsOnTheScriptedModel(t *testing.T) {
	db := filepath.Join(t.TempDir(), "state.db")
	var out strings.Builder
	if err := run(context.Background(), []string{"--database", db}, &out, strings.NewReader("")); err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	for _, want := range []string{
		"Model: SCRIPTED",
		"Answer (terminal, from execute_sql):",
		"- fiction: 8 loans",
		"call_fix fix_sql",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the output lacks %q:\n%s", want, out.String())
		}
	}
	// The same thread again: it finished, so its outcome is shown again
	// without a new turn.
	out.Reset()
	if err := run(context.Background(), []string{"--database", db}, &out, strings.NewReader("")); err != nil {
		t.Fatalf("second run: %v\n%s", err, out.String())
	}
	if got := out.String(); !strings.Contains(got, "This thread finished earlier") || !strings.Contains(got, "- fiction: 8 loans") || strings.Count(got, "call_execute execute_sql") != 1 {
		t.Errorf("second run:\n%s", got)
	}
	if err := run(context.Background(), []string{"--model", "nosuch:model", "--database", db}, &out, nil); err == nil {
		t.Error("an unknown provider was accepted")
	}
}
