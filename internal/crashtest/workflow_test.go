package crashtest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/trellis-agents/trellis/checkpoint/sqlite"
	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/workflow"
)

// A functional workflow's durable steps survive a SIGKILL on SQLite: a
// first child runs the workflow until it asks a person; a second resumes
// it with the answer and is killed in the middle, after two more steps;
// this process resumes the thread again. Every step that returned ran once
// across the three processes.

const (
	envWorkflow = "TRELLIS_CRASH_WORKFLOW" // set: the child runs this phase of the workflow
	wfSteps     = 5
	wfKillAfter = 3 // steps done when the second child dies
)

// orderFlow is a workflow of wfSteps durable steps, each logging to the
// side log; it asks for approval after the first. With kill, it kills the
// process once wfKillAfter steps are done.
func orderFlow(dir string, kill bool, opts ...graph.RunOption) (*workflow.Workflow[string, []string], error) {
	side := filepath.Join(dir, "side.log")
	return workflow.New("order", func(ctx context.Context, item string, _ *[]string) ([]string, error) {
		if err := sideEffect(side, "body"); err != nil {
			return nil, err
		}
		var done []string
		for i := range wfSteps {
			if i == 1 {
				ok, err := graph.Interrupt[bool](ctx, "go on with "+item+"?")
				if err != nil || !ok {
					return done, err
				}
			}
			if kill && i == wfKillAfter {
				_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
				select {}
			}
			name := fmt.Sprintf("step%d", i)
			v, err := graph.Durable(ctx, name, func(context.Context) (string, error) {
				if err := sideEffect(side, name); err != nil {
					return "", err
				}
				return name + ":" + item, nil
			})
			if err != nil {
				return nil, err
			}
			done = append(done, v)
		}
		return done, nil
	}, opts...)
}

// workflowChild runs one phase: "ask" starts the thread (it stops for the
// approval), "die" resumes it with the answer and is killed.
func workflowChild() int {
	ctx := context.Background()
	phase, dir := os.Getenv(envWorkflow), os.Getenv(envDir)
	saver, err := sqlite.Open(ctx, filepath.Join(dir, "threads.db"))
	if err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		return 3
	}
	defer saver.Close()
	w, err := orderFlow(dir, phase == "die", graph.WithCheckpointer(saver), graph.WithThread(thread))
	if err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		return 3
	}
	switch phase {
	case "ask":
		if _, err := w.Invoke(ctx, "book"); !errors.Is(err, graph.ErrInterrupted) {
			fmt.Fprintln(os.Stderr, "child: want an interrupt, got", err)
			return 4
		}
		return 0
	case "die":
		_, err := w.Resume(ctx, graph.WithResume(true))
		fmt.Fprintln(os.Stderr, "child: the run ended instead of being killed:", err)
		return 5
	}
	return 6
}

func TestWorkflowStepsSurviveACrash(t *testing.T) {
	dir := t.TempDir()
	for _, phase := range []string{"ask", "die"} {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), envWorkflow+"="+phase, envDir+"="+dir)
		out, err := cmd.CombinedOutput()
		var ee *exec.ExitError
		killed := errors.As(err, &ee) && ee.Sys().(syscall.WaitStatus).Signaled()
		if (phase == "die") != killed || (phase == "ask" && err != nil) {
			t.Fatalf("phase %s: err %v (killed %v)\n%s", phase, err, killed, out)
		}
	}
	before := countLines(t, filepath.Join(dir, "side.log"))
	for i := range wfSteps {
		want := 0
		if i < wfKillAfter {
			want = 1
		}
		if n := before[fmt.Sprintf("step%d", i)]; n != want {
			t.Fatalf("before the last resume step%d ran %d times, want %d (all: %v)", i, n, want, before)
		}
	}

	ctx := context.Background()
	saver, err := sqlite.Open(ctx, filepath.Join(dir, "threads.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer saver.Close()
	w, err := orderFlow(dir, false, graph.WithCheckpointer(saver), graph.WithThread(thread))
	if err != nil {
		t.Fatal(err)
	}
	out, err := w.Resume(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(out) != wfSteps || out[0] != "step0:book" || out[wfSteps-1] != fmt.Sprintf("step%d:book", wfSteps-1) {
		t.Errorf("output %v", out)
	}
	after := countLines(t, filepath.Join(dir, "side.log"))
	t.Logf("runs across the three processes: %v", after)
	for i := range wfSteps {
		if n := after[fmt.Sprintf("step%d", i)]; n != 1 {
			t.Errorf("step%d ran %d times across the processes, want once", i, n)
		}
	}
	if after["body"] != 3 {
		t.Errorf("the function ran %d times, want 3 (ask, resume and die, resume after the crash)", after["body"])
	}
}
