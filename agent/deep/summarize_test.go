package deep_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/trellis-agents/trellis/agent/deep"
	"github.com/trellis-agents/trellis/agent/middleware"
	"github.com/trellis-agents/trellis/agent/react"
	"github.com/trellis-agents/trellis/checkpoint"
	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/llm"
	"github.com/trellis-agents/trellis/llm/llmtest"
	"github.com/trellis-agents/trellis/store"
	"github.com/trellis-agents/trellis/tool"
)

func isSummaryCall(r *llmtest.Request) bool { return r.System() == deep.DefaultSummaryPrompt }

func TestSummarizationOffloadsEvictedMessages(t *testing.T) {
	ctx := context.Background()
	m := llmtest.New()
	m.When(isSummaryCall, llmtest.Respond(func(r *llmtest.Request) llmtest.Turn {
		return llmtest.Text(fmt.Sprintf("SUMMARY %d", r.N))
	})).Repeat()
	body := strings.Repeat("lorem ipsum ", 60)
	const rounds = 6
	for i := range rounds {
		m.When(llmtest.And(llmtest.Not(isSummaryCall), llmtest.LastIsToolResult(), func(r *llmtest.Request) bool {
			return strings.Contains(lastResult(r), fmt.Sprintf("/f%d.md", i))
		}), llmtest.ToolCalls(llmtest.Call(deep.WriteFileTool, fmt.Sprintf(`{"path":"/f%d.md","content":%q}`, i+1, body)))).Repeat()
	}
	m.When(llmtest.And(llmtest.Not(isSummaryCall), llmtest.Not(llmtest.LastIsToolResult())),
		llmtest.ToolCalls(llmtest.Call(deep.WriteFileTool, fmt.Sprintf(`{"path":"/f0.md","content":%q}`, body)))).Repeat()
	m.Otherwise(llmtest.Text("all written"))

	g, err := deep.New(deep.Config{Model: m, Summarize: deep.SummarizeConfig{MaxTokens: 700, KeepMessages: 2}})
	if err != nil {
		t.Fatal(err)
	}
	st := store.NewMemory()
	opts := []graph.RunOption{graph.WithStore(st), graph.WithCheckpointer(checkpoint.NewMemory()), graph.WithThread("s")}
	res, err := g.Invoke(ctx, deep.Input("Write the files, please."), opts...)
	if err != nil {
		t.Fatal(err)
	}
	sum := deep.Summary.Get(res.State)
	if sum.Text == "" || len(sum.Files) < 2 || !strings.HasPrefix(sum.Files[0], "/conversation_history/messages-1-") {
		t.Fatalf("want two folds or more: summary %+v", sum)
	}
	t.Logf("summary %+v", sum)
	// The first fold holds the user's request, in full, in the file the
	// summary names.
	fs, _ := deep.Files(deep.FilesConfig{})
	var file string
	inRun(t, st, "s", func(ctx context.Context) {
		file, err = fs.ReadFile(ctx, sum.Files[0])
	})
	if err != nil || !strings.Contains(file, "user: Write the files, please.") || !strings.Contains(file, body) {
		t.Errorf("offloaded file %q (%v)", file, err)
	}
	// The last request carries the summary, which names the files, and
	// not the folded messages; every request stays under the threshold
	// plus what must be kept.
	var last llmtest.Request
	for _, r := range m.Requests() {
		if !isSummaryCall(&r) {
			last = r
		}
	}
	text := ""
	for _, msg := range last.Messages {
		text += msg.Text() + "\n"
		if msg.Role == llm.RoleUser {
			t.Errorf("the last request still holds the user's message: %q", msg.Text())
		}
	}
	if !strings.Contains(text, "SUMMARY") || !strings.Contains(text, sum.Files[0]) || !strings.Contains(text, sum.Files[len(sum.Files)-1]) {
		t.Errorf("the last request does not carry the summary and its files:\n%s", text)
	}
	// A tool result is never sent without its call.
	for _, r := range m.Requests() {
		for i, msg := range r.Messages {
			if msg.Role == llm.RoleTool && (i == 0 || r.Messages[i-1].Role != llm.RoleAssistant && r.Messages[i-1].Role != llm.RoleTool) {
				t.Errorf("request %d: tool result %d follows a %s message", r.N, i, r.Messages[i-1].Role)
			}
		}
	}
	// Each fold extends the summary so far.
	var calls []llmtest.Request
	for _, r := range m.Requests() {
		if isSummaryCall(&r) {
			calls = append(calls, r)
		}
	}
	if len(calls) != len(sum.Files) || !strings.Contains(calls[0].LastUser(), "Summary so far:\n(none yet)") ||
		!strings.Contains(calls[1].LastUser(), fmt.Sprintf("Summary so far:\nSUMMARY %d", calls[0].N)) {
		t.Errorf("%d summary calls for %d files; the second is %q", len(calls), len(sum.Files), calls[1].LastUser())
	}
	// The thread keeps every message.
	if n := len(react.Messages.Get(res.State)); n != 2*rounds+4 {
		t.Errorf("the thread holds %d messages, want %d", n, 2*rounds+4)
	}
}

func TestSummarizationConfigErrors(t *testing.T) {
	fs, _ := deep.Files(deep.FilesConfig{})
	_, err := deep.Summarization(deep.SummarizeConfig{Dir: "/"}, fs, llmtest.New())
	wantErr(t, err, "below /")
	_, err = deep.Summarization(deep.SummarizeConfig{MaxTokens: -1}, nil, nil)
	wantErr(t, err, "no model")
	wantErr(t, err, "no filesystem")
	wantErr(t, err, "must not be negative")
}

// An approval abandoned when the person writes again leaves a call
// without a result; the next request answers it with llm.MissingResult
// before any inner middleware sees the history.
func TestRepairAnswersAbandonedCalls(t *testing.T) {
	ctx := context.Background()
	send := tool.MustFunc("send", "Send a message.", func(context.Context, struct{}) (string, error) { return "sent", nil })
	m := llmtest.New()
	m.When(llmtest.LastUserContains("send it"), llmtest.ToolCalls(llmtest.Call("send", `{}`))).Repeat()
	m.Otherwise(llmtest.Text("ok"))
	var seen []llm.Message
	spy := middleware.ModelFunc("spy", func(ctx context.Context, call *middleware.ModelCall, next middleware.ModelHandler) (*llm.Response, error) {
		seen = call.Request.Messages
		return next(ctx, call)
	})
	g, err := react.New(react.Config{Model: m, Tools: []tool.Tool{send}, Middleware: []middleware.Middleware{deep.Repair(), spy}})
	if err != nil {
		t.Fatal(err)
	}
	opts := []graph.RunOption{graph.WithCheckpointer(checkpoint.NewMemory()), graph.WithThread("r")}
	if _, err := g.Invoke(ctx, react.Input("send it"), opts...); !errors.Is(err, graph.ErrInterrupted) {
		t.Fatalf("want an approval: %v", err)
	}
	if _, err := g.Invoke(ctx, react.Input("never mind"), opts...); err != nil {
		t.Fatal(err)
	}
	var found bool
	for i, msg := range seen {
		if msg.Role == llm.RoleTool && msg.Text() == llm.MissingResult {
			found = i > 0 && len(seen[i-1].ToolCalls) == 1
		}
	}
	if !found {
		t.Errorf("the middleware after repair saw no synthetic result: %+v", seen)
	}
}

// With shared files, two threads' folds go to separate files.
func TestSummarizationKeepsThreadsApartInSharedFiles(t *testing.T) {
	ctx := context.Background()
	m := llmtest.New()
	m.When(isSummaryCall, llmtest.Text("S")).Repeat()
	m.When(llmtest.And(llmtest.Not(isSummaryCall), results(0)), llmtest.ToolCalls(llmtest.Call(deep.LsTool, `{}`))).Repeat()
	m.Otherwise(llmtest.Text("done"))
	g, err := deep.New(deep.Config{Model: m, Files: deep.FilesConfig{Shared: true}, Summarize: deep.SummarizeConfig{MaxTokens: 10, KeepMessages: 1}})
	if err != nil {
		t.Fatal(err)
	}
	st := store.NewMemory()
	var files []string
	for _, th := range []string{"a/1", "b"} {
		res, err := g.Invoke(ctx, deep.Input("list "+th), graph.WithStore(st), graph.WithCheckpointer(checkpoint.NewMemory()), graph.WithThread(th))
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, deep.Summary.Get(res.State).Files...)
	}
	if len(files) != 2 || files[0] != "/conversation_history/a_1/messages-1-1.md" || files[1] != "/conversation_history/b/messages-1-1.md" {
		t.Errorf("files %v", files)
	}
}

// A sub-agent summarises into files of its own, not over its parent's.
func TestSummarizationInSubAgentsKeepsItsOwnFiles(t *testing.T) {
	ctx := context.Background()
	m := llmtest.New()
	m.When(isSummaryCall, llmtest.Text("S")).Repeat()
	m.When(llmtest.And(main, results(0)), llmtest.ToolCalls(llmtest.Call(deep.TaskTool, `{"subagent_type":"general-purpose","description":"list the files"}`))).Repeat()
	m.When(llmtest.And(sub, results(0)), llmtest.ToolCalls(llmtest.Call(deep.LsTool, `{}`))).Repeat()
	m.Otherwise(llmtest.Text("done"))
	g, err := deep.New(deep.Config{Model: m, Summarize: deep.SummarizeConfig{MaxTokens: 10, KeepMessages: 1}})
	if err != nil {
		t.Fatal(err)
	}
	st := store.NewMemory()
	res, err := g.Invoke(ctx, deep.Input("go"), graph.WithStore(st), graph.WithCheckpointer(checkpoint.NewMemory()), graph.WithThread("n"))
	if err != nil {
		t.Fatal(err)
	}
	fs, _ := deep.Files(deep.FilesConfig{})
	var listing string
	inRun(t, st, "n", func(ctx context.Context) {
		listing, err = call(ctx, toolsByName(fs.Tools())[deep.GlobTool], args{"pattern": "/conversation_history/**"})
	})
	if err != nil {
		t.Fatal(err)
	}
	parent := deep.Summary.Get(res.State).Files
	if len(parent) != 1 || !strings.Contains(listing, parent[0]) || !strings.Contains(listing, "/conversation_history/subagents/") {
		t.Errorf("parent's files %v; all: %s", parent, listing)
	}
}
