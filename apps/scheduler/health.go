package scheduler

import (
	"fmt"
	"math"
	"slices"
	"strings"
)

// Health is a schedule's diagnosis: its metrics, a score and proposed
// moves (see Diagnose).
type Health struct {
	// Score is 100 for a schedule with every task placed, days equally
	// loaded and no day over 90% full; each problem takes points off (see
	// Diagnose).
	Score int `json:"score"`
	// Pending counts the tasks not placed; Tasks counts all tasks.
	Pending int `json:"pending"`
	Tasks   int `json:"tasks"`
	// Load is each day's share of occupied slots (0 to 1), day 1 first.
	Load []float64 `json:"load"`
	// Imbalance is the standard deviation of Load (0: balanced).
	Imbalance float64 `json:"imbalance"`
	// Crowded lists the days (1-based) over 90% full.
	Crowded []int `json:"crowded,omitempty"`
	// LongestRun is the longest run of consecutive occupied slots on any
	// day (tightness: a long run leaves no break).
	LongestRun int `json:"longest_run"`
	// Unplaceable lists the pending tasks that fit on no day their class
	// allows as the schedule stands (feasibility): placing them needs
	// moves first.
	Unplaceable []int `json:"unplaceable,omitempty"`
	// Proposals are moves that would raise the score, each valid on the
	// schedule as it is (they may not all be valid together).
	Proposals []Proposal `json:"proposals,omitempty"`
}

// Proposal is one suggested change: place a pending task, or move a
// placed one to a lighter day.
type Proposal struct {
	Op    string `json:"op"` // "place" or "move"
	ID    int    `json:"id"`
	Day   int    `json:"day"`
	Start int    `json:"start"`
	Why   string `json:"why"`
}

// Diagnose scores s. The score starts at 100 and loses 40 × the share of
// tasks pending, 100 × the load imbalance (the standard deviation of the
// days' loads, capped at 30 points), 5 per crowded day (over 90% full)
// and 10 per pending task that fits nowhere its class allows, never going
// below 0. LongestRun (the longest stretch without a free slot) is
// reported, not scored. Proposals place each pending task in the
// first free run of the least loaded day that fits it, and move one
// unlocked, unembedded task from the fullest day to the lightest when the
// gap between them is over a quarter of a day.
func Diagnose(s *Schedule) Health {
	w := s.Window
	h := Health{Load: make([]float64, w.Days)}
	for _, it := range s.Items {
		if it.Kind == KindTask {
			h.Tasks++
			if !it.Placed() {
				h.Pending++
			}
		}
	}
	busy := occupancy(s)
	for d := 1; d <= w.Days; d++ {
		n := 0
		for slot := 1; slot <= w.Slots; slot++ {
			if busy[d][slot] {
				n++
			}
		}
		h.Load[d-1] = float64(n) / float64(max(w.Slots, 1))
		run := 0
		for slot := 1; slot <= w.Slots; slot++ {
			if busy[d][slot] {
				run++
				h.LongestRun = max(h.LongestRun, run)
			} else {
				run = 0
			}
		}
		if h.Load[d-1] > 0.9 {
			h.Crowded = append(h.Crowded, d)
		}
	}
	mean := 0.0
	for _, l := range h.Load {
		mean += l
	}
	mean /= float64(max(len(h.Load), 1))
	for _, l := range h.Load {
		h.Imbalance += (l - mean) * (l - mean)
	}
	h.Imbalance = math.Sqrt(h.Imbalance / float64(max(len(h.Load), 1)))
	score := 100.0
	if h.Tasks > 0 {
		score -= 40 * float64(h.Pending) / float64(h.Tasks)
	}
	score -= min(100*h.Imbalance, 30)
	score -= 5 * float64(len(h.Crowded))
	h.Score = max(int(math.Round(score)), 0)

	days := make([]int, w.Days)
	for i := range days {
		days[i] = i + 1
	}
	slices.SortStableFunc(days, func(a, b int) int { return cmpFloat(h.Load[a-1], h.Load[b-1]) })
	for _, it := range s.Sorted() {
		if it.Kind != KindTask || it.Placed() {
			continue
		}
		found := false
		for _, d := range days {
			if c, ok := s.Classes[it.Category]; ok && c.excludes(d) {
				continue
			}
			if start, ok := freeRun(busy[d], w.Slots, it.Duration); ok {
				found = true
				h.Proposals = append(h.Proposals, Proposal{Op: "place", ID: it.ID, Day: d, Start: start,
					Why: fmt.Sprintf("%s is pending; %s is the lightest day with room", it.label(), w.DayName(d))})
				break
			}
		}
		if !found {
			h.Unplaceable = append(h.Unplaceable, it.ID)
		}
	}
	h.Score = max(h.Score-10*len(h.Unplaceable), 0)
	if len(days) > 1 {
		light, heavy := days[0], days[len(days)-1]
		if h.Load[heavy-1]-h.Load[light-1] > 0.25 {
			for _, it := range s.Sorted() {
				if it.Kind != KindTask || it.Day != heavy || it.Locked || it.Host != 0 {
					continue
				}
				if start, ok := freeRun(busy[light], w.Slots, it.Duration); ok {
					h.Proposals = append(h.Proposals, Proposal{Op: "move", ID: it.ID, Day: light, Start: start,
						Why: fmt.Sprintf("%s is %.0f%% full and %s %.0f%%", w.DayName(heavy), 100*h.Load[heavy-1], w.DayName(light), 100*h.Load[light-1])})
					break
				}
			}
		}
	}
	return h
}

// Render formats the diagnosis for a model.
func (h Health) Render(w Window) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Score %d/100. Tasks: %d, pending: %d. Load imbalance: %.2f. Longest stretch without a break: %d slots.\n", h.Score, h.Tasks, h.Pending, h.Imbalance, h.LongestRun)
	if len(h.Unplaceable) > 0 {
		fmt.Fprintf(&b, "No room as things stand for tasks %v: move or unplace something first.\n", h.Unplaceable)
	}
	for i, l := range h.Load {
		fmt.Fprintf(&b, "- %s: %.0f%% full\n", w.DayName(i+1), 100*l)
	}
	if len(h.Proposals) == 0 {
		b.WriteString("No moves to propose.")
		return b.String()
	}
	b.WriteString("Proposed moves (each valid on the schedule as it is now):\n")
	for _, p := range h.Proposals {
		fmt.Fprintf(&b, "- %s #%d to %s slot %d: %s\n", p.Op, p.ID, w.DayName(p.Day), p.Start, p.Why)
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// occupancy marks the occupied slots of each day (1-based both).
func occupancy(s *Schedule) [][]bool {
	busy := make([][]bool, s.Window.Days+1)
	for d := range busy {
		busy[d] = make([]bool, s.Window.Slots+2)
	}
	for _, it := range s.Items {
		if it.Placed() && it.Day <= s.Window.Days {
			for i := max(it.Start, 1); i <= min(it.End(), s.Window.Slots); i++ {
				busy[it.Day][i] = true
			}
		}
	}
	return busy
}

// freeRun returns the first start of n free slots.
func freeRun(busy []bool, slots, n int) (int, bool) {
	for start := 1; start+n-1 <= slots; start++ {
		ok := true
		for i := start; i < start+n; i++ {
			if busy[i] {
				ok = false
				break
			}
		}
		if ok {
			return start, true
		}
	}
	return 0, false
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
