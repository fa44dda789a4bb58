package scheduler

import (
	"strings"
	"testing"
)

// The sample week has pending tasks: the score shows it, every proposal
// is valid on the schedule, and applying the placements raises the score.
func TestDiagnoseScoresAndProposesValidMoves(t *testing.T) {
	s := Sample()
	h := Diagnose(s)
	if h.Pending == 0 || h.Score >= 100 || len(h.Proposals) == 0 {
		t.Fatalf("diagnosis %+v: want pending tasks, a score under 100 and proposals", h)
	}
	next := s
	for _, p := range h.Proposals {
		var err error
		switch p.Op {
		case "place":
			_, err = s.Place(p.ID, p.Day, p.Start)
			if err == nil {
				if n, err := next.Place(p.ID, p.Day, p.Start); err == nil {
					next = n
				}
			}
		case "move":
			_, err = s.Move(p.ID, p.Day, p.Start)
		}
		if err != nil {
			t.Errorf("proposal %+v is not valid: %v", p, err)
		}
	}
	if after := Diagnose(next); after.Score <= h.Score || after.Pending >= h.Pending {
		t.Errorf("after the placements: score %d (was %d), pending %d (was %d)", after.Score, h.Score, after.Pending, h.Pending)
	}
	if out := h.Render(s.Window); !strings.Contains(out, "Score ") || !strings.Contains(out, "Proposed moves") {
		t.Errorf("render:\n%s", out)
	}
}

// A balanced week with every task placed scores 100 and proposes nothing;
// an unbalanced one gets a move from the fullest day to the lightest.
func TestDiagnoseBalance(t *testing.T) {
	w := Window{Days: 2, Slots: 4, DayNames: []string{"Mon", "Tue"}}
	even := &Schedule{Window: w, Items: map[int]Item{
		1: {ID: 1, Title: "a", Kind: KindTask, Duration: 2, Day: 1, Start: 1},
		2: {ID: 2, Title: "b", Kind: KindTask, Duration: 2, Day: 2, Start: 1},
	}}
	if h := Diagnose(even); h.Score != 100 || len(h.Proposals) != 0 {
		t.Errorf("balanced: %+v", h)
	}
	lopsided := &Schedule{Window: w, Items: map[int]Item{
		1: {ID: 1, Title: "a", Kind: KindTask, Duration: 2, Day: 1, Start: 1},
		2: {ID: 2, Title: "b", Kind: KindTask, Duration: 2, Day: 1, Start: 3},
	}}
	h := Diagnose(lopsided)
	if h.Score >= 100 || len(h.Crowded) != 1 || len(h.Proposals) != 1 || h.Proposals[0].Op != "move" || h.Proposals[0].Day != 2 {
		t.Errorf("lopsided: %+v", h)
	}
}

// A task whose class allows only a full day fits nowhere: the diagnosis
// names it and scores it; the longest stretch without a break is
// measured.
func TestDiagnoseFeasibilityAndTightness(t *testing.T) {
	w := Window{Days: 2, Slots: 3, DayNames: []string{"Mon", "Tue"}}
	s := &Schedule{Window: w, Items: map[int]Item{
		1: {ID: 1, Title: "lecture", Kind: KindEvent, Duration: 3, Day: 1, Start: 1},
		2: {ID: 2, Title: "essay", Kind: KindTask, Category: "writing", Duration: 2},
	}, Classes: map[string]Class{"writing": {Name: "writing", ExcludedDays: []int{2}}}}
	h := Diagnose(s)
	if len(h.Unplaceable) != 1 || h.Unplaceable[0] != 2 || len(h.Proposals) != 0 {
		t.Errorf("diagnosis %+v: want task 2 unplaceable and no proposal", h)
	}
	if h.LongestRun != 3 {
		t.Errorf("longest run %d, want 3", h.LongestRun)
	}
	s.Classes = nil
	if h2 := Diagnose(s); len(h2.Unplaceable) != 0 || h2.Score <= h.Score {
		t.Errorf("without the class: %+v (score was %d)", h2, h.Score)
	}
}
