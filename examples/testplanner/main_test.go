package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestRunsOnTheScriptedModel(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "")
	dir := t.TempDir()
	args := []string{"--database", filepath.Join(dir, "state.db"), "--thread", "t1"}
	var out strings.Builder
	if err := run(context.Background(), args, &out, strings.NewReader("")); err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	got := out.String()
	for _, want := range []string{
		"Model: SCRIPTED",
		"batch 2: all 7 tools planned",
		"batch 1, get_customer: planned 4 cases, 3 with values from the rows",
		"== get_customer: 4 cases (batch 1, 0 query rounds, 0 queries)",
		"== update_stock: ",
		`- full refund of a captured payment: {"amount":31.75,"payment_id":501,"reason":"damaged on arrival"}`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("the output lacks %q:\n%s", want, got)
		}
	}
	// The sample shop database is created next to the thread file.
	if !fileExists(filepath.Join(dir, "testplanner-shop.db")) {
		t.Error("the sample shop database is not next to --database")
	}
	// The same thread again: it finished, so its plans are shown again.
	out.Reset()
	if err := run(context.Background(), args, &out, strings.NewReader("")); err != nil {
		t.Fatal(err)
	}
	if got := out.String(); !strings.Contains(got, "This thread finished earlier") || !strings.Contains(got, "== get_customer") {
		t.Errorf("second run:\n%s", got)
	}
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
