package terminal

import (
	"bufio"
	"context"
	"errors"
	"io"
	"iter"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/trellis-agents/trellis/apps/scheduler"
	"github.com/trellis-agents/trellis/llm"
)

// helperEnv makes the test binary act as a trellis-like command (see
// helperMain), so Ctrl-C can be tested on a real process.
const helperEnv = "TRELLIS_CLI_HELPER"

// helperMain runs Main when the test binary was started as the helper
// process, and reports whether it was (Main exits, so it never returns
// then).
func helperMain() bool {
	mode := os.Getenv(helperEnv)
	if mode == "" {
		return false
	}
	e := scheduler.Entry()
	if mode == "hang" {
		e.Script = func() llm.Model { return hanging{} }
	}
	c := Command(e, nil)
	c.SetArgs(strings.Fields(os.Getenv(helperEnv + "_ARGS")))
	Main("helper", c)
	return true
}

// hanging is a model whose call never returns and ignores cancellation,
// as a stuck network read would.
type hanging struct{}

func (hanging) Name() string { return "hanging" }
func (hanging) Generate(context.Context, *llm.Request) (*llm.Response, error) {
	select {}
}
func (h hanging) Stream(ctx context.Context, req *llm.Request) iter.Seq2[llm.Chunk, error] {
	return func(func(llm.Chunk, error) bool) { select {} }
}

type helper struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	output chan string // lines of stdout and stderr
	seen   strings.Builder
}

func startHelper(t *testing.T, mode, args string) *helper {
	t.Helper()
	if testing.Short() {
		t.Skip("starts a subprocess")
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"="+mode, helperEnv+"_ARGS="+args, "OPENAI_API_KEY=")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	h := &helper{cmd: cmd, stdin: stdin, output: make(chan string, 100)}
	go func() {
		r := bufio.NewReader(pr)
		for {
			// Prompts end without a newline: read what arrives.
			buf := make([]byte, 4096)
			n, err := r.Read(buf)
			if n > 0 {
				h.output <- string(buf[:n])
			}
			if err != nil {
				close(h.output)
				return
			}
		}
	}()
	go func() { cmd.Wait(); pw.Close() }()
	t.Cleanup(func() {
		cmd.Process.Kill()
		stdin.Close()
		for range h.output {
		}
	})
	return h
}

// waitFor reads the helper's output until it contains want.
func (h *helper) waitFor(t *testing.T, want string) {
	t.Helper()
	deadline := time.After(30 * time.Second)
	for !strings.Contains(h.seen.String(), want) {
		select {
		case s, ok := <-h.output:
			if !ok {
				t.Fatalf("the process ended before printing %q:\n%s", want, h.seen.String())
			}
			h.seen.WriteString(s)
		case <-deadline:
			t.Fatalf("no %q after 30 s:\n%s", want, h.seen.String())
		}
	}
}

// exit waits for the process to end and returns its exit code.
func (h *helper) exit(t *testing.T, within time.Duration) int {
	t.Helper()
	deadline := time.After(within)
	for {
		select {
		case s, ok := <-h.output:
			if !ok {
				return h.cmd.ProcessState.ExitCode()
			}
			h.seen.WriteString(s)
		case <-deadline:
			t.Fatalf("the process did not exit within %s:\n%s", within, h.seen.String())
		}
	}
}

// TestCtrlCAtAPromptSavesAndSaysHowToResume: Ctrl-C while the form waits
// for an answer stops the run at once, with the thread saved, the command
// to resume printed and exit status 130; running again resumes at the
// same question.
func TestCtrlCAtAPromptSavesAndSaysHowToResume(t *testing.T) {
	db := filepath.Join(t.TempDir(), "t.db")
	h := startHelper(t, "prompt", "--database "+db)
	h.waitFor(t, "Most study slots per day")
	if err := h.cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	if code := h.exit(t, 10*time.Second); code != ExitInterrupted {
		t.Errorf("exit status %d, want %d:\n%s", code, ExitInterrupted, h.seen.String())
	}
	out := h.seen.String()
	if !strings.Contains(out, "Interrupted. The thread is saved: run `go run ./examples/scheduler --thread scheduler --database "+db+"` to continue.") {
		t.Errorf("no resume command after Ctrl-C:\n%s", out)
	}
	if strings.Contains(out, "context canceled") {
		t.Errorf("a bare context error was shown:\n%s", out)
	}
	// The thread waits at the same question.
	got, err := run(t, scheduler.Entry(), "q\n", Flags{Database: db})
	if err != nil || !strings.Contains(got, "Resuming the saved thread") || !strings.Contains(got, "Most study slots per day") {
		t.Errorf("resume after Ctrl-C: %v\n%s", err, got)
	}
}

// TestCtrlCTwiceQuitsAtOnce: the first Ctrl-C asks the run to stop; when
// it cannot (a model call that ignores cancellation), the second exits at
// once.
func TestCtrlCTwiceQuitsAtOnce(t *testing.T) {
	db := filepath.Join(t.TempDir(), "t.db")
	h := startHelper(t, "hang", "--database "+db)
	h.waitFor(t, `Thread "scheduler"`)
	time.Sleep(200 * time.Millisecond) // into the model call
	if err := h.cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	h.waitFor(t, "press Ctrl-C again to quit at once")
	if err := h.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	if code := h.exit(t, 5*time.Second); code != ExitInterrupted {
		t.Errorf("exit status %d, want %d:\n%s", code, ExitInterrupted, h.seen.String())
	}
}

// waiting is a model that blocks until its context ends, as a network
// call does.
type waiting struct{ started chan struct{} }

func (waiting) Name() string { return "waiting" }
func (w waiting) Generate(ctx context.Context, _ *llm.Request) (*llm.Response, error) {
	close(w.started)
	<-ctx.Done()
	return nil, ctx.Err()
}
func (w waiting) Stream(ctx context.Context, req *llm.Request) iter.Seq2[llm.Chunk, error] {
	return func(yield func(llm.Chunk, error) bool) {
		_, err := w.Generate(ctx, req)
		yield(llm.Chunk{}, err)
	}
}

// TestCancelDuringAModelCall: cancelling while a model works stops the
// run with the thread saved and the resume command printed — not a bare
// "context canceled".
func TestCancelDuringAModelCall(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "")
	started := make(chan struct{})
	e := scheduler.Entry()
	e.Script = func() llm.Model { return waiting{started} }
	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-started; cancel() }()
	var out strings.Builder
	err := Run(ctx, Streams{Out: &out, In: strings.NewReader("")}, e, nil, "trellis demo", Flags{Database: filepath.Join(t.TempDir(), "t.db")})
	if !errors.Is(err, ErrInterrupted) || !strings.Contains(out.String(), "Interrupted. The thread is saved: run `trellis demo --thread scheduler --database") {
		t.Errorf("err = %v\n%s", err, out.String())
	}
	var w strings.Builder
	if code := Report(&w, "trellis", err); code != ExitInterrupted || w.Len() != 0 {
		t.Errorf("report: %d %q", code, w.String())
	}
}
