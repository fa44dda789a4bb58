package scheduler

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Class is a task class: what the tasks of one category (Item.Category)
// share. Its excluded days are whole days its tasks are never placed on
// (a subject with no study on Fridays, say): place, move, swap and the
// optimiser all refuse them.
type Class struct {
	Name string `json:"name"`
	// ExcludedDays are day numbers (1 is the window's first day) the
	// class's tasks must not be placed on.
	ExcludedDays []int `json:"excluded_days,omitempty"`
	// Duration is the default duration of a new task of the class, in
	// slots (0: none).
	Duration int `json:"duration,omitempty"`
	// Description says what the class is, for the model.
	Description string `json:"description,omitempty"`
}

// excludes reports whether the class keeps its tasks off day.
func (c Class) excludes(day int) bool { return slices.Contains(c.ExcludedDays, day) }

// allowed reports why it may not stand on its day, or nil.
func (s *Schedule) allowed(it Item) error {
	if it.Kind != KindTask || it.Category == "" {
		return nil
	}
	c, ok := s.Classes[it.Category]
	if ok && c.excludes(it.Day) {
		return fmt.Errorf("%s is of class %q, which excludes %s; choose another day", it.label(), c.Name, s.Window.DayName(it.Day))
	}
	return nil
}

// UpsertClass creates the class c or replaces the class of that name. The
// excluded days must lie in the window, and no placed task of the class
// may stand on a day it now excludes (unplace or move it first).
func (s *Schedule) UpsertClass(c Class) (*Schedule, error) {
	c.Name = strings.TrimSpace(c.Name)
	if c.Name == "" {
		return nil, fmt.Errorf("the class has no name; give the category its tasks carry")
	}
	if c.Duration < 0 || c.Duration > s.Window.Slots {
		return nil, fmt.Errorf("duration %d is outside 0-%d slots", c.Duration, s.Window.Slots)
	}
	days := slices.Clone(c.ExcludedDays)
	slices.Sort(days)
	c.ExcludedDays = slices.Compact(days)
	for _, d := range c.ExcludedDays {
		if d < 1 || d > s.Window.Days {
			return nil, fmt.Errorf("excluded day %d is outside the schedule (days 1-%d)", d, s.Window.Days)
		}
	}
	if len(c.ExcludedDays) == s.Window.Days {
		return nil, fmt.Errorf("class %q would exclude every day, so its tasks could never be placed", c.Name)
	}
	for _, it := range s.Sorted() {
		if it.Kind == KindTask && it.Category == c.Name && it.Placed() && c.excludes(it.Day) {
			return nil, fmt.Errorf("%s stands on %s, which the class would exclude; move or unplace it first", it.label(), s.Window.DayName(it.Day))
		}
	}
	out := s.Clone()
	if out.Classes == nil {
		out.Classes = map[string]Class{}
	}
	out.Classes[c.Name] = c
	return out, nil
}

// Mode is how Optimize rearranges a schedule.
type Mode string

// The three re-optimisation modes.
const (
	// FirstFull is the first full plan: every pending task is placed;
	// placed tasks stay where they are.
	FirstFull Mode = "first_full"
	// GlobalReopt re-plans the whole week: every task that may move
	// (placed, unlocked, not embedded, holding nothing) is taken off, and
	// all tasks are placed again from scratch.
	GlobalReopt Mode = "global_reopt"
	// LocalAdjust changes only what it is pointed at: the given tasks, or
	// the movable tasks of the given days, are taken off and placed again;
	// everything else stays.
	LocalAdjust Mode = "local_adjust"
)

// Optimize rearranges s in mode. items and days choose what LocalAdjust
// touches (at least one of them is required there; the other modes ignore
// them). Tasks are placed longest first, each on the least loaded day its
// class allows that has a free run for it (the first such run), so the
// result is deterministic. A task that fits nowhere stays pending and is
// named in the returned note; that is not an error.
func (s *Schedule) Optimize(mode Mode, items, days []int) (*Schedule, string, error) {
	out := s.Clone()
	var redo []int
	free := func(it Item) bool {
		return it.Kind == KindTask && it.Placed() && !it.Locked && it.Host == 0 && s.movable(it) == nil
	}
	switch mode {
	case FirstFull:
	case GlobalReopt:
		for _, it := range s.Items {
			if free(it) {
				redo = append(redo, it.ID)
			}
		}
	case LocalAdjust:
		if len(items) == 0 && len(days) == 0 {
			return nil, "", fmt.Errorf("local_adjust needs the tasks (items) or the days to adjust")
		}
		for _, id := range items {
			it, err := s.item(id)
			if err != nil {
				return nil, "", err
			}
			if it.Placed() && !free(it) {
				return nil, "", fmt.Errorf("%s cannot be rearranged (it is locked, embedded or holds a task)", it.label())
			}
			if it.Placed() {
				redo = append(redo, id)
			}
		}
		for _, it := range s.Items {
			if slices.Contains(days, it.Day) && free(it) && !slices.Contains(redo, it.ID) {
				redo = append(redo, it.ID)
			}
		}
	default:
		return nil, "", fmt.Errorf("mode %q is not %s, %s or %s", mode, FirstFull, GlobalReopt, LocalAdjust)
	}
	for _, id := range redo {
		it := out.Items[id]
		it.Day, it.Start, it.Host = 0, 0, 0
		out.Items[id] = it
	}
	var pending []Item
	for _, it := range out.Items {
		if it.Kind == KindTask && !it.Placed() && (mode != LocalAdjust || slices.Contains(redo, it.ID) || slices.Contains(items, it.ID)) {
			pending = append(pending, it)
		}
	}
	slices.SortFunc(pending, func(a, b Item) int { return cmp.Or(b.Duration-a.Duration, a.ID-b.ID) })
	var stuck []string
	for _, it := range pending {
		placed := false
		load := Diagnose(out).Load
		order := make([]int, out.Window.Days)
		for i := range order {
			order[i] = i + 1
		}
		slices.SortStableFunc(order, func(a, b int) int { return cmpFloat(load[a-1], load[b-1]) })
		busy := occupancy(out)
		for _, d := range order {
			if c, ok := out.Classes[it.Category]; ok && c.excludes(d) {
				continue
			}
			if start, ok := freeRun(busy[d], out.Window.Slots, it.Duration); ok {
				it.Day, it.Start = d, start
				out.Items[it.ID] = it
				placed = true
				break
			}
		}
		if !placed {
			stuck = append(stuck, it.label())
		}
	}
	note := ""
	if len(stuck) > 0 {
		note = "No room for " + strings.Join(stuck, ", ") + "; they stay pending."
	}
	return out, note, nil
}

// classNames lists the classes by name.
func (s *Schedule) classNames() []string {
	return slices.Sorted(maps.Keys(s.Classes))
}

func classEqual(a, b Class) bool {
	return a.Name == b.Name && a.Duration == b.Duration && a.Description == b.Description && slices.Equal(a.ExcludedDays, b.ExcludedDays)
}

// describe says what the class is, for a write's result.
func (c Class) describe(w Window) string {
	days := make([]string, len(c.ExcludedDays))
	for i, d := range c.ExcludedDays {
		days[i] = w.DayName(d)
	}
	out := fmt.Sprintf("task class %q saved", c.Name)
	if len(days) > 0 {
		out += " (excluded: " + strings.Join(days, ", ") + ")"
	}
	return out
}
