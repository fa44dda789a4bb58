package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
)

func TestMainRunsTheDemoScenario(t *testing.T) {
	db := filepath.Join(t.TempDir(), "scheduler.db")
	answers := filepath.Join("..", "..", "apps", "scheduler", "testdata", "demo-answers.txt")
	var out strings.Builder
	if err := run(context.Background(), []string{"--database", db, "--answers", answers}, &out, strings.NewReader("")); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	for _, want := range []string{"Model: SCRIPTED", "Delivered:", "#20 Review for the algebra quiz: Tuesday slots 1-2"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	if err := run(context.Background(), []string{"--model", "nosuch:model", "--database", db}, &out, nil); err == nil || !strings.Contains(err.Error(), "unknown provider") {
		t.Errorf("bad spec: err = %v", err)
	}
}
