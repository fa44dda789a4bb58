// Command servegraphs serves a graph of your own with Trellis's agent
// service: the same LangGraph-compatible API as `trellis serve`, over the
// graphs this main registers. Copy it into your module and replace the
// graph.
//
//	go run ./examples/servegraphs --addr 127.0.0.1:2025
//	curl -s localhost:2025/runs/wait -H 'content-type: application/json' \
//	  -d '{"assistant_id":"echo","input":{"messages":[{"role":"user","content":"hi"}]}}'
//
// A graph is registered as a constructor: the server calls it once per
// assistant version with the assistant's config, so two assistants of one
// graph can behave differently (here: their greeting).
//
// A second graph, "steps" (steps.go), is a slow worker for trying out
// double-texting, cancelling and rejoining streams: input {"steps": n}
// runs n steps of config.configurable.step_ms milliseconds each, every one
// checkpointed and streamed as a custom event:
//
//	curl -sN localhost:2025/runs/stream -H 'content-type: application/json' \
//	  -d '{"assistant_id":"steps","input":{"steps":5},"stream_mode":["custom"],"config":{"configurable":{"step_ms":500}}}'
//
// A third, "tally" (tally.go), is a functional workflow (package
// workflow): one Go function with a durable step and per-thread memory.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/llm"
	"github.com/trellis-agents/trellis/server"
	"github.com/trellis-agents/trellis/server/runs"
)

// Messages is the chat history. The service sends and reads a key named
// "messages" holding []llm.Message as LangChain messages, so LangGraph
// chat front-ends show it.
var Messages = llm.NewMessagesKey("messages")

// echoConfig is what an assistant's config.configurable may set.
type echoConfig struct {
	Greeting string `json:"greeting"`
}

// newEcho builds the graph for one assistant: it answers the last user
// message with the assistant's greeting and an echo.
func newEcho(_ context.Context, a runs.Assistant) (*graph.Graph, error) {
	conf := echoConfig{Greeting: "You said"}
	if err := a.Configurable(&conf); err != nil {
		return nil, err
	}
	b := graph.New(Messages)
	b.AddNode("reply", func(_ context.Context, s graph.State) (graph.Output, error) {
		h := Messages.Get(s)
		if len(h) == 0 {
			return nil, errors.New("send a message: input {\"messages\": [{\"role\": \"user\", \"content\": \"...\"}]}")
		}
		return graph.Writes(graph.Append(Messages, llm.Assistant(fmt.Sprintf("%s: %s", conf.Greeting, h[len(h)-1].Text())))), nil
	})
	b.SetEntry("reply")
	b.AddEdge("reply", graph.END)
	return b.Compile()
}

func run(ctx context.Context, addr, database string, log *slog.Logger) error {
	srv, err := server.New(ctx, server.Config{Addr: addr, Database: database, Logger: log})
	if err != nil {
		return err
	}
	if err := srv.Register("echo", runs.GraphSpec{New: newEcho, Description: "answers with an echo of the last message"}); err != nil {
		return errors.Join(err, srv.Close())
	}
	if err := srv.Register("steps", runs.GraphSpec{New: newSteps, Description: "runs {\"steps\": n} slow steps, streaming each as a custom event"}); err != nil {
		return errors.Join(err, srv.Close())
	}
	if err := srv.Register("tally", runs.GraphSpec{New: newTally, Description: "a functional workflow: counts {\"input\": text}'s words and the thread's running total"}); err != nil {
		return errors.Join(err, srv.Close())
	}
	if err := srv.Register("helper", runs.GraphSpec{New: newHelper, ClientTools: true, Description: "a scripted agent that calls the client's get_location tool (frontend tools)"}); err != nil {
		return errors.Join(err, srv.Close())
	}
	return srv.Run(ctx) // serves until ctx ends, then shuts down gracefully
}

func main() {
	addr := flag.String("addr", "127.0.0.1:2025", "host:port to listen on")
	database := flag.String("database", ".trellis/servegraphs.db", "SQLite file or postgres:// URL")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// Text logs on stderr, like trellis serve: the line
	// `msg="trellis serve listening" url=...` says where it listens.
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	if err := run(ctx, *addr, *database, log); err != nil {
		fmt.Fprintln(os.Stderr, "servegraphs:", err)
		os.Exit(1)
	}
}
