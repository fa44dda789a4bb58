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
	// Answers are lines to use before reading In, in order.
	Answers []string
	// Handlers render and answer interrupts of known kinds, tried in
	// order; an interrupt no handler takes is shown as JSON and answered
	// with a JSON value typed on one line.
	Handlers []Handler
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
	if len(p.Answers) > 0 {
		line, p.Answers = p.Answers[0], p.Answers[1:]
		fmt.Fprintln(p.Out, line) // echo, so a replayed session reads like a typed one
	} else {
		if p.In == nil {
			fmt.Fprintln(p.Out)
			return "", ErrQuit
		}
		s, err := p.In.ReadString('\n')
		if err != nil && (s == "" || !errors.Is(err, io.EOF)) {
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
}

// Run continues the thread if it stopped in the middle (waiting for a
// person, or cut off by a crash), or else starts it with input, and keeps
// answering questions until the run finishes. It returns the final state.
func (s *Session) Run(ctx context.Context, input graph.Update) (graph.State, error) {
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
			if answers, err = s.answer(snap.Interrupts); err != nil {
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
		for ev, err := range s.Graph.Stream(ctx, input, opts...) {
			if err != nil {
				return last, err
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
		if answers, err = s.answer(waiting); err != nil {
			return last, err
		}
	}
}

func (s *Session) answer(waiting []graph.InterruptInfo) (map[string]any, error) {
	answers := make(map[string]any, len(waiting))
	for _, in := range waiting {
		a, err := s.Prompt.Answer(in)
		if err != nil {
			return nil, err
		}
		answers[in.ID] = a
	}
	return answers, nil
}
