package queue

import (
	"sync"
	"time"

	"github.com/riverqueue/river/rivertype"
)

// snoozeTracker remembers the jobs of this process whose last attempt
// ended in a snooze that River has not yet written.
//
// River's completer writes job outcomes in batches, up to 250 ms after a
// worker returned, and until then the job's row still says running. A
// running job normally cannot absorb a request (its Advance may have read
// the state already), but one that returned a snooze will run again and
// read the state then. Without this record, every request during that
// window would take a slot of its own: a burst of requests on a busy
// thread filled every slot within a quarter second.
//
// An entry is keyed by job ID and holds the attempt's attempted_at: when the
// job is fetched again (here or in another process) its row gets a new
// attempted_at, so the entry no longer matches and the row counts as a
// real running job again.
type snoozeTracker struct {
	mu      sync.Mutex
	entries map[int64]snoozeEntry
	stores  int
}

type snoozeEntry struct {
	attemptedAt time.Time // of the attempt that snoozed
	stored      time.Time
}

// snoozeEntryTTL is how long an entry is kept: far longer than River's
// completer takes to write a snooze, after which the row no longer says
// running for that attempt.
const snoozeEntryTTL = time.Minute

// sweepEvery is how many stores pass between sweeps of old entries
// (entries of jobs that ran again in another process are never looked up).
const sweepEvery = 256

// snoozed records that the attempt of job that started at attemptedAt
// ended in a snooze.
func (s *snoozeTracker) snoozed(id int64, attemptedAt *time.Time) {
	if attemptedAt == nil {
		return
	}
	now := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.entries == nil {
		s.entries = make(map[int64]snoozeEntry)
	}
	s.entries[id] = snoozeEntry{attemptedAt: *attemptedAt, stored: now}
	s.stores++
	if s.stores%sweepEvery == 0 {
		for k, e := range s.entries {
			if now.Sub(e.stored) > snoozeEntryTTL {
				delete(s.entries, k)
			}
		}
	}
}

// forget drops the job's entry (it is running again, or was deleted).
func (s *snoozeTracker) forget(id int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.entries, id)
}

// willRerun reports whether a job row that says running is in fact an
// attempt of this process that ended in a snooze River has not written yet.
func (s *snoozeTracker) willRerun(job *rivertype.JobRow) bool {
	if job.State != rivertype.JobStateRunning || job.AttemptedAt == nil {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.entries[job.ID]
	if !ok {
		return false
	}
	if !e.attemptedAt.Equal(*job.AttemptedAt) || time.Since(e.stored) > snoozeEntryTTL {
		delete(s.entries, job.ID)
		return false
	}
	return true
}
