package config

import (
	"fmt"
	"time"
)

// Retention is a checkpoint retention policy, in trellis.yaml under
// threads.retention (the server-wide default) and assistants[].retention
// (the threads whose last run was that assistant's):
//
//	retention: {keep_last: 20, forks_older_than: 720h}
//
// The thread sweeper applies it to every thread a little at a time
// (threads.sweep_batch threads per threads.sweep_interval). Off when
// absent or both fields are 0. See docs/serve.md, "Checkpoint retention".
type Retention struct {
	// KeepLast is how many checkpoints of a thread's main line (the chain
	// from its latest checkpoint back through parents) are kept; 0: all.
	KeepLast int `yaml:"keep_last"`
	// ForksOlderThan drops the superseded branches (forks the thread did
	// not go on with) whose newest checkpoint is older than this; 0: never.
	ForksOlderThan time.Duration `yaml:"forks_older_than"`
}

func (r *Retention) check(field string) []error {
	if r == nil {
		return nil
	}
	var errs []error
	if r.KeepLast < 0 {
		errs = append(errs, fmt.Errorf("%s.keep_last: %d is negative; give the number of checkpoints to keep, or 0 for all", field, r.KeepLast))
	}
	if r.ForksOlderThan < 0 {
		errs = append(errs, fmt.Errorf("%s.forks_older_than: %s is negative; give a duration such as 720h, or 0 to keep forks", field, r.ForksOlderThan))
	} else if r.ForksOlderThan > 0 && r.ForksOlderThan < time.Minute {
		errs = append(errs, fmt.Errorf("%s.forks_older_than: %s is less than a minute", field, r.ForksOlderThan))
	}
	return errs
}
