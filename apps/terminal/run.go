// Package terminal runs an app in the terminal, with one behaviour for the
// trellis command (`trellis run X`, `trellis demo`) and a program's own
// main (examples/<name>, or yours: `terminal.Main(name,
// terminal.Command(entry, resolve.Provider))`): the same flags, the same
// model choice and banner, the same files (under ./.trellis/ by default),
// the same messages.
//
// It takes the model resolver as an argument (provider/resolve.Provider in
// the mains), so a program that links no vendor SDK can use it with its
// own models.
//
// It opens the thread's SQLite file, builds the app over the model the
// caller chose with the thread as its data scope, and drives a console
// session: a thread that stopped (at a question, a failure, Ctrl-C or a
// crash) resumes where it stopped.
package terminal

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/trellis-agents/trellis/agent/planexec"
	"github.com/trellis-agents/trellis/apps"
	"github.com/trellis-agents/trellis/apps/terminal/internal/console"
	"github.com/trellis-agents/trellis/checkpoint"
	"github.com/trellis-agents/trellis/checkpoint/sqlite"
	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/llm"
	"github.com/trellis-agents/trellis/store"
	storesqlite "github.com/trellis-agents/trellis/store/sqlite"
)

// DefaultDir is where runs keep their files unless --database says
// otherwise: the thread file and the apps' sample databases.
const DefaultDir = ".trellis"

// DefaultDatabase is the default --database.
var DefaultDatabase = filepath.Join(DefaultDir, "trellis.db")

// Flags are the options of a run, the same for every app and both commands.
type Flags struct {
	// Model is a model spec ("openai:gpt-4o-mini"); "" chooses
	// openai:gpt-4o-mini when OPENAI_API_KEY is set, else the app's
	// scripted model.
	Model string
	// Database is the SQLite file for threads, memory and the apps' data
	// (default DefaultDatabase); the apps' other files go next to it.
	Database string
	// Answers is a file of answers to replay at the prompts; it must exist
	// (checked before anything is created).
	Answers string
	// Thread is the thread ID (default: the app's name).
	Thread string
	// Fresh forgets the saved thread and the app's data for it first.
	Fresh bool
	// Resume retries a thread whose last run failed.
	Resume bool
	// Verbose shows errors in full (every wrapped cause).
	Verbose bool
}

// AddFlags declares the run flags on fs: --model, --database (alias
// --db), --answers, --thread, --new, --resume, --verbose.
func AddFlags(fs *pflag.FlagSet, f *Flags) {
	fs.StringVar(&f.Model, "model", "", `model spec, e.g. "openai:gpt-4o-mini", "anthropic:claude-sonnet-4-5", "ollama:qwen2.5" (default: OPENAI_API_KEY selects openai:gpt-4o-mini, else the scripted model)`)
	fs.StringVar(&f.Database, "database", DefaultDatabase, "SQLite file holding threads, memory and the apps' data; other files go next to it")
	fs.StringVar(&f.Database, "db", DefaultDatabase, "alias of --database")
	_ = fs.MarkHidden("db")
	fs.StringVar(&f.Answers, "answers", "", "file of answers to replay at the prompts, one per line (as typed)")
	fs.StringVar(&f.Thread, "thread", "", "thread ID (default: the app's name)")
	fs.BoolVar(&f.Fresh, "new", false, "forget the saved thread and start over")
	fs.BoolVar(&f.Resume, "resume", false, "retry a thread whose last run failed (a model timeout, a server error)")
	fs.BoolVar(&f.Verbose, "verbose", false, "show errors in full")
}

// Resolver turns a model spec into a model and a description of where it
// runs (the provider's base URL), for the banner. Mains pass
// resolve.Provider; this package never imports provider, so its tests
// never compile a vendor SDK.
type Resolver func(spec string) (model llm.Model, endpoint string, err error)

// Streams are a run's terminal.
type Streams struct {
	Out io.Writer
	In  io.Reader
}

// Invocation is how a person runs this again (for the messages that say how
// to resume), e.g. "trellis demo" or "go run ./examples/planner".
type Invocation string

// ChooseModel resolves f.Model (or OPENAI_API_KEY's default), or takes the
// app's scripted model, and prints the banner naming the model actually
// used.
func ChooseModel(w io.Writer, f Flags, e apps.Entry, resolve Resolver) (llm.Model, error) {
	spec := f.Model
	if spec == "" && os.Getenv("OPENAI_API_KEY") != "" {
		spec = "openai:gpt-4o-mini"
	}
	if spec == "" {
		fmt.Fprintf(w, "Model: SCRIPTED — a canned %s scenario, no real model is called (pass --model or set OPENAI_API_KEY for a real one).\n", e.Name)
		return e.Script(), nil
	}
	if resolve == nil {
		return nil, errors.New("this command cannot resolve model specs; run it through trellis or an examples/ main")
	}
	m, endpoint, err := resolve(spec)
	if err != nil {
		return nil, err
	}
	if endpoint != "" {
		fmt.Fprintf(w, "Model: %s at %s\n", m.Name(), endpoint)
	} else {
		fmt.Fprintf(w, "Model: %s\n", m.Name())
	}
	return llm.Retry(llm.WithTimeout(m, 2*time.Minute), llm.RetryPolicy{}), nil
}

// ErrFailed marks a run that stopped on an error with its thread saved;
// the CLI exits non-zero and says how to retry.
var ErrFailed = errors.New("the run failed")

// ErrInterrupted marks a run stopped by Ctrl-C with its thread saved.
var ErrInterrupted = errors.New("interrupted")

// Run runs the app e in the terminal: it checks the flags, chooses the
// model, opens the thread's files, resumes the saved thread where it
// stopped (or starts it), and answers questions from the answers file and
// then from the terminal. Quitting at a prompt keeps the thread. A failed
// run returns an error wrapping ErrFailed whose message says what failed
// and how to retry; Ctrl-C returns one wrapping ErrInterrupted.
func Run(ctx context.Context, term Streams, e apps.Entry, resolve Resolver, cmd Invocation, f Flags) error {
	// Everything that can be checked is checked before any file is made.
	var answers []string
	if f.Answers != "" {
		var err error
		if answers, err = console.LoadAnswers(f.Answers); err != nil {
			return err
		}
	}
	if f.Fresh && f.Resume {
		return errors.New("--new and --resume contradict each other; give one")
	}
	if f.Database == "" {
		f.Database = DefaultDatabase
	}
	if !f.Verbose {
		// Library log lines (a step failed, a retry) would land in the
		// middle of the conversation; the run's own messages say what
		// happened, and --verbose shows the logs too.
		prev := slog.Default()
		slog.SetDefault(slog.New(slog.DiscardHandler))
		defer slog.SetDefault(prev)
	}
	model, err := ChooseModel(term.Out, f, e, resolve)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(f.Database), 0o755); err != nil {
		return fmt.Errorf("cannot create the data directory: %w", err)
	}
	saver, err := sqlite.Open(ctx, f.Database)
	if err != nil {
		return err
	}
	defer saver.Close()
	st, err := storesqlite.Open(ctx, f.Database)
	if err != nil {
		return err
	}
	defer st.Close()
	thread := f.Thread
	if thread == "" {
		thread = e.Name
	}
	app, err := e.Open(ctx, apps.Env{Model: model, Database: f.Database, DataDir: filepath.Dir(f.Database), Scope: thread, Fresh: f.Fresh})
	if err != nil {
		return err
	}
	defer app.Close()
	if f.Fresh {
		if err := saver.DeleteThread(ctx, thread); err != nil {
			return err
		}
		if err := errors.Join(clearAnswers(ctx, st, thread), st.Delete(ctx, failedNS, thread)); err != nil {
			return err
		}
	}
	ctx = apps.WithScope(ctx, thread)
	opts := append([]graph.RunOption{graph.WithCheckpointer(saver), graph.WithThread(thread), graph.WithStore(st)}, app.Options...)
	s := newSession(app, term, answers, opts)
	s.Saved = &savedAnswers{store: st, thread: thread}
	s.Prompt.Editor = editor(term.In)
	fmt.Fprintf(term.Out, "Thread %q in %s.\n", thread, f.Database)

	rerun := fmt.Sprintf("%s --thread %s --database %s", cmd, shellQuote(thread), shellQuote(f.Database))
	if f.Thread == "" && f.Database == DefaultDatabase {
		rerun = string(cmd)
	}
	failure, err := lastFailure(ctx, st, thread)
	if err != nil {
		return err
	}
	snap, err := app.Graph.GetState(ctx, opts...)
	switch {
	case err != nil && !errors.Is(err, checkpoint.ErrNotFound):
		return err
	case failure != "" && !f.Resume:
		return fmt.Errorf("%w: the last run of thread %q stopped: %s. Run `%s --resume` to retry it, or --new to start over", ErrFailed, thread, failure, rerun)
	case err == nil && len(snap.Next) == 0:
		// The apps are one-task scenarios: a thread that already finished
		// shows its outcome instead of starting the task again on top of
		// its own results.
		fmt.Fprintf(term.Out, "This thread finished earlier; run with --new to start over.\n")
		fmt.Fprint(term.Out, "\n", app.Outcome(ctx, snap.Values))
		return nil
	case err == nil && f.Resume && app.Retry != nil:
		if upd := app.Retry(snap.Values); upd != nil {
			if _, err := app.Graph.UpdateState(ctx, upd, "", opts...); err != nil {
				return fmt.Errorf("cannot prepare the retry: %w", err)
			}
		}
	}
	if failure != "" {
		fmt.Fprintf(term.Out, "Retrying: the last run stopped: %s.\n", failure)
	}
	final, err := s.Run(ctx, app.Input(""))
	switch {
	case errors.Is(err, console.ErrQuit):
		fmt.Fprintf(term.Out, "\nStopped. The thread is saved: run `%s` to continue.\n", rerun)
		return nil
	case errors.Is(err, context.Canceled) || errors.Is(ctx.Err(), context.Canceled):
		fmt.Fprintf(term.Out, "\nInterrupted. The thread is saved: run `%s` to continue.\n", rerun)
		return fmt.Errorf("%w; the thread is saved: run `%s` to continue", ErrInterrupted, rerun)
	case err != nil:
		// The failure is kept with the thread, so that the next run says
		// what happened instead of failing the same way again.
		if merr := markFailed(context.WithoutCancel(ctx), st, thread, err); merr != nil {
			return errors.Join(err, merr)
		}
		return &RunError{Err: err, Retry: rerun + " --resume"}
	}
	if failure != "" {
		if err := st.Delete(ctx, failedNS, thread); err != nil {
			return err
		}
	}
	fmt.Fprint(term.Out, "\n", app.Outcome(ctx, final))
	return nil
}

// RunError is a run that failed with its thread saved: Error is one line
// saying what failed and how to retry; Unwrap gives the full cause
// (--verbose prints it).
type RunError struct {
	Err   error
	Retry string
}

func (e *RunError) Error() string {
	return fmt.Sprintf("%s. The thread is saved: run `%s` to retry", Summary(e.Err), e.Retry)
}

func (e *RunError) Unwrap() []error { return []error{ErrFailed, e.Err} }

// Session runs one thread of an app in the terminal the way Run does,
// without Run's files, banner and flags: for tests and programs that open
// the app and choose the checkpointer themselves.
type Session struct{ s *console.Session }

// NewSession builds the session that runs app: the app's printer and the
// planexec view (step progress, and the answer streamed token by token),
// and handlers for every interrupt the apps raise (planexec questions and
// plan reviews, router questions, tool approvals). Questions are answered
// from answers first (lines as typed, see LoadAnswers), then from term.In;
// opts choose the checkpointer and the thread.
func NewSession(app *apps.App, term Streams, answers []string, opts []graph.RunOption) *Session {
	return &Session{newSession(app, term, answers, opts)}
}

// Run continues the thread where it stopped, or starts it with input, and
// answers the questions until the run finishes; it returns the final
// state.
func (s *Session) Run(ctx context.Context, input graph.Update) (graph.State, error) {
	return s.s.Run(ctx, input)
}

// Unused returns the replayed answers no question has taken yet.
func (s *Session) Unused() []string { return s.s.Prompt.Answers }

// LoadAnswers reads an answers file: one answer per line, as it would be
// typed; blank lines and lines starting with # are skipped.
func LoadAnswers(path string) ([]string, error) { return console.LoadAnswers(path) }

func newSession(app *apps.App, term Streams, answers []string, opts []graph.RunOption) *console.Session {
	view := &console.PlanView{} // one per session: a plan shown as ready is not shown again for review
	var in *bufio.Reader
	if term.In != nil {
		in = bufio.NewReader(term.In)
	}
	return &console.Session{
		Graph:   app.Graph,
		Options: opts,
		Out:     term.Out,
		Events:  app.Events | graph.EventCustom | graph.EventMessages,
		Print: func(w io.Writer, ev graph.Event) {
			view.Print(w, ev)
			if app.Print != nil && ev.Kind&app.Events != 0 {
				app.Print(w, ev)
			}
		},
		Prompt: &console.Prompter{
			In: in, Out: term.Out, Answers: answers,
			Handlers: []console.Handler{console.PlanAsk, view.Review, console.RouterAsk, console.ToolApproval},
		},
	}
}

// PrintGraph prints e's graph as Mermaid (built on the scripted model,
// with its data in a temporary directory).
func PrintGraph(ctx context.Context, out io.Writer, e apps.Entry) error {
	dir, err := os.MkdirTemp("", "trellis-graph-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	app, err := e.Open(ctx, apps.Env{Model: e.Script(), Database: filepath.Join(dir, "graph.db"), DataDir: dir, Scope: e.Name})
	if err != nil {
		return err
	}
	defer app.Close()
	fmt.Fprintln(out, app.Graph.Mermaid())
	return nil
}

// Summary renders err as one line for a person: what failed, without the
// engine's wrapping (node names, task IDs, namespaces) — failed planexec
// steps by their IDs —, cut to 300 characters. --verbose shows the whole
// error instead.
func Summary(err error) string {
	var msg string
	var se *planexec.StepError
	if errors.As(err, &se) {
		parts := make([]string, 0, len(se.Failed))
		for _, id := range slices.Sorted(maps.Keys(se.Failed)) {
			parts = append(parts, fmt.Sprintf("step %s failed: %s", id, console.Plain(se.Failed[id])))
		}
		msg = strings.Join(parts, "; ")
	} else {
		msg = console.Plain(err.Error())
	}
	if i := strings.IndexByte(msg, '\n'); i >= 0 {
		msg = msg[:i]
	}
	msg = strings.Join(strings.Fields(msg), " ")
	const max = 300
	if r := []rune(msg); len(r) > max {
		msg = string(r[:max]) + "…"
	}
	return strings.TrimSuffix(msg, ".")
}

// answersNS and failedNS are where the CLI keeps, in the long-term store,
// the answers given to a thread's waiting questions and the failure of its
// last run.
var (
	answersNS = []string{"trellis", "cli", "answers"}
	failedNS  = []string{"trellis", "cli", "failed"}
)

// savedAnswers is the session's AnswerLog in the store: one item per
// thread holding the answers by interrupt ID.
type savedAnswers struct {
	store  store.Store
	thread string
}

func (a *savedAnswers) all(ctx context.Context) (map[string]json.RawMessage, error) {
	it, err := a.store.Get(ctx, answersNS, a.thread)
	if errors.Is(err, store.ErrNotFound) {
		return map[string]json.RawMessage{}, nil
	}
	if err != nil {
		return nil, err
	}
	m := map[string]json.RawMessage{}
	if err := json.Unmarshal(it.Value, &m); err != nil {
		return nil, fmt.Errorf("the saved answers of thread %q are corrupt (%v); run with --new to start over", a.thread, err)
	}
	return m, nil
}

func (a *savedAnswers) Load(ctx context.Context, id string) (json.RawMessage, bool, error) {
	m, err := a.all(ctx)
	if err != nil {
		return nil, false, err
	}
	raw, ok := m[id]
	return raw, ok, nil
}

func (a *savedAnswers) Save(ctx context.Context, id string, answer any) error {
	m, err := a.all(ctx)
	if err != nil {
		return err
	}
	raw, err := json.Marshal(answer)
	if err != nil {
		return fmt.Errorf("cannot save the answer: %w", err)
	}
	m[id] = raw
	b, err := json.Marshal(m)
	if err != nil {
		return err
	}
	return a.store.Put(ctx, answersNS, a.thread, b, store.PutOptions{})
}

func (a *savedAnswers) Clear(ctx context.Context) error { return clearAnswers(ctx, a.store, a.thread) }

func clearAnswers(ctx context.Context, st store.Store, thread string) error {
	return st.Delete(ctx, answersNS, thread)
}

// markFailed records that the thread's last run failed, with why.
func markFailed(ctx context.Context, st store.Store, thread string, cause error) error {
	b, err := json.Marshal(Summary(cause))
	if err != nil {
		return err
	}
	return st.Put(ctx, failedNS, thread, b, store.PutOptions{})
}

// lastFailure returns why the thread's last run failed, or "".
func lastFailure(ctx context.Context, st store.Store, thread string) (string, error) {
	it, err := st.Get(ctx, failedNS, thread)
	if errors.Is(err, store.ErrNotFound) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	var why string
	if json.Unmarshal(it.Value, &why) != nil || why == "" {
		why = "an error"
	}
	return why, nil
}

// editor returns the person's editor ($VISUAL, else $EDITOR) when in is
// the terminal, where an editor can run; else "" (plans are then edited
// as one line of JSON).
func editor(in io.Reader) string {
	f, ok := in.(*os.File)
	if !ok || f != os.Stdin {
		return ""
	}
	if st, err := f.Stat(); err != nil || st.Mode()&os.ModeCharDevice == 0 {
		return ""
	}
	if e := os.Getenv("VISUAL"); e != "" {
		return e
	}
	return os.Getenv("EDITOR")
}

// shellQuote quotes s for a POSIX shell when it holds anything but plain
// characters, so a printed command can be pasted as it is.
func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r == '/' || r == '.' || r == '-' || r == '_' || r == ':' || r == '=' || r == '+' || r == ',' ||
			('a' <= r && r <= 'z') || ('A' <= r && r <= 'Z') || ('0' <= r && r <= '9'))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
