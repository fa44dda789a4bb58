package scheduler

import (
	"context"
	"fmt"
	"strings"

	"github.com/trellis-agents/trellis/tool"
)

// The names of the task-class and optimiser tools.
const (
	UpsertClassName = "upsert_task_class"
	OptimizeName    = "optimize_schedule"
)

type classArgs struct {
	Name         string `json:"name" jsonschema:"the class name: the category its tasks carry"`
	ExcludedDays []int  `json:"excluded_days,omitempty" jsonschema:"days (from 1) the class's tasks must never be placed on"`
	Duration     int    `json:"duration,omitempty" jsonschema:"default duration of a task of the class, in slots"`
	Description  string `json:"description,omitempty" jsonschema:"what the class is"`
}

type optimizeArgs struct {
	Mode  string `json:"mode" jsonschema:"first_full (place every pending task, keep the rest), global_reopt (re-plan every movable task) or local_adjust (only the given items or days)"`
	Items []int  `json:"items,omitempty" jsonschema:"local_adjust: the tasks to place again"`
	Days  []int  `json:"days,omitempty" jsonschema:"local_adjust: the days whose movable tasks are placed again"`
}

type writeFunc func(ctx context.Context, name string, op Op) (string, error)

// upsertClassTool creates or updates a task class (a write: confirmed).
func upsertClassTool(write writeFunc) tool.Tool {
	return tool.MustFunc(UpsertClassName, "Create or update a task class: the category its tasks carry, the days they must never be placed on, a default duration.",
		func(ctx context.Context, a classArgs) (string, error) {
			return write(ctx, UpsertClassName, func(s *Schedule) (*Schedule, error) {
				return s.UpsertClass(Class(a))
			})
		}, tool.Summary(func(a classArgs) string {
			out := fmt.Sprintf("Save task class %q", a.Name)
			if len(a.ExcludedDays) > 0 {
				out += fmt.Sprintf(", excluding days %v", a.ExcludedDays)
			}
			return out
		}))
}

// optimizeTool rearranges the schedule in one of the three modes (a
// write: confirmed).
func optimizeTool(write writeFunc) tool.Tool {
	return tool.MustFunc(OptimizeName, "Rearrange the schedule automatically: first_full places every pending task; global_reopt re-plans every movable task; local_adjust re-places only the given items or the movable tasks of the given days. Tasks go to the lightest allowed day with room.",
		func(ctx context.Context, a optimizeArgs) (string, error) {
			var note string
			out, err := write(ctx, OptimizeName, func(s *Schedule) (*Schedule, error) {
				next, n, err := s.Optimize(Mode(a.Mode), a.Items, a.Days)
				note = n
				return next, err
			})
			if err != nil || note == "" {
				return out, err
			}
			return out + " " + note, nil
		}, tool.Summary(func(a optimizeArgs) string {
			out := "Rearrange the schedule (" + a.Mode + ")"
			if len(a.Items) > 0 {
				out += fmt.Sprintf(" for items %v", a.Items)
			}
			if len(a.Days) > 0 {
				out += fmt.Sprintf(" on days %v", a.Days)
			}
			return out
		}))
}

// The tool groups (Groups).
const (
	GroupRead     = "read"         // get_overview, query_range, find_free, list_tasks, get_task_info
	GroupHealth   = "health"       // diagnose_schedule
	GroupEdit     = "edit"         // place, move, swap, batch_move, unplace
	GroupOptimize = "optimize"     // optimize_schedule
	GroupClasses  = "task_classes" // upsert_task_class
)

// Groups sorts tools (as Tools returns them) into the tool groups above.
// With Config.ToolGroups the agent starts with the read tools and its
// active groups only, and adds or removes the others itself during a run
// (tools_add / tools_remove): the model request carries the active groups'
// tools only.
func Groups(tools []tool.Tool) (read []tool.Tool, groups map[string][]tool.Tool) {
	groups = map[string][]tool.Tool{}
	for _, t := range tools {
		switch name := t.Info().Name; {
		case name == DiagnoseName:
			groups[GroupHealth] = append(groups[GroupHealth], t)
		case name == OptimizeName:
			groups[GroupOptimize] = append(groups[GroupOptimize], t)
		case name == UpsertClassName:
			groups[GroupClasses] = append(groups[GroupClasses], t)
		case t.Info().ReadOnly:
			read = append(read, t)
		default:
			groups[GroupEdit] = append(groups[GroupEdit], t)
		}
	}
	return read, groups
}

// groupNames lists the groups, for errors.
func groupNames() string {
	return strings.Join([]string{GroupHealth, GroupEdit, GroupOptimize, GroupClasses}, ", ")
}

// DeleteConversation deletes what a conversation left behind: the
// thread's checkpoints (its snapshots, through saver) and the schedule
// data of its scope in store (the runners scope by thread). Either may be
// nil to leave it alone. Deleting a conversation that left nothing is not
// an error.
func DeleteConversation(ctx context.Context, store *Store, saver interface {
	DeleteThread(ctx context.Context, threadID string) error
}, thread string) error {
	if thread == "" {
		return fmt.Errorf("scheduler: DeleteConversation needs the thread ID")
	}
	if saver != nil {
		if err := saver.DeleteThread(ctx, thread); err != nil {
			return fmt.Errorf("scheduler: delete the snapshots of thread %s: %w", thread, err)
		}
	}
	if store != nil {
		if _, err := store.DeleteScope(ctx, thread); err != nil {
			return err
		}
	}
	return nil
}
