//go:build unix

package planexec_test

import (
	"syscall"
	"time"
)

// cpuTime returns the CPU time (user and system, GC workers included) the
// process has used: on a shared machine it moves far less than wall time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
