package console

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trellis-agents/trellis/agent/router"
	"github.com/trellis-agents/trellis/checkpoint"
	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/tool"
)

var (
	log     = graph.NewKey("log", graph.Concat[string]())
	approve = graph.NewKey[string]("decision")
)

// askGraph asks two questions in a row: a tool approval and a free JSON
// question, logging the answers.
func askGraph(t *testing.T) *graph.Graph {
	b := graph.New(log, approve)
	b.AddNode("ask", func(ctx context.Context, s graph.State) (graph.Output, error) {
		d, err := graph.Interrupt[tool.Decision](ctx, tool.ApprovalRequest{Kind: tool.ApprovalKind, CallID: "c1", Tool: "place", Arguments: json.RawMessage(`{"id":20}`), Summary: "Place item #20"})
		if err != nil {
			return nil, err
		}
		n, err := graph.Interrupt[map[string]int](ctx, map[string]string{"question": "how many?"})
		if err != nil {
			return nil, err
		}
		return graph.Writes(graph.Append(log, string(d.Action)+":"+d.Message), graph.Append(log, "n="+string(rune('0'+n["n"])))), nil
	})
	b.SetEntry("ask")
	b.AddEdge("ask", graph.END)
	g, err := b.Compile()
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func TestSessionAnswersFromFileThenKeyboard(t *testing.T) {
	path := filepath.Join(t.TempDir(), "answers.txt")
	if err := os.WriteFile(path, []byte("# replayed\nmaybe\n\nn\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	lines, err := LoadAnswers(path)
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	s := &Session{
		Graph:   askGraph(t),
		Options: []graph.RunOption{graph.WithCheckpointer(checkpoint.NewMemory()), graph.WithThread("t")},
		Prompt: &Prompter{Answers: lines, Out: &out, Handlers: []Handler{ToolApproval},
			In: bufio.NewReader(strings.NewReader("too full\nnot json\n{\"n\":3}\n"))},
		Out: &out,
	}
	st, err := s.Run(context.Background(), nil)
	if err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	if got := strings.Join(log.Get(st), ","); got != "reject:too full,n=3" {
		t.Errorf("log = %q\n%s", got, out.String())
	}
	for _, want := range []string{"Approval needed: Place item #20", "Please answer y, n or e", "Why not (the agent sees this)? > ", "not valid JSON"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("transcript lacks %q:\n%s", want, out.String())
		}
	}
}

func TestSessionQuitThenResume(t *testing.T) {
	saver := checkpoint.NewMemory()
	opts := []graph.RunOption{graph.WithCheckpointer(saver), graph.WithThread("t")}
	var out strings.Builder
	g := askGraph(t)
	first := &Session{Graph: g, Options: opts, Out: &out,
		Prompt: &Prompter{Out: &out, Handlers: []Handler{ToolApproval}, In: bufio.NewReader(strings.NewReader("y\nq\n"))}}
	if _, err := first.Run(context.Background(), nil); !errors.Is(err, ErrQuit) {
		t.Fatalf("err = %v, want ErrQuit", err)
	}
	// A new session (a new process, say) resumes at the second question
	// without asking the first again.
	out.Reset()
	second := &Session{Graph: g, Options: opts, Out: &out,
		Prompt: &Prompter{Out: &out, Handlers: []Handler{ToolApproval}, Answers: []string{`{"n":5}`}}}
	st, err := second.Run(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(log.Get(st), ","); got != "approve:,n=5" {
		t.Errorf("log = %q\n%s", got, out.String())
	}
	if strings.Contains(out.String(), "Approval needed") || !strings.Contains(out.String(), "Resuming the saved thread") {
		t.Errorf("the resumed session should go straight to the waiting question:\n%s", out.String())
	}
}

func TestRouterAskHandler(t *testing.T) {
	payload, _ := json.Marshal(router.Question{Kind: router.QuestionKind, CallID: "c1", Question: "Which year?"})
	var out strings.Builder
	p := &Prompter{Out: &out, Answers: []string{"2025"}}
	answer, ok, err := RouterAsk(p, graph.InterruptInfo{ID: "x:0", Payload: payload})
	if err != nil || !ok || answer != "2025" || !strings.Contains(out.String(), "The router asks: Which year?") {
		t.Errorf("RouterAsk = %v, %v, %v; printed %q", answer, ok, err, out.String())
	}
	if _, ok, _ := RouterAsk(p, graph.InterruptInfo{ID: "y:0", Payload: json.RawMessage(`{"kind":"approval"}`)}); ok {
		t.Error("RouterAsk took an interrupt that is not a question")
	}
}
