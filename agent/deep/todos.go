package deep

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/trellis-agents/trellis/agent/middleware"
	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/tool"
)

// TodosTool is the name of the planning tool.
const TodosTool = "write_todos"

// The statuses of a to-do item.
const (
	TodoPending    = "pending"
	TodoInProgress = "in_progress"
	TodoCompleted  = "completed"
)

// Todo is one item of the agent's plan.
type Todo struct {
	// Content says what is to be done.
	Content string `json:"content" jsonschema:"what is to be done, in one line"`
	// Status is TodoPending, TodoInProgress or TodoCompleted.
	Status string `json:"status" jsonschema:"pending, in_progress or completed"`
}

// Todos holds the agent's current plan, as the model last wrote it with
// TodosTool. It is ordinary graph state, so a page can render it and it
// survives an interrupt or a crash.
var Todos = graph.NewKey[[]Todo]("todos")

// maxTodos bounds the plan the model may write.
const maxTodos = 100

// maxTodoRunes bounds one item's content.
const maxTodoRunes = 500

type todosArgs struct {
	Todos []Todo `json:"todos" jsonschema:"the whole list, in order: it replaces the previous one"`
}

// Planning returns the middleware that gives the agent TodosTool: the
// model writes its whole to-do list (items with content and status) each
// time it changes, and the list is stored in Todos. A reply that calls
// the tool twice at once is refused, since one list would silently win.
func Planning() middleware.Middleware {
	p := &planning{}
	p.tool = tool.MustFunc(TodosTool,
		"Write your to-do list for the task: the whole list each time (it replaces the last one). "+
			"Use it for work of three steps or more: mark an item in_progress when you start it and completed as soon as it is done; "+
			"keep one item in_progress at a time.",
		func(_ context.Context, a todosArgs) (string, error) {
			if err := checkTodos(a.Todos); err != nil {
				return "", err
			}
			return todosText(a.Todos), nil
		}, tool.ReadOnly())
	return p
}

type planning struct{ tool tool.Tool }

func (p *planning) Name() string { return "planning" }

// Tools returns TodosTool.
func (p *planning) Tools() []tool.Tool { return []tool.Tool{p.tool} }

// StateKeys returns Todos.
func (p *planning) StateKeys() []graph.AnyKey { return []graph.AnyKey{Todos} }

func (p *planning) WrapTool(ctx context.Context, call *middleware.ToolCall, next middleware.ToolHandler) (*middleware.ToolResult, error) {
	if call.Call.Name != TodosTool {
		return next(ctx, call)
	}
	n := 0
	for _, c := range call.Batch {
		if c.Name == TodosTool {
			n++
		}
	}
	if n > 1 {
		return middleware.Refuse(call.Call,
			fmt.Sprintf("Error: %s was called %d times in one reply; call it once with the whole list.", TodosTool, n),
			"write_todos called more than once in one reply"), nil
	}
	res, err := next(ctx, call)
	if err != nil || res == nil || res.Message.IsError {
		return res, err
	}
	var a todosArgs
	if err := json.Unmarshal([]byte(call.Call.Arguments), &a); err != nil {
		return nil, fmt.Errorf("planning: decode the arguments the tool accepted: %w", err)
	}
	out := *res
	out.Writes = append(out.Writes, Todos.Set(a.Todos))
	return &out, nil
}

func checkTodos(ts []Todo) error {
	if len(ts) > maxTodos {
		return tool.BadArguments(TodosTool, "the list has %d items; keep it to %d", len(ts), maxTodos)
	}
	for i, t := range ts {
		switch {
		case strings.TrimSpace(t.Content) == "":
			return tool.BadArguments(TodosTool, "item %d has no content", i+1)
		case len([]rune(t.Content)) > maxTodoRunes:
			return tool.BadArguments(TodosTool, "item %d is longer than %d characters; say it in one line", i+1, maxTodoRunes)
		case t.Status != TodoPending && t.Status != TodoInProgress && t.Status != TodoCompleted:
			return tool.BadArguments(TodosTool, "item %d has status %q; use pending, in_progress or completed", i+1, t.Status)
		}
	}
	return nil
}

// todosText is what the model sees back: the list as it now stands.
func todosText(ts []Todo) string {
	if len(ts) == 0 {
		return "The to-do list is now empty."
	}
	var b strings.Builder
	b.WriteString("The to-do list is now:\n")
	for i, t := range ts {
		mark := " "
		switch t.Status {
		case TodoInProgress:
			mark = ">"
		case TodoCompleted:
			mark = "x"
		}
		fmt.Fprintf(&b, "%d. [%s] %s\n", i+1, mark, t.Content)
	}
	return strings.TrimRight(b.String(), "\n")
}
