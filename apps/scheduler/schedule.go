// Package scheduler is the study-schedule app: a week of days and
// periods holding fixed events (classes, labs) and study tasks to place,
// thirteen tools a planning agent uses to read and change it, and a SQLite
// (or PostgreSQL) store that persists every change as a diff in one
// transaction.
//
// Days and slots are numbered from 1, as people say them ("day 2, slots
// 3-4"). An event may accept embedded tasks (CanEmbed: a study hall where a
// task can be done); a task placed entirely inside such an event is
// embedded in it rather than conflicting with it. Every other overlap is a
// conflict, and a write that would cause one changes nothing.
//
// Task classes (Class, the category a task carries) exclude whole days:
// no write places a task on a day its class excludes. diagnose_schedule
// scores a week and proposes moves (Diagnose); optimize_schedule
// rearranges it in one of three modes (FirstFull, GlobalReopt,
// LocalAdjust); upsert_task_class writes a class. Every write is confirmed
// by a person. With Config.ToolGroups the agent adds and removes tool
// groups (Groups) during a run. DeleteConversation deletes a
// conversation's snapshots and data.
//
// # Embedding
//
// New(ctx, Config{Model, Database}) builds the app: a plan-and-execute
// agent over the schedules kept in the SQLite file Database (tables
// prefixed sched_, one schedule per scope). Run its Graph with a
// checkpointer and a thread, and the thread as the data scope
// (apps.WithScope); answer its form question, plan review and approvals
// through interrupts. See Example and Config for every option and its
// default:
//
//	app, err := scheduler.New(ctx, scheduler.Config{
//		Model: model, Database: "data/app.db",
//		ToolGroups: true, ActiveGroups: []string{scheduler.GroupEdit},
//		System: "You plan a {{.Days}}-day week ...", // a template over PromptData
//	})
//
// trellis.yaml's apps.scheduler carries the same options (Settings):
//
//	apps:
//	  scheduler:
//	    system: "You plan a {{.Days}}-day week ..."
//	    tool_groups: true
//	    active_groups: [edit, health]
//	    classes:
//	      - {name: cs, excluded_days: [5]}
//	    phases: {plan: {model: strong}, execute: {temperature: 0}}   # per-phase settings
//	    history: {policy: last_turns, turns: 10}                    # every phase's view of a long thread
//
// The calendar of a scope is deleted with App.DeleteScope (Store.DeleteScope);
// `trellis serve` calls it when the thread is deleted (DELETE
// /threads/{id}, or its TTL), and DeleteConversation deletes a thread's
// snapshots and calendar together.
package scheduler

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Kind says whether an item is a fixed event or a task to place.
type Kind string

// Item kinds.
const (
	KindEvent Kind = "event" // a class or appointment from the timetable
	KindTask  Kind = "task"  // study work to place; pending until placed
)

// Window is the span a schedule covers.
type Window struct {
	Days     int      `json:"days"`
	Slots    int      `json:"slots_per_day"`
	DayNames []string `json:"day_names"`
}

// DayName returns the name of day d (1-based), or "day d".
func (w Window) DayName(d int) string {
	if d >= 1 && d <= len(w.DayNames) {
		return w.DayNames[d-1]
	}
	return fmt.Sprintf("day %d", d)
}

// Item is an event or a task. A placed item occupies slots Start to
// Start+Duration-1 of Day; a pending task has Day and Start 0.
type Item struct {
	ID       int    `json:"id"`
	Title    string `json:"title"`
	Kind     Kind   `json:"kind"`
	Category string `json:"category,omitempty"`
	Duration int    `json:"duration"`
	Day      int    `json:"day,omitempty"`
	Start    int    `json:"start,omitempty"`
	// Locked items cannot be moved or swapped.
	Locked bool `json:"locked,omitempty"`
	// CanEmbed events accept tasks placed inside them.
	CanEmbed bool `json:"can_embed,omitempty"`
	// Host is the event this task is embedded in (0: none).
	Host int `json:"host,omitempty"`
}

// Placed reports whether the item occupies slots.
func (it Item) Placed() bool { return it.Day > 0 }

// End is the last slot the item occupies.
func (it Item) End() int { return it.Start + it.Duration - 1 }

func (it Item) where(w Window) string {
	if !it.Placed() {
		return "pending"
	}
	if it.Duration == 1 {
		return fmt.Sprintf("%s slot %d", w.DayName(it.Day), it.Start)
	}
	return fmt.Sprintf("%s slots %d-%d", w.DayName(it.Day), it.Start, it.End())
}

func (it Item) label() string { return fmt.Sprintf("%q (#%d)", it.Title, it.ID) }

// Schedule is a window and its items. Operations never change a Schedule:
// they return a changed copy, so a failed operation leaves nothing behind.
type Schedule struct {
	Window Window
	Items  map[int]Item
	// Classes are the task classes by name (see Class); a task's Category
	// names its class.
	Classes map[string]Class
}

// Clone returns a copy that shares nothing mutable with s.
func (s *Schedule) Clone() *Schedule {
	return &Schedule{Window: s.Window, Items: maps.Clone(s.Items), Classes: maps.Clone(s.Classes)}
}

// Sorted returns the items ordered by day, start and ID, pending last.
func (s *Schedule) Sorted() []Item {
	items := slices.Collect(maps.Values(s.Items))
	slices.SortFunc(items, func(a, b Item) int {
		ak, bk := a.Day, b.Day
		if ak == 0 {
			ak = 1 << 30
		}
		if bk == 0 {
			bk = 1 << 30
		}
		if ak != bk {
			return ak - bk
		}
		if a.Start != b.Start {
			return a.Start - b.Start
		}
		return a.ID - b.ID
	})
	return items
}

func (s *Schedule) item(id int) (Item, error) {
	it, ok := s.Items[id]
	if !ok {
		return Item{}, fmt.Errorf("there is no item #%d; list_tasks shows the items and their IDs", id)
	}
	return it, nil
}

func overlaps(a, b Item) bool {
	return a.Placed() && b.Placed() && a.Day == b.Day && a.Start <= b.End() && b.Start <= a.End()
}

// fits reports whether it lies entirely inside host.
func fits(it, host Item) bool {
	return it.Day == host.Day && it.Start >= host.Start && it.End() <= host.End()
}

// settle checks that it can stand where it is, ignoring the items in skip,
// and returns it with its embedding decided: a task lying entirely inside
// one embeddable event, and overlapping nothing else, is embedded in it.
// Any other overlap is a conflict, reported with the items in the way.
func (s *Schedule) settle(it Item, skip map[int]bool) (Item, error) {
	w := s.Window
	if it.Day < 1 || it.Day > w.Days {
		return it, fmt.Errorf("day %d is outside the schedule (days 1-%d)", it.Day, w.Days)
	}
	if it.Start < 1 || it.End() > w.Slots {
		return it, fmt.Errorf("slots %d-%d do not fit in a day (slots 1-%d; %s needs %d)", it.Start, it.End(), w.Slots, it.label(), it.Duration)
	}
	if err := s.allowed(it); err != nil {
		return it, err
	}
	it.Host = 0
	var in []Item
	for _, o := range s.Items {
		if o.ID != it.ID && !skip[o.ID] && overlaps(it, o) {
			in = append(in, o)
		}
	}
	if len(in) == 0 {
		return it, nil
	}
	if len(in) == 1 && it.Kind == KindTask && in[0].Kind == KindEvent && in[0].CanEmbed && fits(it, in[0]) {
		it.Host = in[0].ID
		return it, nil
	}
	if it.Kind == KindEvent && it.CanEmbed {
		// Tasks embedded in this event may stay inside it.
		all := true
		for _, o := range in {
			if !(o.Kind == KindTask && o.Host == it.ID && fits(o, it)) {
				all = false
			}
		}
		if all {
			return it, nil
		}
	}
	slices.SortFunc(in, func(a, b Item) int { return a.ID - b.ID })
	names := make([]string, len(in))
	for i, o := range in {
		names[i] = o.label() + " at " + o.where(w)
	}
	return it, fmt.Errorf("%s is taken by %s", Item{Day: it.Day, Start: it.Start, Duration: it.Duration}.where(w), strings.Join(names, " and "))
}

// Place puts a pending task at day and start.
func (s *Schedule) Place(id, day, start int) (*Schedule, error) {
	it, err := s.item(id)
	if err != nil {
		return nil, err
	}
	switch {
	case it.Kind != KindTask:
		return nil, fmt.Errorf("%s is an event; only tasks are placed (use move to change an event)", it.label())
	case it.Placed():
		return nil, fmt.Errorf("%s is already placed at %s; use move to change it", it.label(), it.where(s.Window))
	}
	it.Day, it.Start = day, start
	if it, err = s.settle(it, nil); err != nil {
		return nil, fmt.Errorf("cannot place %s: %w", it.label(), err)
	}
	out := s.Clone()
	out.Items[id] = it
	return out, nil
}

func (s *Schedule) movable(it Item) error {
	switch {
	case !it.Placed():
		return fmt.Errorf("%s is not placed; use place for a pending task", it.label())
	case it.Locked:
		return fmt.Errorf("%s is locked and cannot be moved", it.label())
	}
	for _, o := range s.Items {
		if o.Host == it.ID {
			return fmt.Errorf("%s holds the embedded task %s; move or unplace that first", it.label(), o.label())
		}
	}
	return nil
}

// Move moves a placed item to day and start.
func (s *Schedule) Move(id, day, start int) (*Schedule, error) {
	return s.BatchMove([]Move{{ID: id, Day: day, Start: start}})
}

// Move is one item's new position in a batch.
type Move struct {
	ID    int `json:"id" jsonschema:"the item to move"`
	Day   int `json:"day" jsonschema:"the new day, from 1"`
	Start int `json:"start" jsonschema:"the new first slot, from 1"`
}

// BatchMove moves several items at once: all of them, or none when any
// would conflict. The items are checked at their new places together, so a
// batch may move items into each other's old slots.
func (s *Schedule) BatchMove(moves []Move) (*Schedule, error) {
	if len(moves) == 0 {
		return nil, fmt.Errorf("no moves given")
	}
	skip := map[int]bool{}
	moved := make([]Item, len(moves))
	for i, m := range moves {
		it, err := s.item(m.ID)
		if err != nil {
			return nil, err
		}
		if skip[m.ID] {
			return nil, fmt.Errorf("%s is moved twice in one batch", it.label())
		}
		if err := s.movable(it); err != nil {
			return nil, err
		}
		skip[m.ID] = true
		it.Day, it.Start = m.Day, m.Start
		moved[i] = it
	}
	out := s.Clone()
	for _, it := range moved {
		delete(out.Items, it.ID)
	}
	for i, it := range moved {
		settled, err := out.settle(it, nil)
		if err != nil {
			if len(moves) > 1 {
				return nil, fmt.Errorf("nothing was moved: move %d of %d (%s): %w", i+1, len(moves), it.label(), err)
			}
			return nil, fmt.Errorf("cannot move %s: %w", it.label(), err)
		}
		out.Items[it.ID] = settled
	}
	return out, nil
}

// Swap exchanges the places of two placed items of the same duration.
func (s *Schedule) Swap(a, b int) (*Schedule, error) {
	ia, err := s.item(a)
	if err != nil {
		return nil, err
	}
	ib, err := s.item(b)
	if err != nil {
		return nil, err
	}
	if a == b {
		return nil, fmt.Errorf("cannot swap %s with itself", ia.label())
	}
	if ia.Duration != ib.Duration {
		return nil, fmt.Errorf("cannot swap %s (%d slots) with %s (%d slots): swapped items must have the same duration", ia.label(), ia.Duration, ib.label(), ib.Duration)
	}
	out, err := s.BatchMove([]Move{{ID: a, Day: ib.Day, Start: ib.Start}, {ID: b, Day: ia.Day, Start: ia.Start}})
	if err != nil {
		return nil, fmt.Errorf("cannot swap, nothing changed: %w", err)
	}
	return out, nil
}

// Unplace makes a placed task pending again, ending any embedding.
func (s *Schedule) Unplace(id int) (*Schedule, error) {
	it, err := s.item(id)
	if err != nil {
		return nil, err
	}
	switch {
	case it.Kind != KindTask:
		return nil, fmt.Errorf("%s is an event; events cannot be unplaced", it.label())
	case !it.Placed():
		return nil, fmt.Errorf("%s is already pending", it.label())
	case it.Locked:
		return nil, fmt.Errorf("%s is locked and cannot be unplaced", it.label())
	}
	it.Day, it.Start, it.Host = 0, 0, 0
	out := s.Clone()
	out.Items[id] = it
	return out, nil
}

// Change is one item's state before and after a write.
type Change struct {
	ID     int  `json:"id"`
	Before Item `json:"before"`
	After  Item `json:"after"`
}

// Diff lists the items that differ between s and next, by ID.
func (s *Schedule) Diff(next *Schedule) []Change {
	var out []Change
	for id, after := range next.Items {
		if before := s.Items[id]; before != after {
			out = append(out, Change{ID: id, Before: before, After: after})
		}
	}
	slices.SortFunc(out, func(a, b Change) int { return a.ID - b.ID })
	return out
}

// Describe says what a change did, for results and logs.
func (c Change) Describe(w Window) string {
	switch {
	case !c.Before.Placed():
		s := fmt.Sprintf("placed %s at %s", c.After.label(), c.After.where(w))
		if c.After.Host != 0 {
			s += fmt.Sprintf(" (embedded in #%d)", c.After.Host)
		}
		return s
	case !c.After.Placed():
		return fmt.Sprintf("unplaced %s (was at %s)", c.After.label(), c.Before.where(w))
	default:
		s := fmt.Sprintf("moved %s from %s to %s", c.After.label(), c.Before.where(w), c.After.where(w))
		if c.After.Host != 0 {
			s += fmt.Sprintf(" (embedded in #%d)", c.After.Host)
		}
		return s
	}
}
