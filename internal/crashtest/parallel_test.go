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

// Parallel durable steps (graph.Go) survive a SIGKILL on SQLite: a child
// starts four parallel steps; two finish and are saved, and the process
// is killed while the other two are still running; this process resumes
// the thread. Every step that returned ran once across the processes, and
// the two that were cut off ran once, after the crash.

const (
	envParallel = "TRELLIS_CRASH_PARALLEL" // set: the child runs the parallel workflow and dies
	parSteps    = 4
	parFinished = 2 // steps saved when the child dies
)

// fanFlow starts parSteps parallel steps, each logging to the side log.
// With kill, steps parFinished and later wait until the first ones are
// saved, and the first of them kills the process.
func fanFlow(dir string, kill bool, opts ...graph.RunOption) (*workflow.Workflow[string, []string], error) {
	side := filepath.Join(dir, "side.log")
	return workflow.New("fan", func(ctx context.Context, item string, _ *[]string) ([]string, error) {
		if err := sideEffect(side, "body"); err != nil {
			return nil, err
		}
		var fs []*graph.Future[string]
		for i := range parSteps {
			name := fmt.Sprintf("par%d", i)
			early := fs // the futures of the steps started before this one
			fs = append(fs, graph.Go(ctx, name, func(ctx context.Context) (string, error) {
				if kill && i >= parFinished {
					for _, f := range early[:parFinished] {
						<-f.Done() // saved: Done closes after the save
					}
					if i == parFinished {
						_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
					}
					select {} // still running when the process dies
				}
				if err := sideEffect(side, name); err != nil {
					return "", err
				}
				return name + ":" + item, nil
			}))
		}
		out := make([]string, 0, parSteps)
		for _, f := range fs {
			v, err := f.Wait(ctx)
			if err != nil {
				return nil, err
			}
			out = append(out, v)
		}
		return out, nil
	}, opts...)
}

// parallelChild runs the parallel workflow until it is killed.
func parallelChild() int {
	ctx := context.Background()
	dir := os.Getenv(envDir)
	saver, err := sqlite.Open(ctx, filepath.Join(dir, "threads.db"))
	if err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		return 3
	}
	defer saver.Close()
	w, err := fanFlow(dir, true, graph.WithCheckpointer(saver), graph.WithThread(thread))
	if err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		return 3
	}
	_, err = w.Invoke(ctx, "ship")
	fmt.Fprintln(os.Stderr, "child: the run ended instead of being killed:", err)
	return 5
}

func TestParallelStepsSurviveACrash(t *testing.T) {
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), envParallel+"=1", envDir+"="+dir)
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || !ee.Sys().(syscall.WaitStatus).Signaled() {
		t.Fatalf("the child was not killed: %v\n%s", err, out)
	}
	before := countLines(t, filepath.Join(dir, "side.log"))
	for i := range parSteps {
		want := 0
		if i < parFinished {
			want = 1
		}
		if n := before[fmt.Sprintf("par%d", i)]; n != want {
			t.Fatalf("before the resume par%d ran %d times, want %d (all: %v)", i, n, want, before)
		}
	}

	ctx := context.Background()
	saver, err := sqlite.Open(ctx, filepath.Join(dir, "threads.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer saver.Close()
	w, err := fanFlow(dir, false, graph.WithCheckpointer(saver), graph.WithThread(thread))
	if err != nil {
		t.Fatal(err)
	}
	snap, err := w.Graph().GetState(ctx, graph.WithCheckpointer(saver), graph.WithThread(thread))
	if err != nil {
		t.Fatal(err)
	}
	if len(snap.Tasks) != 1 || len(snap.Tasks[0].Steps) != parFinished {
		t.Errorf("saved steps after the crash: %+v, want %d", snap.Tasks, parFinished)
	}
	res, err := w.Resume(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range res {
		if want := fmt.Sprintf("par%d:ship", i); v != want {
			t.Errorf("output %d = %q, want %q", i, v, want)
		}
	}
	after := countLines(t, filepath.Join(dir, "side.log"))
	t.Logf("runs across the two processes: %v", after)
	for i := range parSteps {
		if n := after[fmt.Sprintf("par%d", i)]; n != 1 {
			t.Errorf("par%d ran %d times across the processes, want once", i, n)
		}
	}
	if after["body"] != 2 {
		t.Errorf("the function ran %d times, want 2 (killed, resumed)", after["body"])
	}
}
