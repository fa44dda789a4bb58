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
	dir := t.TempDir()
	args := []string{"-db", filepath.Join(dir, "shop.db"), "-state", filepath.Join(dir, "state.db"), "-thread", "t1"}
	var out strings.Builder
	if err := run(context.Background(), args, &out); err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	got := out.String()
	for _, want := range []string{
		"model: SCRIPTED",
		"created the sample shop database",
		"batch 2: all 7 tools planned",
		"batch 1, get_customer: planned 4 cases, 3 with values from the rows",
		"== get_customer (batch 1, 0 query rounds, 0 queries)",
		"== update_stock (batch 2,",
		`- full refund of a captured payment: {"amount":31.75,"payment_id":501,"reason":"damaged on arrival"}`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("the output lacks %q:\n%s", want, got)
		}
	}
	// The same thread again: the plans come from the store.
	out.Reset()
	if err := run(context.Background(), args, &out); err != nil {
		t.Fatal(err)
	}
	if got := out.String(); !strings.Contains(got, "resuming: 7 of 7 tools already have a plan in the store") || strings.Contains(got, "created the sample") {
		t.Errorf("second run:\n%s", got)
	}
	if err := run(context.Background(), append(args, "-mcp", " "), &out); err == nil || !strings.Contains(err.Error(), "names no command") {
		t.Errorf("a blank -mcp: %v", err)
	}
}
