package scheduler

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/trellis-agents/trellis/apps"
	"github.com/trellis-agents/trellis/tool"
)

// data finds the schedule of a run's scope, seeding an empty scope.
type data struct {
	store    *Store
	fallback string
	seed     func() *Schedule
}

// ready returns the run's scope, seeded when it holds no schedule yet.
func (d data) ready(ctx context.Context) (string, error) {
	_, scope, err := d.loadScope(ctx)
	return scope, err
}

func (d data) load(ctx context.Context) (*Schedule, error) {
	s, _, err := d.loadScope(ctx)
	return s, err
}

func (d data) loadScope(ctx context.Context) (*Schedule, string, error) {
	scope := apps.ScopeOr(ctx, d.fallback)
	s, err := d.store.Load(ctx, scope)
	if errors.Is(err, ErrNoSchedule) && d.seed != nil {
		if _, err = d.store.Seed(ctx, scope, d.seed()); err != nil {
			return nil, scope, err
		}
		s, err = d.store.Load(ctx, scope)
	}
	return s, scope, err
}

// Read tool arguments.
type (
	overviewArgs struct{}
	rangeArgs    struct {
		Day  int `json:"day" jsonschema:"the day, from 1"`
		From int `json:"from,omitempty" jsonschema:"first slot to show (default 1)"`
		To   int `json:"to,omitempty" jsonschema:"last slot to show (default the last slot of the day)"`
	}
	freeArgs struct {
		Duration int `json:"duration" jsonschema:"how many consecutive slots are needed"`
		Day      int `json:"day,omitempty" jsonschema:"only this day (default every day)"`
	}
	listArgs struct {
		Status   string `json:"status,omitempty" jsonschema:"pending, placed or all (default all)"`
		Category string `json:"category,omitempty" jsonschema:"only this category"`
	}
	idArgs struct {
		ID int `json:"id" jsonschema:"the item's ID"`
	}
	placeArgs struct {
		ID    int `json:"id" jsonschema:"the pending task to place"`
		Day   int `json:"day" jsonschema:"the day, from 1"`
		Start int `json:"start" jsonschema:"the first slot, from 1"`
	}
	swapArgs struct {
		A int `json:"a" jsonschema:"one placed item"`
		B int `json:"b" jsonschema:"the other placed item, of the same duration"`
	}
	batchArgs struct {
		Moves []Move `json:"moves" jsonschema:"the moves, applied all together or not at all"`
	}
)

// Tools returns the thirteen schedule tools over store: six read tools
// that run at once (get_overview, query_range, find_free, list_tasks,
// get_task_info, diagnose_schedule) and seven write tools that need a
// person's approval (place, move, swap, batch_move, unplace,
// upsert_task_class, optimize_schedule). Groups sorts them into tool
// groups. Each write is applied once per
// call ID (see Store.Apply).
//
// Every call works on the schedule of the run's scope: apps.Scope(ctx),
// else defaultScope. A scope with no schedule yet is seeded with seed()
// on first use (nil seed: the call fails saying the scope is empty).
// DiagnoseName is the name of the health tool (Diagnose).
const DiagnoseName = "diagnose_schedule"

func Tools(store *Store, defaultScope string, seed func() *Schedule) []tool.Tool {
	d := data{store: store, fallback: defaultScope, seed: seed}
	read := func(ctx context.Context, f func(*Schedule) (string, error)) (string, error) {
		s, err := d.load(ctx)
		if err != nil {
			return "", err
		}
		return f(s)
	}
	write := func(ctx context.Context, name string, op Op) (string, error) {
		scope, err := d.ready(ctx)
		if err != nil {
			return "", err
		}
		id, _ := tool.CallID(ctx)
		return store.Apply(ctx, scope, name, id, op)
	}
	return []tool.Tool{
		tool.MustFunc("get_overview", "Overview of the schedule: the days, how full each day is, the events that accept embedded tasks, and the pending tasks.",
			func(ctx context.Context, _ overviewArgs) (string, error) { return read(ctx, overview) }, tool.ReadOnly()),
		tool.MustFunc("query_range", "What occupies each slot of one day (or of a range of its slots).",
			func(ctx context.Context, a rangeArgs) (string, error) {
				return read(ctx, func(s *Schedule) (string, error) { return queryRange(s, a) })
			}, tool.ReadOnly()),
		tool.MustFunc("find_free", "Free runs of at least the given number of consecutive slots, and events a task of that length could be embedded in.",
			func(ctx context.Context, a freeArgs) (string, error) {
				return read(ctx, func(s *Schedule) (string, error) { return findFree(s, a) })
			}, tool.ReadOnly()),
		tool.MustFunc("list_tasks", "List items with their IDs, kind, duration and place, filtered by status and category.",
			func(ctx context.Context, a listArgs) (string, error) {
				return read(ctx, func(s *Schedule) (string, error) { return listTasks(s, a) })
			}, tool.ReadOnly()),
		tool.MustFunc("get_task_info", "Everything about one item, including what it is embedded in or what is embedded in it.",
			func(ctx context.Context, a idArgs) (string, error) {
				return read(ctx, func(s *Schedule) (string, error) { return taskInfo(s, a.ID) })
			}, tool.ReadOnly()),
		tool.MustFunc(DiagnoseName, "Diagnose the schedule: a score out of 100 (pending tasks, unequal days and crowded days cost points), each day's load, and proposed moves that would raise the score.",
			func(ctx context.Context, _ overviewArgs) (string, error) {
				return read(ctx, func(s *Schedule) (string, error) { return Diagnose(s).Render(s.Window), nil })
			}, tool.ReadOnly()),
		tool.MustFunc("place", "Place a pending task at a day and first slot. A task placed entirely inside an event that accepts embedding is embedded in it.",
			func(ctx context.Context, a placeArgs) (string, error) {
				return write(ctx, "place", func(s *Schedule) (*Schedule, error) { return s.Place(a.ID, a.Day, a.Start) })
			}, tool.Summary(func(a placeArgs) string {
				return fmt.Sprintf("Place item #%d on day %d from slot %d", a.ID, a.Day, a.Start)
			})),
		tool.MustFunc("move", "Move a placed, unlocked item to another day and first slot.",
			func(ctx context.Context, a placeArgs) (string, error) {
				return write(ctx, "move", func(s *Schedule) (*Schedule, error) { return s.Move(a.ID, a.Day, a.Start) })
			}, tool.Summary(func(a placeArgs) string {
				return fmt.Sprintf("Move item #%d to day %d from slot %d", a.ID, a.Day, a.Start)
			})),
		tool.MustFunc("swap", "Swap the places of two placed, unlocked items of the same duration.",
			func(ctx context.Context, a swapArgs) (string, error) {
				return write(ctx, "swap", func(s *Schedule) (*Schedule, error) { return s.Swap(a.A, a.B) })
			}, tool.Summary(func(a swapArgs) string { return fmt.Sprintf("Swap items #%d and #%d", a.A, a.B) })),
		tool.MustFunc("batch_move", "Move several items at once: all of them, or none if any move would conflict.",
			func(ctx context.Context, a batchArgs) (string, error) {
				return write(ctx, "batch_move", func(s *Schedule) (*Schedule, error) { return s.BatchMove(a.Moves) })
			}, tool.Summary(func(a batchArgs) string {
				parts := make([]string, len(a.Moves))
				for i, m := range a.Moves {
					parts[i] = fmt.Sprintf("#%d to day %d slot %d", m.ID, m.Day, m.Start)
				}
				return "Move " + strings.Join(parts, ", ")
			})),
		tool.MustFunc("unplace", "Take a placed task off the schedule, making it pending again.",
			func(ctx context.Context, a idArgs) (string, error) {
				return write(ctx, "unplace", func(s *Schedule) (*Schedule, error) { return s.Unplace(a.ID) })
			}, tool.Summary(func(a idArgs) string { return fmt.Sprintf("Unplace item #%d", a.ID) })),
		upsertClassTool(write),
		optimizeTool(write),
	}
}

func overview(s *Schedule) (string, error) {
	var b strings.Builder
	w := s.Window
	fmt.Fprintf(&b, "%d days of %d slots.\n", w.Days, w.Slots)
	used := make([]int, w.Days+1)
	var hosts, pending []Item
	for _, it := range s.Sorted() {
		switch {
		case !it.Placed():
			pending = append(pending, it)
		case it.Host == 0:
			used[it.Day] += it.Duration
		}
		if it.Kind == KindEvent && it.CanEmbed {
			hosts = append(hosts, it)
		}
	}
	for d := 1; d <= w.Days; d++ {
		fmt.Fprintf(&b, "- %s (day %d): %d of %d slots used\n", w.DayName(d), d, used[d], w.Slots)
	}
	b.WriteString("Events that accept embedded tasks:\n")
	for _, h := range hosts {
		fmt.Fprintf(&b, "- %s at %s\n", h.label(), h.where(w))
	}
	fmt.Fprintf(&b, "Pending tasks (%d):\n", len(pending))
	for _, p := range pending {
		fmt.Fprintf(&b, "- %s, %d slots, %s\n", p.label(), p.Duration, p.Category)
	}
	if names := s.classNames(); len(names) > 0 {
		b.WriteString("Task classes:\n")
		for _, n := range names {
			c := s.Classes[n]
			days := make([]string, len(c.ExcludedDays))
			for i, d := range c.ExcludedDays {
				days[i] = w.DayName(d)
			}
			line := "- " + c.Name
			if len(days) > 0 {
				line += ": never on " + strings.Join(days, ", ")
			}
			b.WriteString(line + "\n")
		}
	}
	return b.String(), nil
}

func queryRange(s *Schedule, a rangeArgs) (string, error) {
	w := s.Window
	from, to := max(a.From, 1), a.To
	if to == 0 {
		to = w.Slots
	}
	if a.Day < 1 || a.Day > w.Days {
		return "", tool.BadArguments("query_range", "day %d is outside the schedule (days 1-%d)", a.Day, w.Days)
	}
	if from > to || to > w.Slots {
		return "", tool.BadArguments("query_range", "slots %d-%d are not a range of a day (slots 1-%d)", from, to, w.Slots)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s (day %d):\n", w.DayName(a.Day), a.Day)
	for slot := from; slot <= to; slot++ {
		var here []string
		for _, it := range s.Sorted() {
			if it.Day == a.Day && it.Start <= slot && slot <= it.End() {
				l := it.label()
				if it.Host != 0 {
					l += fmt.Sprintf(" embedded in #%d", it.Host)
				}
				here = append(here, l)
			}
		}
		if len(here) == 0 {
			here = []string{"free"}
		}
		fmt.Fprintf(&b, "- slot %d: %s\n", slot, strings.Join(here, ", "))
	}
	return b.String(), nil
}

func findFree(s *Schedule, a freeArgs) (string, error) {
	w := s.Window
	if a.Duration < 1 || a.Duration > w.Slots {
		return "", tool.BadArguments("find_free", "duration must be 1-%d slots, not %d", w.Slots, a.Duration)
	}
	if a.Day != 0 && (a.Day < 1 || a.Day > w.Days) {
		return "", tool.BadArguments("find_free", "day %d is outside the schedule (days 1-%d)", a.Day, w.Days)
	}
	var b strings.Builder
	found := 0
	for d := 1; d <= w.Days; d++ {
		if a.Day != 0 && d != a.Day {
			continue
		}
		busy := make([]bool, w.Slots+2)
		for _, it := range s.Items {
			if it.Day == d {
				for i := it.Start; i <= it.End(); i++ {
					busy[i] = true
				}
			}
		}
		for start := 1; start <= w.Slots; {
			if busy[start] {
				start++
				continue
			}
			end := start
			for end+1 <= w.Slots && !busy[end+1] {
				end++
			}
			if end-start+1 >= a.Duration {
				fmt.Fprintf(&b, "- free: %s (day %d) slots %d-%d\n", w.DayName(d), d, start, end)
				found++
			}
			start = end + 1
		}
	}
	for _, it := range s.Sorted() {
		if it.Kind == KindEvent && it.CanEmbed && it.Duration >= a.Duration && (a.Day == 0 || it.Day == a.Day) {
			fmt.Fprintf(&b, "- embeddable: inside %s at %s\n", it.label(), it.where(w))
			found++
		}
	}
	if found == 0 {
		return fmt.Sprintf("No free run of %d slots; consider moving or swapping items.", a.Duration), nil
	}
	return b.String(), nil
}

func listTasks(s *Schedule, a listArgs) (string, error) {
	switch a.Status {
	case "", "all", "pending", "placed":
	default:
		return "", tool.BadArguments("list_tasks", "status must be pending, placed or all, not %q", a.Status)
	}
	var b strings.Builder
	n := 0
	for _, it := range s.Sorted() {
		if (a.Status == "pending" && it.Placed()) || (a.Status == "placed" && !it.Placed()) {
			continue
		}
		if a.Category != "" && it.Category != a.Category {
			continue
		}
		fmt.Fprintf(&b, "- #%d %q: %s, %d slots, %s", it.ID, it.Title, it.Kind, it.Duration, it.where(s.Window))
		if it.Locked {
			b.WriteString(", locked")
		}
		b.WriteString("\n")
		n++
	}
	if n == 0 {
		return "No items match.", nil
	}
	return b.String(), nil
}

func taskInfo(s *Schedule, id int) (string, error) {
	it, err := s.item(id)
	if err != nil {
		return "", &tool.ArgumentError{Tool: "get_task_info", Problem: err.Error()}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "#%d %q: %s, category %q, %d slots, %s", it.ID, it.Title, it.Kind, it.Category, it.Duration, it.where(s.Window))
	if it.Locked {
		b.WriteString(", locked")
	}
	if it.CanEmbed {
		b.WriteString(", accepts embedded tasks")
	}
	if it.Host != 0 {
		fmt.Fprintf(&b, ", embedded in %s", s.Items[it.Host].label())
	}
	for _, o := range s.Sorted() {
		if o.Host == it.ID {
			fmt.Fprintf(&b, "\nholds embedded %s at %s", o.label(), o.where(s.Window))
		}
	}
	return b.String(), nil
}
