package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/trellis-agents/trellis/apps"
	"github.com/trellis-agents/trellis/apps/catalog"
	"github.com/trellis-agents/trellis/apps/terminal"
	"github.com/trellis-agents/trellis/checkpoint/sqlite"
	"github.com/trellis-agents/trellis/eval"
	_ "github.com/trellis-agents/trellis/eval/adk" // ADK eval sets by file name
	"github.com/trellis-agents/trellis/eval/evaluators"
	"github.com/trellis-agents/trellis/eval/report"
	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/llm"
	"github.com/trellis-agents/trellis/provider"
	storesqlite "github.com/trellis-agents/trellis/store/sqlite"
)

// Exit statuses of trellis eval run.
const (
	evalExitFailed = 1 // a case did not meet its criteria
	evalExitUsage  = 2 // bad usage, or a dataset that does not read
)

// usage marks err as bad usage (exit status 2).
func usage(err error) error { return &terminal.ExitError{Code: evalExitUsage, Err: err} }

// evalFlags are eval's options.
type evalFlags struct {
	assistant, url, apiKey, database, model, config  string
	experiment, journal, junit, json, html, baseline string
	repeat, concurrency, assistantVersion            int
	timeout                                          time.Duration
	tags                                             []string
	verbose                                          bool
}

func evalCommand() *cobra.Command {
	c := &cobra.Command{
		Use:   "eval",
		Short: "Evaluate an assistant on a dataset of cases, or record a thread as a case",
		Long: `Evaluate an assistant: trellis eval run runs every case of a dataset (a Trellis
JSONL file) against an app in-process or an assistant on a server, scores each
with the case's criteria, prints a table and writes JUnit, JSON and HTML
reports; trellis eval record prints a thread as a case to edit. See docs/eval.md.`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error { return usage(errors.New("name a subcommand: run or record")) },
	}
	c.AddCommand(evalRunCommand(), evalRecordCommand())
	return c
}

// targetFlags declares the flags choosing what is evaluated.
func targetFlags(c *cobra.Command, f *evalFlags) {
	fs := c.Flags()
	fs.StringVar(&f.assistant, "assistant", "", "the app (in-process) or the assistant ID or graph (with --url) to evaluate")
	fs.StringVar(&f.url, "url", "", "evaluate an assistant on this Trellis server instead of in-process")
	fs.IntVar(&f.assistantVersion, "assistant-version", 0, "with --url: run each case on this version of the assistant instead of its latest")
	fs.StringVar(&f.apiKey, "api-key", "", "the server's API key (default $TRELLIS_API_KEY)")
	fs.StringVar(&f.database, "database", terminal.DefaultDatabase, "in-process: the SQLite file keeping the threads")
	fs.StringVar(&f.model, "model", "", "in-process: model spec (default: the config file's models.default, else OPENAI_API_KEY / ANTHROPIC_API_KEY, else the app's scripted model)")
	fs.StringVar(&f.config, "config", "", "in-process: config file for models and apps settings (default ./"+DefaultConfigFile+" when it exists)")
	fs.BoolVar(&f.verbose, "verbose", false, "show errors in full")
	c.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usage(err) })
}

func evalRunCommand() *cobra.Command {
	var f evalFlags
	c := &cobra.Command{
		Use:   "run DATASET",
		Short: "Run a dataset's cases against an assistant and report; exit 1 when a case fails",
		Long: `Run every case of DATASET (a Trellis JSONL file, an ADK eval set, or with --url a
dataset stored on that server, by ID or name, NAME@N for version N) against
--assistant: in-process on the configured model (the app's scripted one when
none is configured), or on the server at --url. Progress goes to stderr, a table to stdout, reports to
--junit, --json and --html. Exit status: 0 when every case met its criteria in
every repetition, 1 when one did not, 2 on bad usage or an unreadable dataset.

Naming the experiment (--experiment) makes it resumable: results are journaled
next to the database, and running the same command again runs only the trials
without a result.`,
		RunE: func(c *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usage(fmt.Errorf("give one DATASET (a file, or with --url a stored dataset; got %d arguments)", len(args)))
			}
			return terminal.Verbose(f.verbose, evalRun(c, args[0], f))
		},
	}
	targetFlags(c, &f)
	fs := c.Flags()
	fs.IntVar(&f.repeat, "repeat", 1, "repetitions of each case (pass@k and pass^k use k = this)")
	fs.IntVar(&f.concurrency, "concurrency", 4, "trials running at once")
	fs.DurationVar(&f.timeout, "timeout", 5*time.Minute, "time limit of one trial")
	fs.StringVar(&f.experiment, "experiment", "", "experiment name (default: dataset, assistant and time); a named experiment resumes")
	fs.StringVar(&f.journal, "journal", "", "journal file (default with --experiment: .trellis/eval/NAME.journal.jsonl beside --database)")
	fs.StringVar(&f.junit, "junit", "", "write JUnit XML here")
	fs.StringVar(&f.json, "json", "", "write the experiment as JSON here (a later run's --baseline)")
	fs.StringVar(&f.html, "html", "", "write a self-contained HTML report here")
	fs.StringVar(&f.baseline, "baseline", "", "compare with this experiment's JSON (from --json)")
	fs.StringSliceVar(&f.tags, "tag", nil, "run only the cases with this tag (repeatable)")
	return c
}

func evalRecordCommand() *cobra.Command {
	var f evalFlags
	c := &cobra.Command{
		Use:   "record THREAD",
		Short: "Print a thread as a case (one JSONL line) to edit into a dataset",
		RunE: func(c *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usage(fmt.Errorf("give one THREAD ID (got %d arguments)", len(args)))
			}
			return terminal.Verbose(f.verbose, evalRecord(c, args[0], f))
		},
	}
	targetFlags(c, &f)
	return c
}

// evalTarget builds the target f names, and a function releasing it.
func evalTarget(ctx context.Context, w io.Writer, f evalFlags) (eval.Target, func(), error) {
	if f.assistant == "" {
		return nil, nil, usage(errors.New("name the assistant to evaluate with --assistant"))
	}
	if f.assistantVersion < 0 {
		return nil, nil, usage(fmt.Errorf("--assistant-version %d: a version is a positive number; list them with POST /assistants/{id}/versions", f.assistantVersion))
	}
	if f.assistantVersion > 0 && f.url == "" {
		return nil, nil, usage(errors.New("--assistant-version needs --url: in-process apps have no versions"))
	}
	if f.url != "" {
		key := f.apiKey
		if key == "" {
			key = os.Getenv("TRELLIS_API_KEY")
		}
		return &eval.ServerTarget{URL: f.url, APIKey: key, Assistant: f.assistant, AssistantVersion: f.assistantVersion}, func() {}, nil
	}
	e, err := catalog.Lookup(f.assistant)
	if err != nil {
		return nil, nil, usage(err)
	}
	file, err := loadConfig(f.config)
	if err != nil {
		return nil, nil, usage(err)
	}
	settings, err := appSettings(file.Apps)
	if err != nil {
		return nil, nil, usage(err)
	}
	// The models resolve as serve resolves them: the flag, the config
	// file's default, the environment's key, else the app's script.
	resolve := func(spec string) (llm.Model, error) {
		spec, opts := entryOptions(file, spec)
		return provider.Resolve(spec, opts...)
	}
	var model llm.Model
	if spec := defaultModel(f.model, file); spec != "" {
		if model, err = resolve(spec); err != nil {
			return nil, nil, usage(err)
		}
		fmt.Fprintf(w, "Model: %s\n", model.Name())
	} else {
		model = e.Script()
		fmt.Fprintf(w, "Model: SCRIPTED — %s's canned scenario, no real model is called.\n", e.Name)
	}
	if err := os.MkdirAll(filepath.Dir(f.database), 0o755); err != nil {
		return nil, nil, err
	}
	saver, err := sqlite.Open(ctx, f.database)
	if err != nil {
		return nil, nil, err
	}
	st, err := storesqlite.Open(ctx, f.database)
	if err != nil {
		saver.Close()
		return nil, nil, err
	}
	app, err := e.Open(ctx, apps.Env{Model: model, Database: f.database, DataDir: filepath.Dir(f.database), Settings: settings[e.Name],
		Resolve: func(name string) (llm.Model, error) { return resolve(file.ModelSpec(name)) }})
	if err != nil {
		st.Close()
		saver.Close()
		return nil, nil, err
	}
	t := &eval.GraphTarget{Graph: app.Graph, Saver: saver, Label: e.Name + " (" + model.Name() + ")",
		Message: func(text string) (graph.Update, error) { return app.Input(text), nil },
		Options: append([]graph.RunOption{graph.WithStore(st)}, app.Options...),
		Context: apps.WithScope}
	return t, func() { app.Close(); st.Close(); saver.Close() }, nil
}

func evalRun(c *cobra.Command, path string, f evalFlags) error {
	ctx := c.Context()
	judges, err := judgeResolver(f)
	if err != nil {
		return usage(err)
	}
	ctx = evaluators.WithJudges(ctx, judges)
	stderr := c.ErrOrStderr()
	ds, err := loadEvalDataset(ctx, path, f)
	if err != nil {
		return usage(err)
	}
	if f.repeat < 1 || f.concurrency < 1 || f.timeout <= 0 {
		return usage(errors.New("--repeat, --concurrency and --timeout must be positive"))
	}
	var base *eval.Experiment
	if f.baseline != "" {
		if base, err = eval.ReadExperiment(f.baseline); err != nil {
			return usage(err)
		}
	}
	// The dataset's criteria are checked before any model or server is
	// touched: a misspelt evaluator is bad usage, found at once.
	if err := (&eval.Runner{Tags: f.tags}).Check(ds); err != nil {
		return usage(err)
	}
	target, closeTarget, err := evalTarget(ctx, stderr, f)
	if err != nil {
		return err
	}
	defer closeTarget()
	name, journal := f.experiment, f.journal
	if name == "" {
		name = fmt.Sprintf("%s-%s-%s", ds.Name, f.assistant, time.Now().UTC().Format("20060102-150405"))
	} else if journal == "" {
		journal = filepath.Join(filepath.Dir(f.database), "eval", name+".journal.jsonl")
	}
	if journal != "" {
		if err := os.MkdirAll(filepath.Dir(journal), 0o755); err != nil {
			return err
		}
	}
	fmt.Fprintf(stderr, "Experiment %s: %d cases × %d of %s against %s\n", name, len(ds.Cases), f.repeat, ds.Name, target.Name())
	r := &eval.Runner{Target: target, Experiment: name, Repeat: f.repeat, Concurrency: f.concurrency, Timeout: f.timeout,
		Tags: f.tags, Journal: journal, Users: eval.UserResolver(judges),
		Progress: func(t eval.TrialResult, done, total int) {
			verdict := "pass"
			if !t.Pass {
				verdict = "FAIL"
			}
			fmt.Fprintf(stderr, "[%d/%d] %s #%d %s (%.1fs)\n", done, total, t.Case, t.Repetition, verdict, t.Latency.Seconds())
		}}
	exp, err := r.Run(ctx, ds)
	if exp == nil {
		if err != nil && !errors.Is(err, context.Canceled) {
			return usage(err) // nothing ran: the dataset or the options are wrong
		}
		return err
	}
	if err != nil {
		if journal != "" {
			fmt.Fprintf(stderr, "Stopped: %v. Run the same command again to continue experiment %s.\n", err, name)
		} else {
			fmt.Fprintf(stderr, "Stopped: %v. Name the experiment (--experiment) to make a run resumable.\n", err)
		}
		if errors.Is(err, context.Canceled) {
			return fmt.Errorf("%w: %w", terminal.ErrInterrupted, err)
		}
		return err
	}
	if base != nil {
		exp.Comparison = eval.Compare(base, exp, 1)
	}
	if err := report.Table(c.OutOrStdout(), exp); err != nil {
		return err
	}
	pageURL := strings.TrimRight(f.url, "/")
	writers := []struct {
		path  string
		write func(io.Writer) error
	}{
		{f.junit, func(w io.Writer) error { return report.JUnit(w, exp, pageURL) }},
		{f.json, func(w io.Writer) error { return eval.WriteExperiment(w, exp) }},
		{f.html, func(w io.Writer) error { return report.HTML(w, exp, pageURL) }},
	}
	for _, wr := range writers {
		if wr.path == "" {
			continue
		}
		if err := writeFile(wr.path, wr.write); err != nil {
			return err
		}
	}
	if exp.Summary.CasesPassed < exp.Summary.Cases {
		fmt.Fprintf(stderr, "%d of %d cases failed.\n", exp.Summary.Cases-exp.Summary.CasesPassed, exp.Summary.Cases)
		return &terminal.ExitError{Code: evalExitFailed}
	}
	return nil
}

// writeFile writes a report through a temporary file, so a failed write
// leaves no half report behind.
func writeFile(path string, write func(io.Writer) error) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".report-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if err := write(tmp); err != nil {
		tmp.Close()
		return fmt.Errorf("%s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

func evalRecord(c *cobra.Command, thread string, f evalFlags) error {
	target, closeTarget, err := evalTarget(c.Context(), c.ErrOrStderr(), f)
	if err != nil {
		return err
	}
	defer closeTarget()
	th, err := target.Thread(c.Context(), thread)
	if err != nil {
		return fmt.Errorf("thread %q: %w", thread, err)
	}
	if len(th.Messages) == 0 && len(th.State) == 0 {
		return fmt.Errorf("thread %q has no state", thread)
	}
	if st, ok := target.(*eval.ServerTarget); ok {
		// A server keeps each run's body, and so the answers sent.
		if th.Interrupts, err = st.Answers(c.Context(), thread); err != nil {
			return fmt.Errorf("thread %q: %w", thread, err)
		}
		fmt.Fprintln(c.ErrOrStderr(), "The answers come from the thread's runs, in order; give each a \"kind\" or \"question\" if the agent may ask in another order, and edit \"expect\".")
	} else {
		fmt.Fprintln(c.ErrOrStderr(), "The answers a person gave are not kept in a thread's checkpoints: add the case's \"answers\" (see docs/eval.md), and edit \"expect\".")
	}
	cs := eval.Record(th)
	var buf strings.Builder
	if err := eval.WriteDataset(&buf, &eval.Dataset{Name: "recorded", Cases: []eval.Case{cs}}); err != nil {
		return err
	}
	_, line, _ := strings.Cut(buf.String(), "\n")
	_, err = io.WriteString(c.OutOrStdout(), line)
	return err
}

// judgeResolver resolves the judge models llm_judge criteria name: only
// models the operator declared under models: in the configuration ("" is
// its default model), so a dataset cannot point the CLI at a model, or an
// API key at an address, that the operator did not choose.
func judgeResolver(f evalFlags) (evaluators.JudgeResolver, error) {
	file, err := loadConfig(f.config)
	if err != nil {
		return nil, err
	}
	return func(_ context.Context, name string) (llm.Model, error) {
		if name == "" {
			name = "default"
		}
		if _, ok := file.Models[name]; !ok {
			declared := make([]string, 0, len(file.Models))
			for n := range file.Models {
				declared = append(declared, n)
			}
			sort.Strings(declared)
			return nil, fmt.Errorf("judge model %q is not declared under models: in the configuration (declared: %v); declare it there, or name one of those", name, declared)
		}
		spec, opts := entryOptions(file, file.ModelSpec(name))
		return provider.Resolve(spec, opts...)
	}, nil
}
