package queue

import (
	"testing"
	"time"

	"github.com/riverqueue/river/rivertype"
)

// A snooze record vouches only for the attempt that snoozed: the same job
// running again (a new attempted_at, here or in another process) is a real
// running job, and a record is dropped once it no longer matches.
func TestSnoozeTrackerMatchesTheAttempt(t *testing.T) {
	var s snoozeTracker
	first := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	second := first.Add(time.Millisecond)
	row := func(at time.Time, state rivertype.JobState) *rivertype.JobRow {
		return &rivertype.JobRow{ID: 7, AttemptedAt: &at, State: state}
	}
	if s.willRerun(row(first, rivertype.JobStateRunning)) {
		t.Fatal("an unknown job counted as snoozed")
	}
	s.snoozed(7, &first)
	if !s.willRerun(row(first, rivertype.JobStateRunning)) {
		t.Fatal("the attempt that snoozed is not recognised")
	}
	if s.willRerun(row(first, rivertype.JobStateCompleted)) {
		t.Fatal("a row that is not running counted as a pending snooze")
	}
	if s.willRerun(row(second, rivertype.JobStateRunning)) {
		t.Fatal("a later attempt of the job counted as the snoozed one")
	}
	if s.willRerun(row(first, rivertype.JobStateRunning)) {
		t.Fatal("the record survived a mismatch")
	}
	s.snoozed(7, &first)
	s.forget(7)
	if s.willRerun(row(first, rivertype.JobStateRunning)) {
		t.Fatal("a forgotten record still counts")
	}
	s.snoozed(8, nil) // no attempt time: nothing to match, nothing kept
	if len(s.entries) != 0 {
		t.Fatalf("entries = %v", s.entries)
	}
}
