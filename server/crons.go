package server

import (
	"context"
	"sync"
	"time"

	"github.com/trellis-agents/trellis/server/db"
	"github.com/trellis-agents/trellis/server/internal/cronsched"
)

// DefaultCronInterval is how often each replica looks for crons whose slot
// has come, when Config.CronInterval is 0. A slot fires within this long
// of its time.
const DefaultCronInterval = 10 * time.Second

// cronBatch bounds the crons one tick fires.
const cronBatch = 100

// cronLoop fires crons. Every replica runs one: each tick lists the crons
// whose next slot has come, claims each slot with a compare-and-set on the
// cron's next_run_at (db.Crons.AdvanceCron), and creates the slot's run
// only when its claim won, so a slot fires at most once however many
// replicas tick. The claim moves next_run_at to the first slot after now,
// not after the slot claimed: slots missed while no replica ran fire once,
// not once each.
type cronLoop struct {
	s      *Server
	fire   func(ctx context.Context, tenant string, c db.Cron) (db.Run, error)
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// start ticks at once, then every CronInterval until stop.
func (l *cronLoop) start(ctx context.Context) {
	ctx, l.cancel = context.WithCancel(ctx)
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		t := time.NewTicker(l.s.cfg.CronInterval)
		defer t.Stop()
		for {
			if _, err := l.tick(ctx, time.Now()); err != nil && ctx.Err() == nil {
				l.s.log.Warn("cron tick failed; retrying at the next tick", "err", err)
			}
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
}

// stop ends the loop and waits for its tick to return.
func (l *cronLoop) stop() {
	if l.cancel != nil {
		l.cancel()
		l.wg.Wait()
	}
}

// tick fires the crons due at now and returns the runs it created.
// A cron whose run cannot be created (its assistant was deleted, its
// thread refuses the run) has still used its slot: the error is logged.
func (l *cronLoop) tick(ctx context.Context, now time.Time) ([]db.Run, error) {
	due, err := l.s.st.db.DueCrons(ctx, now, cronBatch)
	if err != nil {
		return nil, err
	}
	var fired []db.Run
	for _, c := range due {
		var next time.Time
		sched, perr := cronsched.Parse(c.Schedule, c.Timezone)
		if perr == nil {
			next = sched.NextBefore(now, c.EndTime)
		}
		won, err := l.s.st.db.AdvanceCron(ctx, c.Tenant, c.ID, c.NextRunAt, next)
		if err != nil {
			return fired, err
		}
		if !won {
			continue // another replica fired this slot, or the cron changed
		}
		if perr != nil { // stored before a parser change: stop it, loudly
			l.s.log.Error("a cron's schedule no longer parses; it will not fire again until updated", "cron", c.ID, "tenant", c.Tenant, "err", perr)
			continue
		}
		run, err := l.fire(ctx, c.Tenant, c.Cron)
		if err != nil {
			l.s.log.Warn("a cron's slot came but its run could not be created", "cron", c.ID, "tenant", c.Tenant, "slot", c.NextRunAt, "err", err)
			continue
		}
		fired = append(fired, run)
		l.s.log.Info("cron fired", "cron", c.ID, "tenant", c.Tenant, "slot", c.NextRunAt, "run", run.ID, "thread", run.ThreadID, "next", next)
	}
	return fired, nil
}
