package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
)

func TestMainRunsTheScriptedAgent(t *testing.T) {
	var out strings.Builder
	db := filepath.Join(t.TempDir(), "builder.db")
	if err := run(context.Background(), []string{"--database", db}, &out, strings.NewReader("")); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), "No changes needed") || !strings.Contains(out.String(), "holds = true") {
		t.Errorf("output:\n%s", out.String())
	}
}
