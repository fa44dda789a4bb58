// Package faulttest kills and restarts real `trellis serve` replicas on one
// PostgreSQL and a Redis of its own, and checks that no run is lost or
// finished twice and no streamed event is lost or repeated. It runs only
// with TRELLIS_FAULT_TESTS=1 (.ci/run sets it) and needs
// TRELLIS_TEST_PG_DSN and redis-server on the PATH.
// TRELLIS_FAULT_PG_PARAMS adds connection parameters to the replicas'
// database URL (e.g. pool_max_conns=4, to measure another pool size).
package faulttest

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// cluster is the harness's replicas, database and Redis.
type cluster struct {
	t      *testing.T
	bin    string // the replica binary
	dir    string // barrier file and logs
	dbURL  string
	schema string
	redis  string
	conn   *pgx.Conn
	mu     sync.Mutex
	procs  map[string]*exec.Cmd
	urls   map[string]string
	redisP *exec.Cmd
}

func enabled(t *testing.T) string {
	t.Helper()
	if os.Getenv("TRELLIS_FAULT_TESTS") != "1" {
		t.Skip("fault tests run with TRELLIS_FAULT_TESTS=1 (.ci/run)")
	}
	dsn := os.Getenv("TRELLIS_TEST_PG_DSN")
	if dsn == "" {
		t.Fatal("the fault tests need TRELLIS_TEST_PG_DSN")
	}
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Fatal("the fault tests need redis-server on the PATH")
	}
	return dsn
}

// newCluster builds the replica binary (without -race: three of them share
// two cores), creates a fresh schema and starts a Redis on a free port.
func newCluster(t *testing.T) *cluster {
	dsn := enabled(t)
	c := &cluster{t: t, dir: clusterDir(t), procs: map[string]*exec.Cmd{}, urls: map[string]string{}}
	c.bin = filepath.Join(c.dir, "replica")
	build := exec.Command("go", "build", "-o", c.bin, "./replica")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		t.Fatalf("build the replica: %v", err)
	}
	ctx := context.Background()
	schema := fmt.Sprintf("fault_%d", time.Now().UnixNano()%1e12)
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	c.conn = conn
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, `CREATE TABLE `+schema+`.fault_exec (thread_id text, node text, phase text, replica text, at timestamptz)`); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c.stopAll()
		c.noteRefusedConnections()
		_, _ = conn.Exec(context.Background(), "DROP SCHEMA "+schema+" CASCADE")
		conn.Close(context.Background())
	})
	sep := "?"
	if strings.Contains(dsn, "?") {
		sep = "&"
	}
	c.schema = schema
	// The backends serving the replicas are told apart by their
	// application_name (cpuNow).
	c.dbURL = dsn + sep + "search_path=" + schema + "&application_name=" + c.appName()
	if extra := os.Getenv("TRELLIS_FAULT_PG_PARAMS"); extra != "" {
		c.dbURL += "&" + extra
	}
	c.startRedis()
	return c
}

// clusterDir is the directory of the cluster's binary, barrier and replica
// logs: a temporary one removed after the test, or, with
// TRELLIS_FAULT_KEEP set to a directory, a new one under it that is kept
// (its path is logged), to read the replicas' logs after a failure.
func clusterDir(t *testing.T) string {
	keep := os.Getenv("TRELLIS_FAULT_KEEP")
	if keep == "" {
		return t.TempDir()
	}
	dir, err := os.MkdirTemp(keep, "cluster-")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("cluster directory (kept): %s", dir)
	return dir
}

// refusedConnections is PostgreSQL refusing a connection for want of
// one (max_connections, or a role's connection limit): SQLSTATE 53300.
const refusedConnections = "SQLSTATE 53300"

// noteRefusedConnections says, when the test failed, whether PostgreSQL
// refused the replicas connections: a cluster holds ~56 at its peak, so
// another process's tests on the same server can use up the rest (100 by
// default). A write that cannot connect leaves its run to be taken over,
// which re-runs its last node on main as well: the exactly-once checks
// then say nothing about the code under test.
func (c *cluster) noteRefusedConnections() {
	if !c.t.Failed() {
		return
	}
	logs, _ := filepath.Glob(filepath.Join(c.dir, "*.log"))
	n := 0
	for _, f := range logs {
		b, err := os.ReadFile(f)
		if err == nil {
			n += strings.Count(string(b), refusedConnections)
		}
	}
	if n > 0 {
		c.t.Logf("PostgreSQL refused the replicas a connection %d times (%s, too many clients): the failures above may be the database server's connection limit, not the code; run the scenario alone on the server", n, refusedConnections)
	}
}

func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// startRedis starts (or restarts, on the same port) the harness's Redis.
func (c *cluster) startRedis() {
	port := freePort(c.t)
	if c.redis != "" {
		fmt.Sscanf(c.redis, "redis://127.0.0.1:%d", &port)
	}
	cmd := exec.Command("redis-server", "--port", fmt.Sprint(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no")
	if err := cmd.Start(); err != nil {
		c.t.Fatal(err)
	}
	c.redisP = cmd
	c.redis = fmt.Sprintf("redis://127.0.0.1:%d", port)
	for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		if conn, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port)); err == nil {
			conn.Close()
			return
		}
	}
	c.t.Fatal("redis-server did not start")
}

func (c *cluster) stopRedis() {
	if c.redisP != nil {
		_ = c.redisP.Process.Kill()
		_ = c.redisP.Wait()
		c.redisP = nil
	}
}

var urlRE = regexp.MustCompile(`msg="trellis serve listening" url=(http://[^ ]+)`)

// start starts replica name on the cluster's database and waits for its
// URL.
func (c *cluster) start(name string) string {
	c.t.Helper()
	return c.startWith(name, c.dbURL)
}

// startWith starts replica name on database.
func (c *cluster) startWith(name, database string) string {
	c.t.Helper()
	logf, err := os.OpenFile(filepath.Join(c.dir, name+".log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		c.t.Fatal(err)
	}
	cmd := exec.Command(c.bin, "--database", database, "--redis", c.redis, "--name", name, "--dir", c.dir)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		c.t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		c.t.Fatal(err)
	}
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			fmt.Fprintln(logf, line)
			if m := urlRE.FindStringSubmatch(line); m != nil {
				select {
				case found <- m[1]:
				default:
				}
			}
		}
		logf.Close()
	}()
	select {
	case url := <-found:
		c.mu.Lock()
		c.procs[name], c.urls[name] = cmd, url
		c.mu.Unlock()
		return url
	case <-time.After(60 * time.Second):
		_ = cmd.Process.Kill()
		c.t.Fatalf("replica %s did not start; see %s", name, filepath.Join(c.dir, name+".log"))
		return ""
	}
}

// signal sends sig to replica name and waits for it to exit.
func (c *cluster) signal(name string, sig syscall.Signal) {
	c.mu.Lock()
	cmd := c.procs[name]
	delete(c.procs, name)
	delete(c.urls, name)
	c.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Signal(sig)
	_ = cmd.Wait()
}

func (c *cluster) stopAll() {
	c.mu.Lock()
	names := make([]string, 0, len(c.procs))
	for n := range c.procs {
		names = append(names, n)
	}
	c.mu.Unlock()
	for _, n := range names {
		c.signal(n, syscall.SIGKILL)
	}
	c.stopRedis()
}

func (c *cluster) url(name string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.urls[name]
}

func (c *cluster) release() {
	if err := os.WriteFile(filepath.Join(c.dir, "barrier"), nil, 0o644); err != nil {
		c.t.Fatal(err)
	}
}

// execCounts counts the recorded executions (phase "start") by thread and
// node, and the first end of each before cutoff.
func (c *cluster) execCounts(node string) (starts map[string]int, endedBefore func(thread string, cutoff time.Time) bool) {
	c.t.Helper()
	rows, err := c.conn.Query(context.Background(), `SELECT thread_id, phase, at FROM `+c.schema+`.fault_exec WHERE node = $1`, node)
	if err != nil {
		c.t.Fatal(err)
	}
	defer rows.Close()
	starts = map[string]int{}
	firstEnd := map[string]time.Time{}
	for rows.Next() {
		var th, phase string
		var at time.Time
		if err := rows.Scan(&th, &phase, &at); err != nil {
			c.t.Fatal(err)
		}
		switch phase {
		case "start":
			starts[th]++
		case "end":
			if f, ok := firstEnd[th]; !ok || at.Before(f) {
				firstEnd[th] = at
			}
		}
	}
	return starts, func(th string, cutoff time.Time) bool {
		f, ok := firstEnd[th]
		return ok && f.Before(cutoff)
	}
}
