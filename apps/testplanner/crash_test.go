package testplanner

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"iter"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/llm"
	"github.com/trellis-agents/trellis/llm/llmtest"
	"github.com/trellis-agents/trellis/store"
)

// Environment of the child process that gets killed.
const (
	envChild = "TESTPLANNER_CRASH_CHILD" // the scenario's name
	envDir   = "TESTPLANNER_CRASH_DIR"   // the env directory, shared with the parent
)

// crashScenario says where the child dies: when the model receives the
// request kill matches, once the plans of wait are in the store (so no
// sibling is cut between its plan reply and saving it).
type crashScenario struct {
	name string
	kill llmtest.Matcher
	wait []string
	// storedBefore is how many plans the store holds after the kill.
	storedBefore int
}

var crashScenarios = []crashScenario{
	{name: "between batches", kill: PlanRequest("update_stock"), wait: []string{"search_products"}, storedBefore: 6},
	{name: "in a tool's query rounds", kill: AssessRequest("refund_payment", 1),
		wait: []string{"cancel_order", "create_order", "get_customer", "list_orders"}, storedBefore: 4},
}

// logged is a model that appends a line to a side log (synced, so it
// survives a kill) for each reply it returns: "plan <tool>" or
// "assess <tool> <round>". With a kill matcher, it kills the process
// instead of answering the matching request.
type logged struct {
	llm.Model
	log   string
	kill  func(*llm.Request) bool
	ready func() bool // polled before the kill
}

func label(req *llm.Request) string {
	r := &llmtest.Request{Request: *req}
	for _, name := range SampleToolNames() {
		if PlanRequest(name)(r) {
			return "plan " + name
		}
		for round := range 4 {
			if AssessRequest(name, round)(r) {
				return fmt.Sprintf("assess %s %d", name, round)
			}
		}
	}
	return "other"
}

func (l *logged) Generate(ctx context.Context, req *llm.Request) (*llm.Response, error) {
	if l.kill != nil && l.kill(req) {
		deadline := time.Now().Add(5 * time.Second)
		for !l.ready() && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond)
		}
		_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {} // the signal ends the process
	}
	resp, err := l.Model.Generate(ctx, req)
	if err == nil {
		appendLine(l.log, label(req))
	}
	return resp, err
}

func (l *logged) Stream(ctx context.Context, req *llm.Request) iter.Seq2[llm.Chunk, error] {
	return func(yield func(llm.Chunk, error) bool) {
		yield(llm.Chunk{}, errors.New("the crash test's model does not stream"))
	}
}

func appendLine(path, line string) {
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		panic(err)
	}
	defer f.Close()
	if _, err := fmt.Fprintln(f, line); err != nil {
		panic(err)
	}
	if err := f.Sync(); err != nil {
		panic(err)
	}
}

// crashChild runs the planner until its model kills the process; returning
// at all is a failure.
func crashChild() int {
	ctx := context.Background()
	var sc crashScenario
	for _, s := range crashScenarios {
		if s.name == os.Getenv(envChild) {
			sc = s
		}
	}
	if sc.kill == nil {
		fmt.Fprintln(os.Stderr, "child: unknown scenario", os.Getenv(envChild))
		return 3
	}
	dir := os.Getenv(envDir)
	e, closeFn, err := openEnv(ctx, dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		return 3
	}
	defer closeFn()
	m := &logged{Model: ScriptedModel(), log: filepath.Join(dir, "replies.log"),
		kill: func(req *llm.Request) bool { return sc.kill(&llmtest.Request{Request: *req}) },
		ready: func() bool {
			plans, err := LoadPlans(ctx, e.store, e.namespace())
			if err != nil {
				return false
			}
			have := map[string]bool{}
			for _, p := range plans {
				have[p.Tool] = true
			}
			for _, w := range sc.wait {
				if !have[w] {
					return false
				}
			}
			return true
		}}
	g, err := NewGraph(e.config(m))
	if err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		return 3
	}
	_, err = g.Invoke(ctx, Input(thread), e.durable()...)
	fmt.Fprintln(os.Stderr, "child: the run ended instead of being killed:", err)
	return 4
}

func readLog(t *testing.T, path string) map[string]int {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string]int{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		out[sc.Text()]++
	}
	return out
}

// A real process is killed in the middle of a run; a fresh process (this
// one) resumes the thread from the SQLite checkpoints and store, and no
// tool is planned twice.
func TestCrashAndResume(t *testing.T) {
	for _, sc := range crashScenarios {
		t.Run(strings.ReplaceAll(sc.name, " ", "_"), func(t *testing.T) {
			ctx := t.Context()
			dir := t.TempDir()
			cmd := exec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), envChild+"="+sc.name, envDir+"="+dir)
			out, err := cmd.CombinedOutput()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || !ee.Sys().(syscall.WaitStatus).Signaled() {
				t.Fatalf("the child did not die by a signal: %v\n%s", err, out)
			}

			e, closeFn, err := openEnv(ctx, dir)
			if err != nil {
				t.Fatal(err)
			}
			defer closeFn()
			stored, err := LoadPlans(ctx, e.store, e.namespace())
			if err != nil || len(stored) != sc.storedBefore {
				t.Fatalf("after the kill the store holds %d plans (%v), want %d", len(stored), err, sc.storedBefore)
			}
			before := readLog(t, filepath.Join(dir, "replies.log"))

			log := filepath.Join(dir, "replies.log")
			g, err := NewGraph(e.config(&logged{Model: ScriptedModel(), log: log}))
			if err != nil {
				t.Fatal(err)
			}
			res, err := g.Invoke(ctx, nil, e.durable()...)
			if err != nil {
				t.Fatal(err)
			}
			plans := Plans(res.State)
			if len(plans) != 7 {
				t.Fatalf("%d plans after the resume, want 7", len(plans))
			}
			after := readLog(t, log)
			t.Logf("model replies before the kill: %v; in both processes: %v", before, after)
			for _, name := range SampleToolNames() {
				if n := after["plan "+name]; n != 1 {
					t.Errorf("%s was planned %d times across the two processes, want once", name, n)
				}
			}
			for k, n := range after {
				if n != 1 {
					t.Errorf("%q was asked %d times across the two processes; every request should be asked once", k, n)
				}
			}
			if sc.name == "in a tool's query rounds" {
				// refund_payment resumed at its second assessment: the
				// first one and its queries were not redone.
				if before["assess refund_payment 0"] != 1 || after["assess refund_payment 1"] != 1 {
					t.Errorf("refund_payment's assessments: before %v, after %v", before, after)
				}
			}
			if got := planFor(t, plans, "refund_payment"); got.QueryRounds != 1 || got.Queries != 2 {
				t.Errorf("refund_payment after the resume: %d rounds, %d queries; want 1 and 2", got.QueryRounds, got.Queries)
			}
			stored, err = LoadPlans(ctx, e.store, e.namespace())
			if err != nil || len(stored) != 7 {
				t.Fatalf("the store holds %d plans (%v), want 7", len(stored), err)
			}
			bs, _, err := LoadBatchState(ctx, e.store, e.namespace())
			if err != nil || !bs.Complete || !slices.Equal(bs.Done, SampleToolNames()) {
				t.Errorf("batch state after the resume: %+v, %v", bs, err)
			}
			// Every item lives under the thread's namespace.
			items, err := e.store.Search(ctx, nil, store.Query{Limit: 100})
			if err != nil || len(items) != 8 {
				t.Errorf("the store holds %d items (%v), want 7 plans and the batch state", len(items), err)
			}
			if snap, err := g.GetState(ctx, graph.WithCheckpointer(e.saver), graph.WithThread(thread)); err != nil || len(snap.Next) != 0 {
				t.Errorf("the thread after the resume: %v, next %v; want it finished", err, snap)
			}
		})
	}
}
