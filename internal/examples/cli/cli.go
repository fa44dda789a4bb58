// Package cli runs an example in the terminal for the trellis command and
// the example mains: it opens the thread's SQLite file, builds the example
// over the model the caller chose, and drives a console session.
package cli

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"

	"github.com/trellis-agents/trellis/checkpoint"
	"github.com/trellis-agents/trellis/checkpoint/sqlite"
	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/internal/examples"
	"github.com/trellis-agents/trellis/internal/examples/console"
	"github.com/trellis-agents/trellis/llm"
	storesqlite "github.com/trellis-agents/trellis/store/sqlite"
)

// Flags are the options of a run.
type Flags struct {
	// DB is the SQLite file for threads, memory and example data.
	DB string
	// Answers is a file of answers to replay at the prompts.
	Answers string
	// Thread is the thread ID (default: the example's name).
	Thread string
	// Fresh forgets the saved thread first.
	Fresh bool
}

// Run runs ex on model in the terminal: it resumes the saved thread where
// it stopped, or starts it, and answers questions from the answers file
// and then from in. Quitting at a prompt keeps the thread.
func Run(ctx context.Context, out io.Writer, in io.Reader, ex examples.Example, model llm.Model, f Flags) error {
	if f.DB == "" {
		f.DB = "trellis.db"
	}
	saver, err := sqlite.Open(ctx, f.DB)
	if err != nil {
		return err
	}
	defer saver.Close()
	st, err := storesqlite.Open(ctx, f.DB)
	if err != nil {
		return err
	}
	defer st.Close()
	thread := f.Thread
	if thread == "" {
		thread = ex.Name
	}
	inst, err := ex.Open(ctx, examples.Env{Model: model, DBPath: f.DB, DataDir: filepath.Dir(f.DB), Thread: thread, Fresh: f.Fresh})
	if err != nil {
		return err
	}
	if inst.Close != nil {
		defer inst.Close()
	}
	if f.Fresh {
		if err := saver.DeleteThread(ctx, thread); err != nil {
			return err
		}
	}
	var answers []string
	if f.Answers != "" {
		if answers, err = console.LoadAnswers(f.Answers); err != nil {
			return err
		}
	}
	opts := append([]graph.RunOption{graph.WithCheckpointer(saver), graph.WithThread(thread), graph.WithStore(st)}, inst.Options...)
	s := &console.Session{
		Graph:   inst.Graph,
		Options: opts,
		Out:     out,
		Events:  inst.Events,
		Print:   inst.Print,
		Prompt: &console.Prompter{
			In: bufio.NewReader(in), Out: out, Answers: answers,
			Handlers: append(slices.Clone(inst.Handlers), console.ToolApproval),
		},
	}
	fmt.Fprintf(out, "Thread %q in %s.\n", thread, f.DB)
	// The examples are one-task scenarios: a thread that already finished
	// shows its outcome instead of starting the task again on top of it.
	if snap, err := inst.Graph.GetState(ctx, opts...); err == nil && len(snap.Next) == 0 {
		fmt.Fprintf(out, "This thread finished earlier; run with --new to start over.\n")
		if inst.Outcome != nil {
			fmt.Fprint(out, "\n", inst.Outcome(snap.Values))
		}
		return nil
	} else if err != nil && !errors.Is(err, checkpoint.ErrNotFound) {
		return err
	}
	final, err := s.Run(ctx, inst.Input)
	if errors.Is(err, console.ErrQuit) {
		fmt.Fprintf(out, "\nStopped. The thread is saved: run the same command again to continue.\n")
		return nil
	}
	if err != nil {
		return err
	}
	if inst.Outcome != nil {
		fmt.Fprint(out, "\n", inst.Outcome(final))
	}
	return nil
}

// PrintGraph prints ex's graph as Mermaid (built on the scripted model,
// with its data in a temporary directory).
func PrintGraph(ctx context.Context, out io.Writer, ex examples.Example) error {
	dir, err := os.MkdirTemp("", "trellis-graph-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	db := filepath.Join(dir, "graph.db")
	inst, err := ex.Open(ctx, examples.Env{Model: ex.Script(), DBPath: db, DataDir: dir, Thread: ex.Name})
	if err != nil {
		return err
	}
	if inst.Close != nil {
		defer inst.Close()
	}
	fmt.Fprintln(out, inst.Graph.Mermaid())
	return nil
}
