package deep_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"testing/fstest"

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

// main matches the deep agent's own requests; sub matches a sub-agent's
// (a nested run, in the namespace of the task call's task).
var (
	main = func(r *llmtest.Request) bool { return r.Namespace == "" }
	sub  = func(r *llmtest.Request) bool { return r.Namespace != "" }
)

func results(n int) llmtest.Matcher {
	return func(r *llmtest.Request) bool {
		c := 0
		for _, m := range r.Messages {
			if m.Role == llm.RoleTool {
				c++
			}
		}
		return c == n
	}
}

func lastResult(r *llmtest.Request) string {
	if len(r.Messages) == 0 {
		return ""
	}
	return r.Messages[len(r.Messages)-1].Text()
}

func TestDeepAgentPlansWritesDelegatesAndAsks(t *testing.T) {
	ctx := context.Background()
	m := llmtest.New()
	m.When(llmtest.And(main, results(0)), llmtest.ToolCalls(
		llmtest.Call(deep.TodosTool, `{"todos":[{"content":"research","status":"in_progress"},{"content":"write the report","status":"pending"}]}`))).Repeat()
	m.When(llmtest.And(main, results(1)), llmtest.ToolCalls(
		llmtest.Call(deep.TaskTool, `{"subagent_type":"researcher","description":"Find the capital of Norway and save it to /facts.md"}`))).Repeat()
	// The sub-agent sees only the task, writes a file (which asks first),
	// and answers.
	m.When(llmtest.And(sub, results(0)), llmtest.ToolCalls(
		llmtest.Call(deep.WriteFileTool, `{"path":"/facts.md","content":"Oslo is the capital of Norway.\n"}`))).Repeat()
	m.When(llmtest.And(sub, results(1)), llmtest.Text("Oslo. Saved in /facts.md.")).Repeat()
	m.When(llmtest.And(main, results(2)), llmtest.ToolCalls(llmtest.Call(deep.ReadFileTool, `{"path":"/facts.md"}`))).Repeat()
	m.When(llmtest.And(main, results(3)), llmtest.Text("The capital is Oslo (see /facts.md).")).Repeat()

	g, err := deep.New(deep.Config{
		Model:     m,
		SubAgents: []deep.SubAgent{{Name: "researcher", Description: "Finds facts.", System: "You find facts.", Tools: []tool.Tool{}}},
		Policy:    tool.Policy{deep.WriteFileTool: tool.RequireApproval()},
	})
	if err != nil {
		t.Fatal(err)
	}
	st := store.NewMemory()
	opts := []graph.RunOption{graph.WithStore(st), graph.WithCheckpointer(checkpoint.NewMemory()), graph.WithThread("th")}
	res, err := g.Invoke(ctx, deep.Input("What is the capital of Norway? Keep a note."), opts...)
	if !errors.Is(err, graph.ErrInterrupted) || len(res.Interrupts) != 1 {
		t.Fatalf("want the sub-agent's approval to stop the run: %v %+v", err, res)
	}
	req, ok := tool.ApprovalFrom(res.Interrupts[0])
	if !ok || req.Tool != deep.WriteFileTool {
		t.Fatalf("interrupt %+v", res.Interrupts[0])
	}
	if todos := deep.Todos.Get(res.State); len(todos) != 2 || todos[0].Status != deep.TodoInProgress {
		t.Errorf("todos in state: %+v", todos)
	}
	res, err = g.Invoke(ctx, nil, append(opts, graph.WithResume(tool.Approve()))...)
	if err != nil {
		t.Fatal(err)
	}
	if a, _ := deep.Answer(res.State); a != "The capital is Oslo (see /facts.md)." {
		t.Errorf("answer %q", a)
	}
	var subReqs, mainReqs []llmtest.Request
	for _, r := range m.Requests() {
		if r.Namespace == "" {
			mainReqs = append(mainReqs, r)
		} else {
			subReqs = append(subReqs, r)
		}
	}
	// Fresh context: the sub-agent's first request holds its prompt and
	// the task only, not the parent's conversation.
	first := subReqs[0]
	if first.LastUser() != "Find the capital of Norway and save it to /facts.md" || strings.Contains(first.System(), "How you work") {
		t.Errorf("sub-agent request: user %q system %q", first.LastUser(), first.System())
	}
	for _, msg := range first.Messages {
		if msg.Role == llm.RoleUser && strings.Contains(msg.Text(), "Keep a note") {
			t.Error("the sub-agent saw the parent's conversation")
		}
	}
	if names := first.ToolNames(); strings.Contains(strings.Join(names, ","), deep.TaskTool) {
		t.Errorf("a sub-agent can delegate again: %v", names)
	}
	// Only the answer came back, and the file the sub-agent wrote is the
	// parent's to read.
	last := mainReqs[len(mainReqs)-1]
	if got := lastResult(&last); !strings.Contains(got, "Oslo is the capital of Norway.") {
		t.Errorf("read_file after the sub-agent: %q", got)
	}
	for _, msg := range last.Messages {
		if msg.Role == llm.RoleTool && msg.ToolName == deep.TaskTool && msg.Text() != "Oslo. Saved in /facts.md." {
			t.Errorf("the task result is %q, want the sub-agent's answer only", msg.Text())
		}
	}
}

func TestDeepAgentConfigErrors(t *testing.T) {
	_, err := deep.New(deep.Config{})
	wantErr(t, err, "Model is nil")
	m := llmtest.New()
	_, err = deep.New(deep.Config{Model: m, SubAgents: []deep.SubAgent{{Name: "general-purpose", Description: "x"}, {Name: "bad name", Description: "x"}, {Name: "quiet"}}})
	wantErr(t, err, `two sub-agents are named "general-purpose"`)
	wantErr(t, err, `"bad name"`)
	wantErr(t, err, `"quiet" has no description`)
	_, err = deep.New(deep.Config{Model: m, Policy: tool.Policy{"write_fiel": tool.RequireApproval()}})
	wantErr(t, err, "write_fiel")
	_, err = deep.New(deep.Config{Model: m, Files: deep.FilesConfig{Namespace: []string{""}}})
	wantErr(t, err, "Namespace")
}

func TestTaskToolRefusesUnknownSubAgents(t *testing.T) {
	m := llmtest.New()
	m.When(llmtest.And(main, results(0)), llmtest.ToolCalls(llmtest.Call(deep.TaskTool, `{"subagent_type":"nobody","description":"x"}`))).Repeat()
	m.When(llmtest.And(main, results(1)), llmtest.Text("done")).Repeat()
	g, err := deep.New(deep.Config{Model: m})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := g.Invoke(context.Background(), deep.Input("go"), graph.WithStore(store.NewMemory()), graph.WithCheckpointer(checkpoint.NewMemory()), graph.WithThread("t")); err != nil {
		t.Fatal(err)
	}
	r := m.LastRequest()
	if got := lastResult(&r); !strings.Contains(got, `there is no sub-agent "nobody"; the sub-agents are general-purpose`) {
		t.Errorf("task result: %q", got)
	}
}

func TestWriteTodos(t *testing.T) {
	m := llmtest.New()
	m.When(llmtest.And(results(0)), llmtest.ToolCalls(llmtest.Call(deep.TodosTool, `{"todos":[{"content":"a","status":"done"}]}`))).Repeat()
	m.When(llmtest.And(results(1)), llmtest.ToolCalls(
		llmtest.Call(deep.TodosTool, `{"todos":[{"content":"a","status":"pending"}]}`),
		llmtest.Call(deep.TodosTool, `{"todos":[{"content":"b","status":"pending"}]}`))).Repeat()
	m.When(llmtest.And(results(3)), llmtest.ToolCalls(
		llmtest.Call(deep.TodosTool, `{"todos":[{"content":"a","status":"completed"},{"content":"b","status":"in_progress"}]}`))).Repeat()
	m.When(llmtest.And(results(4)), llmtest.Text("ok")).Repeat()
	g, err := react.New(react.Config{Model: m, Middleware: []middleware.Middleware{deep.Planning()}})
	if err != nil {
		t.Fatal(err)
	}
	res, err := g.Invoke(context.Background(), react.Input("plan"))
	if err != nil {
		t.Fatal(err)
	}
	msgs := react.Messages.Get(res.State)
	var texts []string
	for _, msg := range msgs {
		if msg.Role == llm.RoleTool {
			texts = append(texts, msg.Text())
		}
	}
	if !strings.Contains(texts[0], `status "done"`) || !strings.Contains(texts[1], "called 2 times") || !strings.Contains(texts[2], "called 2 times") {
		t.Errorf("bad lists not refused: %q", texts[:3])
	}
	if texts[3] != "The to-do list is now:\n1. [x] a\n2. [>] b" {
		t.Errorf("tool result %q", texts[3])
	}
	want := []deep.Todo{{Content: "a", Status: deep.TodoCompleted}, {Content: "b", Status: deep.TodoInProgress}}
	if got := deep.Todos.Get(res.State); len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("todos %+v", got)
	}
}

var skillsFS = fstest.MapFS{
	"report/SKILL.md": {Data: []byte("---\nname: report\ndescription: Write a short report with sources.\n---\n# Reports\nStart with the answer, then list sources.\n")},
	"notes.txt":       {Data: []byte("not a skill")},
	"empty/README.md": {Data: []byte("no SKILL.md here")},
}

func TestSkillsLoadOnDemand(t *testing.T) {
	skills, err := deep.LoadSkills(skillsFS, ".")
	if err != nil {
		t.Fatal(err)
	}
	if len(skills) != 1 || skills[0].Name != "report" || skills[0].Path != "report/SKILL.md" {
		t.Fatalf("skills %+v", skills)
	}
	m := llmtest.New()
	m.When(results(0), llmtest.ToolCalls(llmtest.Call(deep.SkillTool, `{"name":"report"}`))).Repeat()
	m.When(results(1), llmtest.Text("ok")).Repeat()
	g, err := deep.New(deep.Config{Model: m, Skills: skills})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := g.Invoke(context.Background(), deep.Input("report"), graph.WithStore(store.NewMemory()), graph.WithCheckpointer(checkpoint.NewMemory()), graph.WithThread("t")); err != nil {
		t.Fatal(err)
	}
	reqs := m.Requests()
	if sys := reqs[0].System(); !strings.Contains(sys, "- report: Write a short report with sources.") || strings.Contains(sys, "list sources") {
		t.Errorf("first prompt should list the skill without its instructions:\n%s", sys)
	}
	if got := lastResult(&reqs[1]); !strings.Contains(got, "Start with the answer, then list sources.") {
		t.Errorf("load_skill gave %q", got)
	}
}

func TestLoadSkillsReportsBadFiles(t *testing.T) {
	_, err := deep.LoadSkills(fstest.MapFS{
		"a/SKILL.md": {Data: []byte("no front matter")},
		"b/SKILL.md": {Data: []byte("---\nname: Bad Name\ndescription: x\n---\nbody")},
		"c/SKILL.md": {Data: []byte("---\nname: c\n---\nbody")},
		"d/SKILL.md": {Data: []byte("---\nname: d\ndescription: x\n---\n")},
		"e/SKILL.md": {Data: []byte("---\nname: e\ndescription: x\n---\nok")},
		"f/SKILL.md": {Data: []byte("---\nname: e\ndescription: x\n---\nok")},
	}, ".")
	for _, want := range []string{"a/SKILL.md does not start with front matter", `"Bad Name"`, "c/SKILL.md has no description", "d/SKILL.md has no instructions", `both named "e"`} {
		wantErr(t, err, want)
	}
	_, err = deep.LoadSkills(fstest.MapFS{}, "missing")
	wantErr(t, err, "missing")
}
