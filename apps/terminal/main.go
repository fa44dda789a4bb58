package terminal

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/trellis-agents/trellis/apps"
)

// Exit statuses of Main.
const (
	ExitFailed      = 1   // the command failed (the message says what to do)
	ExitInterrupted = 130 // stopped by Ctrl-C; the thread is saved
)

// Command builds the command of an examples/<name> main: the app e with
// the run flags, exactly as `trellis run <name>` runs it.
func Command(e apps.Entry, resolve Resolver) *cobra.Command {
	var f Flags
	c := &cobra.Command{
		Use:           e.Name,
		Short:         e.Summary,
		Args:          cobra.NoArgs,
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(c *cobra.Command, _ []string) error {
			return Verbose(f.Verbose, Run(c.Context(), Streams{Out: c.OutOrStdout(), In: c.InOrStdin()}, e, resolve, Invocation("go run ./examples/"+e.Name), f))
		},
	}
	AddFlags(c.Flags(), &f)
	return c
}

// Main runs root with Ctrl-C handling and exits with its status: the first
// Ctrl-C (or SIGTERM) cancels the run, which saves the thread and prints
// how to resume; a second one exits at once. An error is printed as one
// line (in full with --verbose).
func Main(name string, root *cobra.Command) {
	ctx, cancel := context.WithCancel(context.Background())
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go func() {
		<-sigs
		fmt.Fprintln(os.Stderr, "\nStopping; what is running is saved… (press Ctrl-C again to quit at once)")
		cancel()
		<-sigs
		fmt.Fprintln(os.Stderr, "Quit at once; threads keep their last saved step.")
		os.Exit(ExitInterrupted)
	}()
	err := root.ExecuteContext(ctx)
	cancel()
	os.Exit(Report(os.Stderr, name, err))
}

// Report prints err for a person (one line, or in full when it was marked
// Verbose) and returns the exit status for it.
func Report(w io.Writer, name string, err error) int {
	if err == nil {
		return 0
	}
	if errors.Is(err, ErrInterrupted) {
		return ExitInterrupted // Run has said how to resume
	}
	code := ExitFailed
	var ec *ExitError
	if errors.As(err, &ec) {
		code = ec.Code
		if ec.Err == nil {
			return code // the command has said what happened
		}
	}
	var v *verboseError
	if errors.As(err, &v) {
		fmt.Fprintf(w, "%s: %s\n", name, Summary(err))
		fmt.Fprintln(w, "details:")
		for i, e := range chain(v.err) {
			fmt.Fprintf(w, "  %d. %s\n", i+1, e)
		}
	} else {
		fmt.Fprintf(w, "%s: %s\n", name, Summary(err))
		if len(chain(err)) > 1 || Summary(err) != strings.TrimSuffix(err.Error(), ".") {
			fmt.Fprintln(w, "(run with --verbose for the details)")
		}
	}
	return code
}

// ExitError is an error with its own exit status, for commands whose
// status means something beyond failure (trellis eval: 1 when a case
// failed, 2 for bad usage). A nil Err exits silently: the command has
// printed what happened.
type ExitError struct {
	Code int
	Err  error
}

func (e *ExitError) Error() string {
	if e.Err == nil {
		return fmt.Sprintf("exit status %d", e.Code)
	}
	return e.Err.Error()
}

func (e *ExitError) Unwrap() error { return e.Err }

// Verbose marks err to be reported in full (a nil err stays nil).
func Verbose(on bool, err error) error {
	if !on || err == nil {
		return err
	}
	return &verboseError{err}
}

type verboseError struct{ err error }

func (e *verboseError) Error() string { return e.err.Error() }
func (e *verboseError) Unwrap() error { return e.err }

// chain lists the distinct messages of err's causes, outermost first.
func chain(err error) []string {
	var out []string
	seen := map[string]bool{}
	var walk func(error)
	walk = func(e error) {
		if e == nil {
			return
		}
		if msg := e.Error(); !seen[msg] {
			seen[msg] = true
			out = append(out, msg)
		}
		switch u := e.(type) {
		case interface{ Unwrap() error }:
			walk(u.Unwrap())
		case interface{ Unwrap() []error }:
			for _, x := range u.Unwrap() {
				walk(x)
			}
		}
	}
	walk(err)
	return out
}
