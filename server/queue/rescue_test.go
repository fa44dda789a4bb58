package queue

import (
	"context"
	"testing"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"
)

// markRunning leaves job id as a replica killed outright leaves it: still
// running, its attempt begun ago.
func markRunning(t *testing.T, cfg Config, id int64, ago time.Duration) {
	t.Helper()
	ctx := context.Background()
	at := time.Now().Add(-ago).UTC()
	var err error
	if cfg.SQLite != nil {
		_, err = cfg.SQLite.ExecContext(ctx, `UPDATE river_job SET state = 'running', attempt = 1, attempted_at = ?, attempted_by = '["killed-replica"]' WHERE id = ?`,
			at.Round(time.Millisecond).Format("2006-01-02 15:04:05.000"), id)
	} else {
		_, err = cfg.Postgres.Exec(ctx, `UPDATE river_job SET state = 'running', attempt = 1, attempted_at = $1, attempted_by = '{killed-replica}' WHERE id = $2`, at, id)
	}
	if err != nil {
		t.Fatal(err)
	}
}

// A unit whose replica was killed in the middle (its job left running,
// never completed) is tried again by another replica once the unit's
// timeout has passed — minutes, not River's default of hours — while a
// unit still within its timeout is left to the replica working it.
func TestKilledUnitIsRescuedAfterItsTimeout(t *testing.T) {
	forEach(t, func(t *testing.T, b backend) {
		units := make(chan UnitJob, 10)
		cfg := b.open(t)
		cfg.Advance = func(context.Context, string, string) (Result, error) { return Result{}, nil }
		cfg.Unit = func(_ context.Context, u UnitJob) error { units <- u; return nil }
		cfg.RescueStuckJobsAfter = time.Minute
		cfg.UnitTimeout = time.Minute // River's bound: 2 minutes with the margin

		// The replica that dies: it had taken both units.
		dying, err := New(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		var ids []int64
		for i := range 2 {
			res, err := dying.eng.ops().insert(context.Background(), UnitJob{Tenant: "t", ExperimentID: "e", Index: i},
				&river.InsertOpts{Queue: dying.cfg.QueueName, MaxAttempts: 5, ScheduledAt: time.Now().Add(time.Hour)})
			if err != nil {
				t.Fatal(err)
			}
			ids = append(ids, res.Job.ID)
		}
		if err := dying.Stop(context.Background()); err != nil {
			t.Fatal(err)
		}
		markRunning(t, cfg, ids[0], 3*time.Minute)  // past its 2 minutes
		markRunning(t, cfg, ids[1], 30*time.Second) // still within them

		// Another replica starts; its rescuer (it is the leader now) runs
		// at once.
		q := start(t, cfg)
		select {
		case u := <-units:
			if u.Index != 0 || u.Attempt != 2 {
				t.Fatalf("unit %d attempt %d was worked; want unit 0's second attempt", u.Index, u.Attempt)
			}
		case <-time.After(30 * time.Second):
			t.Fatal("the killed unit was not rescued")
		}
		jobs := unitJobs(t, q)
		if j := jobs[ids[1]]; j == nil || j.State != rivertype.JobStateRunning || j.Attempt != 1 {
			t.Fatalf("the unit within its timeout: %+v; want it left running at attempt 1", j)
		}
	})
}

func unitJobs(t *testing.T, q *Queue) map[int64]*rivertype.JobRow {
	t.Helper()
	params := river.NewJobListParams().Kinds(UnitKind).States(rivertype.JobStates()...).First(100)
	var (
		res *river.JobListResult
		err error
	)
	switch e := q.eng.(type) {
	case *sqliteEngine:
		res, err = e.client.JobList(context.Background(), params)
	case *pgEngine:
		res, err = e.client.JobList(context.Background(), params)
	}
	if err != nil {
		t.Fatal(err)
	}
	out := map[int64]*rivertype.JobRow{}
	for _, j := range res.Jobs {
		out[j.ID] = j
	}
	return out
}

// A unit's River bound is its UnitTimeout plus a margin of a minute, or of
// UnitTimeout itself when that is shorter: a short bound (a test's) is
// rescued soon after it, a production one keeps its minute.
func TestUnitRescueMarginIsNoLongerThanItsBound(t *testing.T) {
	for _, c := range []struct{ bound, want time.Duration }{
		{10 * time.Second, 20 * time.Second},
		{time.Minute, 2 * time.Minute},
		{12 * time.Minute, 13 * time.Minute},
	} {
		w := &unitWorker{q: &Queue{cfg: Config{UnitTimeout: c.bound}}}
		if got := w.Timeout(nil); got != c.want {
			t.Errorf("UnitTimeout %s: River's bound is %s, want %s", c.bound, got, c.want)
		}
	}
}
