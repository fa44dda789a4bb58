package terminal

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"log"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/spf13/pflag"

	"github.com/trellis-agents/trellis/apps"
	"github.com/trellis-agents/trellis/apps/scheduler"
	"github.com/trellis-agents/trellis/llm"
)

var demoAnswers = filepath.Join("..", "..", "apps", "scheduler", "testdata", "demo-answers.txt")

func run(t *testing.T, e apps.Entry, stdin string, f Flags) (string, error) {
	t.Helper()
	t.Setenv("OPENAI_API_KEY", "")
	var out strings.Builder
	err := Run(context.Background(), Streams{Out: &out, In: strings.NewReader(stdin)}, e, nil, "trellis demo", f)
	return out.String(), err
}

// TestMissingAnswersFileFailsFirst: --answers naming a missing file fails
// before the data directory or any database exists.
func TestMissingAnswersFileFailsFirst(t *testing.T) {
	t.Chdir(t.TempDir())
	_, err := run(t, scheduler.Entry(), "", Flags{Answers: "nosuch.txt"})
	if err == nil || !strings.Contains(err.Error(), "nosuch.txt") {
		t.Fatalf("err = %v", err)
	}
	if _, err := os.Stat(DefaultDir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s was created before the answers file was checked: %v", DefaultDir, err)
	}
}

// TestDataGoesUnderDotTrellis: by default every file a run makes is under
// ./.trellis/, none in the working directory itself.
func TestDataGoesUnderDotTrellis(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	for _, e := range []apps.Entry{scheduler.Entry()} {
		if out, err := run(t, e, "q\n", Flags{}); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
	}
	entries, _ := os.ReadDir(dir)
	for _, en := range entries {
		if en.Name() != DefaultDir {
			t.Errorf("the run left %s in the working directory", en.Name())
		}
	}
	if _, err := os.Stat(filepath.Join(DefaultDir, "trellis.db")); err != nil {
		t.Errorf("no %s: %v", DefaultDatabase, err)
	}
}

// TestFlagsAreOneStyle: --database is the flag, --db its alias.
func TestFlagsAreOneStyle(t *testing.T) {
	for _, args := range [][]string{{"--database", "x.db"}, {"--db", "x.db"}} {
		var f Flags
		fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
		AddFlags(fs, &f)
		if err := fs.Parse(args); err != nil || f.Database != "x.db" {
			t.Errorf("%v: database %q, %v", args, f.Database, err)
		}
	}
	var f Flags
	fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
	AddFlags(fs, &f)
	_ = fs.Parse(nil)
	if f.Database != DefaultDatabase || !strings.HasPrefix(f.Database, DefaultDir+string(filepath.Separator)) {
		t.Errorf("default database %q", f.Database)
	}
}

// TestBannerNamesTheModelAndWhereItRuns: the banner shows the model
// actually used and its base URL.
func TestBannerNamesTheModelAndWhereItRuns(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "")
	var out strings.Builder
	fake := func(spec string) (llm.Model, string, error) {
		return named{scheduler.Script(), "openai-compatible:qwen2.5"}, "http://10.0.0.5:11434/v1", nil
	}
	if _, err := ChooseModel(&out, Flags{Model: "ollama:qwen2.5"}, scheduler.Entry(), fake); err != nil {
		t.Fatal(err)
	}
	if got := out.String(); got != "Model: openai-compatible:qwen2.5 at http://10.0.0.5:11434/v1\n" {
		t.Errorf("banner = %q", got)
	}
}

type named struct {
	llm.Model
	name string
}

func (n named) Name() string { return n.name }

// flaky fails every request of step s1 while down is set, as a server
// answering 503 after the retries would.
type flaky struct {
	llm.Model
	down *atomic.Bool
}

var errOverloaded = errors.New("openai: 503 Service Unavailable: the server is overloaded (after 3 attempts)")

func (f flaky) failing(req *llm.Request) bool {
	if !f.down.Load() {
		return false
	}
	for _, m := range req.Messages {
		if strings.Contains(m.Text(), "Your step is s1:") {
			return true
		}
	}
	return false
}

func (f flaky) Generate(ctx context.Context, req *llm.Request) (*llm.Response, error) {
	if f.failing(req) {
		return nil, errOverloaded
	}
	return f.Model.Generate(ctx, req)
}

func (f flaky) Stream(ctx context.Context, req *llm.Request) iter.Seq2[llm.Chunk, error] {
	if f.failing(req) {
		return func(yield func(llm.Chunk, error) bool) { yield(llm.Chunk{}, errOverloaded) }
	}
	return f.Model.Stream(ctx, req)
}

// TestAFailedRunIsResumable: a model failure in a step fails the run
// (an error, so a non-zero exit) with a message saying what failed and
// what to do; the thread is not finished; running again without --resume
// says so; --resume retries the failed step and the run completes.
func TestAFailedRunIsResumable(t *testing.T) {
	down := new(atomic.Bool)
	down.Store(true)
	e := scheduler.Entry()
	script := e.Script
	e.Script = func() llm.Model { return flaky{script(), down} }
	db := filepath.Join(t.TempDir(), "t.db")
	var logs strings.Builder
	log.SetOutput(&logs)
	t.Cleanup(func() { log.SetOutput(os.Stderr) })
	out, err := run(t, e, "", Flags{Database: db, Answers: demoAnswers})
	var re *RunError
	if !errors.As(err, &re) || !errors.Is(err, ErrFailed) {
		t.Fatalf("a failed step gave err = %v\n%s", err, out)
	}
	msg := err.Error()
	for _, want := range []string{"503 Service Unavailable", "The thread is saved", "--resume"} {
		if !strings.Contains(msg, want) {
			t.Errorf("the message lacks %q: %s", want, msg)
		}
	}
	if !strings.HasPrefix(msg, "step s1 failed: llm: model llmtest:scripted: openai: 503 Service Unavailable") || strings.Contains(msg, "ContinueOnError") {
		t.Errorf("the message does not say plainly what failed: %s", msg)
	}
	if logs.Len() > 0 {
		t.Errorf("log lines were printed during the run:\n%s", logs.String())
	}
	if strings.Contains(msg, "\n") {
		t.Errorf("the message is not one line: %q", msg)
	}
	if strings.Contains(out, "Delivered:") {
		t.Errorf("the failed run delivered a summary:\n%s", out)
	}
	// Again without --resume: it says what happened and what to do.
	out, err = run(t, e, "", Flags{Database: db})
	if !errors.Is(err, ErrFailed) || !strings.Contains(err.Error(), "--resume") || strings.Contains(out, "This thread finished") {
		t.Fatalf("rerun: %v\n%s", err, out)
	}
	// The server is back: --resume retries s1 and the run finishes.
	down.Store(false)
	out, err = run(t, e, "y\ny\ny\n", Flags{Database: db, Resume: true})
	if err != nil {
		t.Fatalf("--resume: %v\n%s", err, out)
	}
	for _, want := range []string{"Retrying: the last run stopped", "> step s1: Look at the week", "Delivered:", "#20 Review for the algebra quiz: Tuesday slots 1-2"} {
		if !strings.Contains(out, want) {
			t.Errorf("the resumed run lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "> step s2:") {
		t.Errorf("the resumed run ran s2 again, which had succeeded:\n%s", out)
	}
	// Finished now: no failure left behind.
	out, err = run(t, e, "", Flags{Database: db})
	if err != nil || !strings.Contains(out, "This thread finished earlier") {
		t.Errorf("after the retry: %v\n%s", err, out)
	}
}

// TestAnswersAreKeptWhenQuitting: of the three approvals waiting at once,
// the two answered before quitting are saved as given; resuming asks only
// the third.
func TestAnswersAreKeptWhenQuitting(t *testing.T) {
	db := filepath.Join(t.TempDir(), "t.db")
	e := scheduler.Entry()
	// The form, the plan, two approvals (the second a rejection), quit.
	out, err := run(t, e, "6\n1\ny\ny\ny\nn\nnot on Thursday\nq\n", Flags{Database: db})
	if err != nil || strings.Count(out, "Approval needed") != 3 {
		t.Fatalf("first session: %v\n%s", err, out)
	}
	out, err = run(t, e, "y\n", Flags{Database: db})
	if err != nil {
		t.Fatalf("second session: %v\n%s", err, out)
	}
	if n := strings.Count(out, "Approval needed"); n != 1 {
		t.Errorf("the resumed session asked %d approvals, want 1 (two were answered before quitting):\n%s", n, out)
	}
	if !strings.Contains(out, "(using the answer you gave earlier") {
		t.Errorf("the resumed session does not say it used the saved answers:\n%s", out)
	}
	// The saved answers took effect: #20 placed, #21 rejected, #23 placed.
	for _, want := range []string{"#20 Review for the algebra quiz: Tuesday slots 1-2", "#21 Programming assignment 3: pending", "#23 Essay outline: Wednesday slot 5"} {
		if !strings.Contains(out, want) {
			t.Errorf("the outcome lacks %q:\n%s", want, out)
		}
	}
}

// TestSummaryIsOneLine: errors are shown as one line without task IDs.
func TestSummaryIsOneLine(t *testing.T) {
	err := errors.New("graph: node \"s\" (task 3baa3d89f6d9752cdc54784a7cdb71c0:0) failed:\n  detail\n  more")
	if got := Summary(err); got != `graph: node "s" failed:` {
		t.Errorf("Summary = %q", got)
	}
	nested := errors.New(`graph: node "dispatch" failed at step 8: x: graph: node "model" in subgraph "step:381504d44c5d3448cc580db0cf41020a" failed at step 1 (task 02416ba42d274dc8565a0cd5052faa7c): llm: boom`)
	if got := Summary(nested); got != "x: llm: boom" {
		t.Errorf("Summary = %q", got)
	}
	var w strings.Builder
	if code := Report(&w, "trellis", Verbose(true, errors.Join(errors.New("outer"), errors.New("inner")))); code != ExitFailed || !strings.Contains(w.String(), "details:") || !strings.Contains(w.String(), "inner") {
		t.Errorf("verbose report (%d):\n%s", code, w.String())
	}
	w.Reset()
	if code := Report(&w, "trellis", errors.New("boom")); code != ExitFailed || w.String() != "trellis: boom\n" {
		t.Errorf("report (%d): %q", code, w.String())
	}
	w.Reset()
	if Report(&w, "trellis", fmt.Errorf("outer: %w", errors.New("boom"))); !strings.HasSuffix(w.String(), "(run with --verbose for the details)\n") {
		t.Errorf("a wrapped error gives no --verbose hint: %q", w.String())
	}
}

// writes records each Write separately.
type writes struct{ parts []string }

func (w *writes) Write(p []byte) (int, error) {
	w.parts = append(w.parts, string(p))
	return len(p), nil
}

// TestDemoStreamsTheAnswer: the delivered answer reaches the terminal in
// pieces as the model writes it, after the steps' progress lines.
func TestDemoStreamsTheAnswer(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "")
	var w writes
	err := Run(context.Background(), Streams{Out: &w, In: strings.NewReader("")}, scheduler.Entry(), nil, "trellis demo",
		Flags{Database: filepath.Join(t.TempDir(), "t.db"), Answers: demoAnswers})
	if err != nil {
		t.Fatal(err)
	}
	start, end := -1, -1
	var sofar strings.Builder
	for i, p := range w.parts {
		sofar.WriteString(p)
		if strings.Contains(sofar.String(), "Delivered:") && start < 0 {
			start = i
		}
		if strings.Contains(sofar.String(), "as you asked") && end < 0 {
			end = i
		}
	}
	if start < 0 || end < 0 || end-start < 10 {
		t.Errorf("the answer came in %d writes (from %d to %d), want it streamed in many", end-start, start, end)
	}
	all := strings.Join(w.parts, "")
	if strings.Index(all, "> step s5: Check the result") > strings.Index(all, "Delivered:") {
		t.Error("step progress did not come before the answer")
	}
}

func TestShellQuote(t *testing.T) {
	for in, want := range map[string]string{"a/b.db": "a/b.db", "my data/t.db": "'my data/t.db'", "it's": `'it'\''s'`, "": "''"} {
		if got := shellQuote(in); got != want {
			t.Errorf("shellQuote(%q) = %s, want %s", in, got, want)
		}
	}
}
