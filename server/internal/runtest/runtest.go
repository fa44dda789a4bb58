// Package runtest holds what the wires' tests share to run graphs without
// a queue: an in-process Enqueuer that advances the thread's runs at once.
package runtest

import (
	"context"
	"sync"
	"time"

	"github.com/trellis-agents/trellis/server/runs"
)

// Enqueuer returns a runs.Enqueuer that, instead of a queue, advances the
// thread's runs on a goroutine of its own until the thread is idle or bg
// ends; a busy thread (another worker holds it) is tried again every
// 10 ms. Each goroutine is counted in wg, so a test waits for them after
// cancelling bg.
func Enqueuer(bg context.Context, svc *runs.Service, wg *sync.WaitGroup) runs.Enqueuer {
	return func(_ context.Context, tenant, thread string) error {
		wg.Go(func() {
			for bg.Err() == nil {
				res, err := svc.Advance(bg, tenant, thread)
				switch {
				case err != nil || res == runs.Idle:
					return
				case res == runs.Busy:
					time.Sleep(10 * time.Millisecond)
				}
			}
		})
		return nil
	}
}
