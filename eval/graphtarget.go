package eval

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/trellis-agents/trellis/checkpoint"
	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/llm"
)

// GraphTarget evaluates a compiled graph in-process: each run is an
// Invoke on the trial's thread of Saver.
type GraphTarget struct {
	// Graph is the compiled graph. Required.
	Graph *graph.Graph
	// Saver keeps the threads. Required.
	Saver checkpoint.Saver
	// Label names the target in reports (default: the graph's name).
	Label string
	// Message builds the update a user message sends (nil: the message
	// appended to MessagesKey).
	Message func(text string) (graph.Update, error)
	// MessagesKey is the state key holding the conversation (default
	// "messages"); Thread reads the messages from it.
	MessagesKey string
	// Options are added to every run (a store, a step limit).
	Options []graph.RunOption
	// Context, when set, prepares each run's context for the thread (an
	// app's data scope: apps.WithScope(ctx, threadID)).
	Context func(ctx context.Context, threadID string) context.Context
}

// Name returns Label or the graph's name.
func (g *GraphTarget) Name() string {
	if g.Label != "" {
		return g.Label
	}
	return g.Graph.Name()
}

func (g *GraphTarget) key() string {
	if g.MessagesKey != "" {
		return g.MessagesKey
	}
	return "messages"
}

func (g *GraphTarget) opts(id string) []graph.RunOption {
	return append([]graph.RunOption{graph.WithCheckpointer(g.Saver), graph.WithThread(id)}, g.Options...)
}

func (g *GraphTarget) ctx(ctx context.Context, id string) context.Context {
	if g.Context != nil {
		return g.Context(ctx, id)
	}
	return ctx
}

// Run invokes the graph on req.ThreadID with the input, the user message
// or the answers. Input.Context becomes the run context
// (graph.WithRunContext); Input.Config is not applied in-process (an app
// reads its configurable values when it is built).
func (g *GraphTarget) Run(ctx context.Context, req RunRequest) (*RunOutcome, error) {
	if g.Graph == nil || g.Saver == nil {
		return nil, errors.New("eval: GraphTarget needs a Graph and a Saver")
	}
	ctx = g.ctx(ctx, req.ThreadID)
	opts := g.opts(req.ThreadID)
	var input graph.Update
	switch {
	case len(req.Resume) > 0:
		m := make(map[string]any, len(req.Resume))
		for id, v := range req.Resume {
			m[id] = v
		}
		opts = append(opts, graph.WithResumeMap(m))
	case req.Input.Message != "":
		var err error
		if g.Message != nil {
			input, err = g.Message(req.Input.Message)
		} else {
			var b []byte
			if b, err = json.Marshal(map[string]any{g.key(): []llm.Message{llm.User(req.Input.Message)}}); err == nil {
				input, err = g.Graph.DecodeInput(b)
			}
		}
		if err != nil {
			return nil, fmt.Errorf("eval: the message as input: %w", err)
		}
	case len(req.Input.State) > 0:
		var err error
		if input, err = g.Graph.DecodeInput(req.Input.State); err != nil {
			return nil, fmt.Errorf("eval: input.state: %w", err)
		}
	default:
		return nil, errors.New("eval: the run request has no input, message or answers")
	}
	if req.Input.Context != nil {
		opts = append(opts, graph.WithRunContext(req.Input.Context))
	}
	res, err := g.Graph.Invoke(ctx, input, opts...)
	out := &RunOutcome{}
	if res != nil {
		for _, n := range res.Path {
			out.Nodes = append(out.Nodes, n.Node)
		}
		out.Usage = res.Usage()
		for _, in := range res.Interrupts {
			out.Interrupts = append(out.Interrupts, Interrupt{ID: in.ID, Node: in.Node, Payload: in.Payload})
		}
	}
	switch {
	case err == nil:
	case errors.Is(err, graph.ErrInterrupted) && len(out.Interrupts) > 0:
	case ctx.Err() != nil:
		return out, err
	default:
		out.Error = err.Error()
	}
	return out, nil
}

// Thread reads the thread's latest state: its values, the messages of
// MessagesKey and the checkpoint. The runner adds the node path, the
// interrupts and the usage it saw.
func (g *GraphTarget) Thread(ctx context.Context, id string) (*Thread, error) {
	snap, err := g.Graph.GetState(g.ctx(ctx, id), g.opts(id)...)
	if err != nil {
		return nil, err
	}
	return threadFromState(id, snap.Checkpoint.ID, snap.Values, g.key())
}

func threadFromState(id, checkpointID string, s graph.State, key string) (*Thread, error) {
	b, err := s.MarshalJSON()
	if err != nil {
		return nil, fmt.Errorf("eval: thread %s: the state as JSON: %w", id, err)
	}
	th := &Thread{ThreadID: id, CheckpointID: checkpointID}
	if err := json.Unmarshal(b, &th.State); err != nil {
		return nil, fmt.Errorf("eval: thread %s: %w", id, err)
	}
	if raw, ok := th.State[key]; ok && string(raw) != "null" {
		if err := json.Unmarshal(raw, &th.Messages); err != nil {
			return nil, fmt.Errorf("eval: thread %s: key %q does not hold messages: %w", id, key, err)
		}
	}
	return th, nil
}
