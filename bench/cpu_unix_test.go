//go:build unix

package bench

import (
	"syscall"
	"time"
)

// cpuTime returns the CPU time (user and system) the process has used. On
// a machine shared with other work, CPU time per op moves far less than
// wall time, which counts the time spent waiting for a core.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
