package bench

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/trellis-agents/trellis/checkpoint"
)

// BenchmarkDurableStepFloor is the floor under
// BenchmarkDurableStepWrite/sqlite/append: the same row (the writes
// table's columns, key and foreign key, the same value) as one INSERT in
// BEGIN IMMEDIATE … COMMIT on a bare modernc connection with the saver's
// pragmas, statements prepared once; no group commit, no checks, no
// background checkpointer. frames/op is the bytes the process wrote
// (/proc/self/io wchar) over a WAL frame's (a 4 KiB page and its 24-byte
// header): the pages a commit writes, whose balancing the key order
// decides.
func BenchmarkDurableStepFloor(b *testing.B) {
	path := filepath.Join(b.TempDir(), "floor.db")
	q := url.Values{}
	for _, p := range []string{"busy_timeout(5000)", "foreign_keys(1)", "journal_mode(WAL)", "synchronous(NORMAL)", "wal_autocheckpoint(4000)", "temp_store(MEMORY)"} {
		q.Add("_pragma", p)
	}
	u := url.URL{Scheme: "file", Path: path, RawQuery: q.Encode()}
	db, err := sql.Open("sqlite", u.String())
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	ctx := context.Background()
	for _, s := range []string{
		`CREATE TABLE checkpoints (thread TEXT NOT NULL, ns TEXT NOT NULL, id TEXT NOT NULL, x BLOB, PRIMARY KEY (thread, ns, id)) WITHOUT ROWID`,
		`CREATE TABLE writes (thread TEXT NOT NULL, ns TEXT NOT NULL, checkpoint_id TEXT NOT NULL, task_id TEXT NOT NULL, idx INTEGER NOT NULL,
			key TEXT NOT NULL, value BLOB, sum INTEGER, PRIMARY KEY (thread, ns, checkpoint_id, task_id, idx),
			FOREIGN KEY (thread, ns, checkpoint_id) REFERENCES checkpoints (thread, ns, id) ON DELETE CASCADE) WITHOUT ROWID`,
	} {
		if _, err := db.Exec(s); err != nil {
			b.Fatal(err)
		}
	}
	cpID := checkpoint.NewID()
	if _, err := db.Exec(`INSERT INTO checkpoints VALUES ('bench', '', ?, x'00')`, cpID); err != nil {
		b.Fatal(err)
	}
	conn, err := db.Conn(ctx)
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close()
	var st [3]*sql.Stmt
	for i, s := range []string{`BEGIN IMMEDIATE`, `INSERT INTO writes (thread, ns, checkpoint_id, task_id, idx, key, value, sum) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`, `COMMIT`} {
		if st[i], err = conn.PrepareContext(ctx, s); err != nil {
			b.Fatal(err)
		}
		defer st[i].Close()
	}
	b.ReportAllocs()
	cpu, wchar := cpuNanos(), writtenBytes()
	task, k := 0, 0
	for b.Loop() {
		if k%10 == 0 {
			task++
			k = 0
		}
		v, _ := json.Marshal(map[string]any{"name": "piece", "call": k, "value": fmt.Sprintf("piece %d of task %d", k, task)})
		if _, err := st[0].Exec(); err != nil {
			b.Fatal(err)
		}
		if _, err := st[1].Exec("bench", "", cpID, fmt.Sprint("task-", task), k, checkpoint.WriteStep, v, int64(12345)); err != nil {
			b.Fatal(err)
		}
		if _, err := st[2].Exec(); err != nil {
			b.Fatal(err)
		}
		k++
	}
	b.ReportMetric(float64(cpuNanos()-cpu)/float64(b.N), "cpu-ns/op")
	b.ReportMetric(float64(writtenBytes()-wchar)/float64(b.N)/(4096+24), "frames/op")
}

// writtenBytes is the bytes the process has written so far (wchar of
// /proc/self/io), 0 where there is no such file.
func writtenBytes() int64 {
	data, err := os.ReadFile("/proc/self/io")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "wchar: "); ok {
			n, _ := strconv.ParseInt(v, 10, 64)
			return n
		}
	}
	return 0
}
