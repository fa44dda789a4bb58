package faulttest

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// cpuShares is the CPU time each part of a load used: the replicas, the
// PostgreSQL backends serving them, PostgreSQL's own background
// processes (shared with whatever else uses the server), the harness's
// Redis, and the test process (the load's clients).
type cpuShares struct {
	replicas, backends, pgAux, redis, clients time.Duration
}

func (s cpuShares) total() time.Duration {
	return s.replicas + s.backends + s.pgAux + s.redis + s.clients
}

// cpuSnapshot is the CPU time so far of each process of a load, by kind
// and PID.
type cpuSnapshot map[string]map[int]time.Duration

// since is the CPU each kind used from before to s, over the processes
// in s (one started meanwhile counts from 0; one that ended is lost).
func (s cpuSnapshot) since(before cpuSnapshot) cpuShares {
	d := func(kind string) time.Duration {
		var sum time.Duration
		for pid, t := range s[kind] {
			sum += t - before[kind][pid]
		}
		return sum
	}
	return cpuShares{d("replica"), d("backend"), d("pgaux"), d("redis"), d("clients")}
}

// ticks is the kernel's clock tick for /proc's CPU times (USER_HZ): 100
// on every Linux the harness runs on.
const ticks = 100

// procCPU is the user plus system CPU time of process pid, from
// /proc/pid/stat; 0 when it cannot be read (the process ended).
func procCPU(pid int) time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// The command name, in parentheses, may hold spaces: the fields
	// counted from 1 after it start at field 3 (state).
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 13 {
		return 0
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64) // field 14
	stime, err2 := strconv.ParseInt(f[12], 10, 64) // field 15
	if err1 != nil || err2 != nil {
		return 0
	}
	return time.Duration(utime+stime) * time.Second / ticks
}

// cpuNow reads the CPU time of the load's processes so far. The backends
// are those whose application_name is the cluster's (newCluster sets it
// in the replicas' URL); the auxiliary processes are PostgreSQL's
// non-client backends. PostgreSQL must run on this machine: the
// harness's server does.
func (c *cluster) cpuNow() (cpuSnapshot, error) {
	s := cpuSnapshot{"replica": {}, "backend": {}, "pgaux": {}, "redis": {}, "clients": {}}
	c.mu.Lock()
	for _, cmd := range c.procs {
		if cmd.Process != nil && cmd.ProcessState == nil {
			s["replica"][cmd.Process.Pid] = procCPU(cmd.Process.Pid)
		}
	}
	c.mu.Unlock()
	if c.redisP != nil {
		s["redis"][c.redisP.Process.Pid] = procCPU(c.redisP.Process.Pid)
	}
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return nil, err
	}
	s["clients"][0] = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	rows, err := c.conn.Query(context.Background(),
		`SELECT pid, backend_type = 'client backend' FROM pg_stat_activity WHERE application_name = $1 OR backend_type <> 'client backend'`, c.appName())
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var pid int
		var client bool
		if err := rows.Scan(&pid, &client); err != nil {
			return nil, err
		}
		if client {
			s["backend"][pid] = procCPU(pid)
		} else {
			s["pgaux"][pid] = procCPU(pid)
		}
	}
	return s, rows.Err()
}

// appName is the application_name of the replicas' connections.
func (c *cluster) appName() string { return "trellis-" + c.schema }

// perRun formats d divided among n runs, in microseconds.
func perRun(d time.Duration, n int) string {
	if n == 0 {
		return "—"
	}
	return fmt.Sprintf("%.0f", float64(d.Microseconds())/float64(n))
}
