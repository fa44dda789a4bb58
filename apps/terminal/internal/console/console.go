// Package console runs an example graph in a terminal: it streams the run,
// prints what happens, and when the run waits for a person it shows each
// question and reads the answer — from the keyboard, or from an answers
// file that replays typed lines (which is how CI drives the demo). The
// thread is durable: quitting while a question waits and starting again
// resumes the same thread at the same question.
package console

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/trellis-agents/trellis/checkpoint"
	"github.com/trellis-agents/trellis/graph"
)

// ErrQuit is returned when the person quits at a prompt (typing "q" or
// ending the input). The thread keeps waiting; run again to resume it.
var ErrQuit = errors.New("console: quit; the thread is saved and resumes where it stopped when run again")

// Prompter asks a person questions. Lines come first from the answers
// given (a replay of typed lines, echoed as if typed), then from In.
type Prompter struct {
	In  *bufio.Reader
	Out io.Writer
	// Ctx, when set, stops a prompt waiting for a line: Line returns
	// Ctx's error (Ctrl-C at a prompt is not ignored).
	Ctx context.Context
	// Answers are lines to use before reading In, in order.
	Answers []string
	// Editor is the command that edits a file (from $VISUAL or $EDITOR),
	// used for editing a plan; "" types it at the prompt instead. A
	// replayed answer never opens it.
	Editor string
	// EditorIO, when set, is the editor's output instead of the terminal
	// (for tests; the editor then gets no input).
	EditorIO io.Writer
	// Handlers render and answer interrupts of known kinds, tried in
	// order; an interrupt no handler takes is shown as JSON and answered
	// with a JSON value typed on one line.
	Handlers []Handler

	// The reader goroutine, started on first use: one line per request.
	reqs     chan struct{}
	lines    chan readResult
	waiting  bool // a request is out and its line not yet taken
	replayed bool // the last line came from Answers
}

type readResult struct {
	line string
	err  error
}

// Handler answers one kind of interrupt. It reports false when the
// interrupt is not its kind.
type Handler func(p *Prompter, in graph.InterruptInfo) (answer any, ok bool, err error)

// LoadAnswers reads an answers file: one answer per line, as it would be
// typed; blank lines and lines starting with # are skipped.
func LoadAnswers(path string) ([]string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("console: answers file: %w", err)
	}
	var out []string
	for line := range strings.Lines(string(data)) {
		line = strings.TrimRight(line, "\r\n")
		if t := strings.TrimSpace(line); t == "" || strings.HasPrefix(t, "#") {
			continue
		}
		out = append(out, line)
	}
	return out, nil
}

// Line prints prompt and returns the next answer line, trimmed. "q" or the
// end of the input returns ErrQuit.
func (p *Prompter) Line(prompt string) (string, error) {
	fmt.Fprint(p.Out, prompt)
	var line string
	p.replayed = len(p.Answers) > 0
	if len(p.Answers) > 0 {
		line, p.Answers = p.Answers[0], p.Answers[1:]
		fmt.Fprintln(p.Out, line) // echo, so a replayed session reads like a typed one
	} else {
		if p.In == nil {
			fmt.Fprintln(p.Out)
			return "", ErrQuit
		}
		s, err := p.read()
		if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) {
			fmt.Fprintln(p.Out)
			return "", err // the context's error: Ctrl-C at the prompt
		}
		if err != nil && s == "" {
			fmt.Fprintln(p.Out)
			return "", ErrQuit
		}
		line = s
	}
	line = strings.TrimSpace(line)
	if line == "q" {
		return "", ErrQuit
	}
	return line, nil
}

// read returns the next line of In, or Ctx's error as soon as Ctx ends.
// A reader goroutine reads one line per request, so nothing is read
// ahead; Stop ends it. After Ctrl-C at a prompt the goroutine may still
// wait for a line, which the next read takes.
func (p *Prompter) read() (string, error) {
	if p.Ctx == nil {
		return p.In.ReadString('\n')
	}
	if p.reqs == nil {
		p.reqs = make(chan struct{})
		p.lines = make(chan readResult, 1)
		go func(in *bufio.Reader, reqs <-chan struct{}, out chan<- readResult) {
			for range reqs {
				s, err := in.ReadString('\n')
				out <- readResult{s, err}
			}
		}(p.In, p.reqs, p.lines)
	}
	if !p.waiting {
		p.reqs <- struct{}{}
		p.waiting = true
	}
	select {
	case r := <-p.lines:
		p.waiting = false
		return r.line, r.err
	case <-p.Ctx.Done():
		return "", p.Ctx.Err()
	}
}

// Stop ends the goroutine that reads In for prompts that honour Ctx (it
// ends at once unless a read is still waiting for a line). A later prompt
// starts it again.
func (p *Prompter) Stop() {
	if p.reqs != nil && !p.waiting {
		close(p.reqs)
		p.reqs = nil
	}
}

// Answer asks the person about in and returns the answer to resume with.
func (p *Prompter) Answer(in graph.InterruptInfo) (any, error) {
	for _, h := range p.Handlers {
		a, ok, err := h(p, in)
		if ok || err != nil {
			return a, err
		}
	}
	fmt.Fprintf(p.Out, "\nThe run asks (%s):\n%s\n", in.Node, indentJSON(in.Payload))
	for {
		line, err := p.Line("Answer as JSON> ")
		if err != nil {
			return nil, err
		}
		if json.Valid([]byte(line)) {
			return json.RawMessage(line), nil
		}
		fmt.Fprintln(p.Out, "That is not valid JSON; try again (q quits).")
	}
}

func indentJSON(raw json.RawMessage) string {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return string(raw)
	}
	b, _ := json.MarshalIndent(v, "  ", "  ")
	return "  " + string(b)
}

// Session runs one thread of a graph in the terminal.
type Session struct {
	Graph *graph.Graph
	// Options select the checkpointer and thread (and anything else the
	// runs need); they are passed to every run and to GetState.
	Options []graph.RunOption
	Prompt  *Prompter
	Out     io.Writer
	// Events chooses the streamed event kinds passed to Print (the
	// interrupt events the session needs are always on).
	Events graph.EventKind
	// Print shows an event; nil prints nothing but questions.
	Print func(w io.Writer, ev graph.Event)
	// Saved, when set, keeps each answer as soon as it is given, so that
	// quitting after answering some of several waiting questions does not
	// ask them again when the thread resumes.
	Saved AnswerLog
}

// AnswerLog keeps the answers given to a thread's waiting interrupts, by
// interrupt ID, until the run that consumes them has started.
type AnswerLog interface {
	// Load returns the saved answer to the interrupt, if any.
	Load(ctx context.Context, interruptID string) (json.RawMessage, bool, error)
	// Save keeps an answer.
	Save(ctx context.Context, interruptID string, answer any) error
	// Clear forgets the answers given so far (they were used).
	Clear(ctx context.Context) error
}

// Run continues the thread if it stopped in the middle (waiting for a
// person, or cut off by a crash), or else starts it with input, and keeps
// answering questions until the run finishes. It returns the final state.
func (s *Session) Run(ctx context.Context, input graph.Update) (graph.State, error) {
	defer s.Prompt.Stop()
	snap, err := s.Graph.GetState(ctx, s.Options...)
	switch {
	case errors.Is(err, checkpoint.ErrNotFound):
		snap = nil
	case err != nil:
		return graph.State{}, err
	}
	var answers map[string]any
	if snap != nil && len(snap.Next) > 0 {
		fmt.Fprintln(s.Out, "Resuming the saved thread where it stopped.")
		input = nil
		if len(snap.Interrupts) > 0 {
			if answers, err = s.answer(ctx, snap.Interrupts); err != nil {
				return snap.Values, err
			}
		}
	}
	for {
		opts := append([]graph.RunOption{graph.WithEvents(s.Events | graph.EventInterrupt | graph.EventValues)}, s.Options...)
		if answers != nil {
			opts = append(opts, graph.WithResumeMap(answers))
		}
		var waiting []graph.InterruptInfo
		var last graph.State
		cleared := false
		for ev, err := range s.Graph.Stream(ctx, input, opts...) {
			if err != nil {
				return last, err
			}
			if answers != nil && !cleared && s.Saved != nil {
				// The run has taken the answers into its checkpoint.
				cleared = true
				if err := s.Saved.Clear(ctx); err != nil {
					return last, err
				}
			}
			switch {
			case ev.Kind == graph.EventInterrupt && ev.Namespace == "":
				waiting = append(waiting, ev.Interrupts...)
			case ev.Kind == graph.EventValues && ev.Namespace == "":
				last = ev.State
			}
			if s.Print != nil && ev.Kind&s.Events != 0 {
				s.Print(s.Out, ev)
			}
		}
		if len(waiting) == 0 {
			return last, nil
		}
		input = nil
		if answers, err = s.answer(ctx, waiting); err != nil {
			return last, err
		}
	}
}

// answer collects an answer to every waiting interrupt: the one saved
// earlier, or the person's, saved as soon as it is given.
func (s *Session) answer(ctx context.Context, waiting []graph.InterruptInfo) (map[string]any, error) {
	if s.Prompt.Ctx == nil {
		s.Prompt.Ctx = ctx
	}
	answers := make(map[string]any, len(waiting))
	for _, in := range waiting {
		if s.Saved != nil {
			raw, ok, err := s.Saved.Load(ctx, in.ID)
			if err != nil {
				return nil, err
			}
			if ok {
				fmt.Fprintf(s.Out, "(using the answer you gave earlier: %s)\n", raw)
				answers[in.ID] = raw
				continue
			}
		}
		a, err := s.Prompt.Answer(in)
		if err != nil {
			return nil, err
		}
		answers[in.ID] = a
		if s.Saved != nil {
			if err := s.Saved.Save(ctx, in.ID, a); err != nil {
				return nil, err
			}
		}
	}
	return answers, nil
}
