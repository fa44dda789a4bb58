package deep

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/google/uuid"

	"github.com/trellis-agents/trellis/agent/middleware"
	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/tool"
	"github.com/trellis-agents/trellis/tool/remotegraph"
)

// The names of the background sub-agent tools.
const (
	StartAsyncTool  = "start_async_task"
	CheckAsyncTool  = "check_async_task"
	UpdateAsyncTool = "update_async_task"
	CancelAsyncTool = "cancel_async_task"
	ListAsyncTool   = "list_async_tasks"
)

// AsyncSubAgent is a sub-agent that runs in the background on a server
// speaking the LangGraph API (trellis serve): the deep agent starts a
// task, goes on working, and checks, updates or cancels it later. The
// tools are read tools, as the task tool is: the remote assistant's own
// tools ask for approval there, on the task's thread; name them in
// Config.Policy to ask here as well.
type AsyncSubAgent struct {
	// Name is what the model names it by.
	Name string
	// Description tells the model what it is good for.
	Description string
	// Remote is the assistant on the server (see package
	// tool/remotegraph: its URL goes through the allow-list and the
	// guarded dialer).
	Remote *remotegraph.Agent
}

// AsyncTask is one background task, as the deep agent keeps it in
// AsyncTasks.
type AsyncTask struct {
	// ID is the task's ID, which the model names it by: the remote
	// thread's ID.
	ID string `json:"id"`
	// Agent is the sub-agent's name.
	Agent string `json:"agent"`
	// Run is the remote run last started on the thread.
	Run string `json:"run"`
	// Description is the task as given.
	Description string `json:"description"`
	// Status is the status last seen: the remote run's, or "cancelled".
	Status string `json:"status"`
}

// AsyncTasks holds the deep agent's background tasks by ID.
var AsyncTasks = graph.NewKey("async_tasks", graph.MergeMap[string, AsyncTask]())

// Async returns the middleware that gives the agent background sub-agents
// and its tools: start_async_task (returns a task ID at once),
// check_async_task (the status, and the answer once it is done),
// update_async_task (a new message for the task: its current run stops
// and the thread goes on with the message), cancel_async_task and
// list_async_tasks. Tasks are kept in AsyncTasks, in the thread's state; a
// start is a durable step, so a re-run of the call does not start a
// second run.
func Async(agents []AsyncSubAgent) (middleware.Middleware, error) {
	a := &asyncMW{agents: map[string]AsyncSubAgent{}}
	var errs []error
	for i, sa := range agents {
		switch {
		case !subAgentName.MatchString(sa.Name):
			errs = append(errs, fmt.Errorf("deep: background sub-agent %d has the name %q; use 1 to 64 letters, digits, - and _", i, sa.Name))
		case a.agents[sa.Name].Remote != nil:
			errs = append(errs, fmt.Errorf("deep: two background sub-agents are named %q", sa.Name))
		case sa.Remote == nil:
			errs = append(errs, fmt.Errorf("deep: background sub-agent %q has no Remote", sa.Name))
		case strings.TrimSpace(sa.Description) == "":
			errs = append(errs, fmt.Errorf("deep: background sub-agent %q has no description", sa.Name))
		default:
			a.agents[sa.Name] = sa
			a.names = append(a.names, sa.Name)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	a.tools = a.newTools()
	return a, nil
}

type asyncMW struct {
	agents map[string]AsyncSubAgent
	names  []string
	tools  []tool.Tool
}

// asyncCall carries the thread's tasks into a call and its changes out.
type asyncCall struct {
	tasks   map[string]AsyncTask
	changed []AsyncTask
}

type asyncKey struct{}

func (a *asyncMW) Name() string { return "async_subagents" }

// Tools returns the background task tools.
func (a *asyncMW) Tools() []tool.Tool { return slices.Clone(a.tools) }

// StateKeys returns AsyncTasks.
func (a *asyncMW) StateKeys() []graph.AnyKey { return []graph.AnyKey{AsyncTasks} }

// WrapTool gives the tools the thread's tasks and writes what they changed.
func (a *asyncMW) WrapTool(ctx context.Context, call *middleware.ToolCall, next middleware.ToolHandler) (*middleware.ToolResult, error) {
	switch call.Call.Name {
	case StartAsyncTool, CheckAsyncTool, UpdateAsyncTool, CancelAsyncTool, ListAsyncTool:
	default:
		return next(ctx, call)
	}
	ac := &asyncCall{tasks: AsyncTasks.Get(call.State)}
	res, err := next(context.WithValue(ctx, asyncKey{}, ac), call)
	if err != nil || res == nil || len(ac.changed) == 0 {
		return res, err
	}
	m := map[string]AsyncTask{}
	for _, t := range ac.changed {
		m[t.ID] = t
	}
	out := *res
	out.Writes = append(slices.Clone(res.Writes), AsyncTasks.Set(m))
	return &out, nil
}

type startArgs struct {
	SubagentType string `json:"subagent_type" jsonschema:"the background sub-agent to give the task to"`
	Description  string `json:"description" jsonschema:"the task, with everything it needs: it does not see this conversation"`
}

type taskIDArgs struct {
	TaskID string `json:"task_id" jsonschema:"the task ID start_async_task returned"`
}

type updateArgs struct {
	TaskID  string `json:"task_id" jsonschema:"the task ID start_async_task returned"`
	Message string `json:"message" jsonschema:"the new instructions; the task stops what it is doing and goes on with them"`
}

func (a *asyncMW) newTools() []tool.Tool {
	var b strings.Builder
	for _, n := range a.names {
		fmt.Fprintf(&b, "\n- %s: %s", n, a.agents[n].Description)
	}
	callOf := func(ctx context.Context) (*asyncCall, error) {
		ac, ok := ctx.Value(asyncKey{}).(*asyncCall)
		if !ok {
			return nil, errors.New("the background task tools run only inside a deep agent (the async_subagents middleware)")
		}
		return ac, nil
	}
	task := func(ac *asyncCall, name, id string) (AsyncTask, AsyncSubAgent, error) {
		t, ok := ac.tasks[id]
		if !ok {
			ids := make([]string, 0, len(ac.tasks))
			for k := range ac.tasks {
				ids = append(ids, k)
			}
			slices.Sort(ids)
			return t, AsyncSubAgent{}, tool.BadArguments(name, "there is no task %q; the tasks are: %s", id, cmpOr(strings.Join(ids, ", "), "none"))
		}
		sa, ok := a.agents[t.Agent]
		if !ok {
			return t, sa, fmt.Errorf("the task's sub-agent %q is no longer configured", t.Agent)
		}
		return t, sa, nil
	}
	input := func(text string) any {
		return map[string]any{"messages": []map[string]any{{"role": "user", "content": text}}}
	}
	return []tool.Tool{
		tool.MustFunc(StartAsyncTool, "Start a task on a background sub-agent and go on working: it returns a task ID at once. Check on it later with check_async_task. The sub-agents:"+b.String(),
			func(ctx context.Context, args startArgs) (string, error) {
				ac, err := callOf(ctx)
				if err != nil {
					return "", err
				}
				sa, ok := a.agents[args.SubagentType]
				switch {
				case !ok:
					return "", tool.BadArguments(StartAsyncTool, "there is no background sub-agent %q; they are %s", args.SubagentType, strings.Join(a.names, ", "))
				case strings.TrimSpace(args.Description) == "":
					return "", tool.BadArguments(StartAsyncTool, "description is empty; describe the task")
				}
				// The remote thread is named by this call's task, so a
				// re-run of the call finds the same thread and run.
				id := uuid.NewSHA1(uuid.NameSpaceURL, []byte("trellis-deep-async:"+graph.ThreadID(ctx)+":"+graph.TaskID(ctx))).String()
				run, err := graph.Durable(ctx, "deep:async:start", func(ctx context.Context) (string, error) {
					return sa.Remote.Start(ctx, id, input(args.Description), "")
				})
				if err != nil {
					return "", err
				}
				ac.changed = append(ac.changed, AsyncTask{ID: id, Agent: sa.Name, Run: run, Description: args.Description, Status: "pending"})
				return fmt.Sprintf("Started task %s on %s. It runs in the background: check it with %s.", id, sa.Name, CheckAsyncTool), nil
			}, tool.ReadOnly(), tool.Summary(func(a startArgs) string {
				return fmt.Sprintf("start the background sub-agent %s on: %s", a.SubagentType, a.Description)
			})),
		tool.MustFunc(CheckAsyncTool, "Check a background task: whether it is still running, and its answer once it is done.",
			func(ctx context.Context, args taskIDArgs) (string, error) {
				ac, err := callOf(ctx)
				if err != nil {
					return "", err
				}
				t, sa, err := task(ac, CheckAsyncTool, args.TaskID)
				if err != nil {
					return "", err
				}
				if t.Status == "cancelled" {
					return fmt.Sprintf("Task %s was cancelled.", t.ID), nil
				}
				s, err := sa.Remote.Status(ctx, t.ID, t.Run)
				if err != nil {
					return "", err
				}
				t.Status = s.Status
				ac.changed = append(ac.changed, t)
				switch {
				case !s.Done():
					return fmt.Sprintf("Task %s is still %s. Do other work and check again later.", t.ID, s.Status), nil
				case len(s.Interrupt) > 0:
					return fmt.Sprintf("Task %s is waiting for an answer a person must give on its own thread: %s", t.ID, cutRunes(string(s.Interrupt), 1000)), nil
				case s.Status == "success":
					return fmt.Sprintf("Task %s is done. Its answer:\n%s", t.ID, cutRunes(s.Text, 20000)), nil
				}
				return fmt.Sprintf("Task %s ended %s: %s", t.ID, s.Status, cmpOr(s.Error, "no error message")), nil
			}, tool.ReadOnly()),
		tool.MustFunc(UpdateAsyncTool, "Give a background task new instructions: it stops what it is doing and goes on with them, keeping what it has done.",
			func(ctx context.Context, args updateArgs) (string, error) {
				ac, err := callOf(ctx)
				if err != nil {
					return "", err
				}
				t, sa, err := task(ac, UpdateAsyncTool, args.TaskID)
				if err != nil {
					return "", err
				}
				if strings.TrimSpace(args.Message) == "" {
					return "", tool.BadArguments(UpdateAsyncTool, "message is empty")
				}
				run, err := graph.Durable(ctx, "deep:async:update", func(ctx context.Context) (string, error) {
					return sa.Remote.Start(ctx, t.ID, input(args.Message), "interrupt")
				})
				if err != nil {
					return "", err
				}
				t.Run, t.Status = run, "pending"
				ac.changed = append(ac.changed, t)
				return fmt.Sprintf("Task %s goes on with the new instructions.", t.ID), nil
			}, tool.ReadOnly()),
		tool.MustFunc(CancelAsyncTool, "Cancel a background task.",
			func(ctx context.Context, args taskIDArgs) (string, error) {
				ac, err := callOf(ctx)
				if err != nil {
					return "", err
				}
				t, sa, err := task(ac, CancelAsyncTool, args.TaskID)
				if err != nil {
					return "", err
				}
				if err := sa.Remote.Cancel(ctx, t.ID, t.Run); err != nil {
					return "", err
				}
				t.Status = "cancelled"
				ac.changed = append(ac.changed, t)
				return fmt.Sprintf("Task %s is cancelled.", t.ID), nil
			}, tool.ReadOnly()),
		tool.MustFunc(ListAsyncTool, "List your background tasks with the status last seen.",
			func(ctx context.Context, _ struct{}) (string, error) {
				ac, err := callOf(ctx)
				if err != nil {
					return "", err
				}
				if len(ac.tasks) == 0 {
					return "You have no background tasks.", nil
				}
				ids := make([]string, 0, len(ac.tasks))
				for id := range ac.tasks {
					ids = append(ids, id)
				}
				slices.Sort(ids)
				var b strings.Builder
				for _, id := range ids {
					t := ac.tasks[id]
					fmt.Fprintf(&b, "- %s (%s, %s): %s\n", t.ID, t.Agent, t.Status, cutRunes(t.Description, 200))
				}
				return strings.TrimSuffix(b.String(), "\n"), nil
			}, tool.ReadOnly()),
	}
}
