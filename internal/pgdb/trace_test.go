package pgdb

import (
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
)

// A statement's written rows come from its tag, and a data-modifying WITH
// query under a statement whose tag cannot tell counts as a write; the
// words in comments, literals and names do not make one.
func TestChanged(t *testing.T) {
	const completeJobs = `WITH input AS (SELECT unnest($1::bigint[]) AS id),
	  locked AS (SELECT j.id FROM queue_job j JOIN input USING (id) FOR UPDATE),
	  done AS (UPDATE queue_job SET state = 'completed' FROM locked WHERE queue_job.id = locked.id RETURNING queue_job.*)
	SELECT * FROM queue_job WHERE id IN (SELECT id FROM input) AND id NOT IN (SELECT id FROM done)
	UNION ALL SELECT * FROM done`
	for _, c := range []struct {
		name, sql, tag string
		want           int64
	}{
		{"insert", `INSERT INTO t VALUES (1), (2)`, "INSERT 0 2", 2},
		{"update none", `UPDATE t SET v = 1 WHERE false`, "UPDATE 0", 0},
		{"merge", `MERGE INTO t USING s ON t.id = s.id WHEN MATCHED THEN DELETE`, "MERGE 3", 3},
		{"select", `SELECT * FROM t`, "SELECT 5", 0},
		{"job completion", completeJobs, "SELECT 1", 1},
		{"outer select of no row", `WITH d AS (DELETE FROM t RETURNING id) SELECT 1 WHERE false`, "SELECT 0", 1},
		{"insert in with", `with x as materialized ( insert into t values (1) returning id ) select id from x`, "SELECT 1", 1},
		{"merge in with", "WITH m AS (\n\tMERGE INTO t USING s ON true WHEN MATCHED THEN DELETE RETURNING t.id) SELECT count(*) FROM m", "SELECT 1", 1},
		{"outer insert of no row", `WITH u AS (UPDATE t SET v = 2 RETURNING id) INSERT INTO log SELECT id FROM u WHERE false`, "INSERT 0 0", 1},
		{"outer insert counts more", `WITH u AS (UPDATE t SET v = 2 RETURNING id) INSERT INTO log SELECT id FROM u`, "INSERT 0 4", 4},
		{"failed", completeJobs, "", 0},
		{"read-only with", `WITH r AS (SELECT id FROM t) SELECT * FROM r`, "SELECT 2", 0},
		{"words in a literal", `WITH r AS (SELECT '( update t set' AS s) SELECT * FROM r`, "SELECT 1", 0},
		{"words in a comment", "WITH r AS (SELECT 1 -- ( delete from t\n) SELECT * FROM r /* (insert into t /* nested */ (update t */", "SELECT 1", 0},
		{"words in a dollar quote", `WITH r AS (SELECT $q$( delete from t$q$ AS s, $1 AS p) SELECT * FROM r`, "SELECT 1", 0},
		{"a quoted name", `WITH r AS (SELECT "( update t" FROM t) SELECT * FROM r`, "SELECT 1", 0},
		{"a column named update", `WITH r AS (SELECT (update) FROM t) SELECT * FROM r`, "SELECT 1", 0},
		{"not a with query", `SELECT * FROM f((SELECT 1))`, "SELECT 1", 0},
		{"unterminated literal", `WITH r AS (SELECT 'x`, "SELECT 1", 0},
	} {
		if got := changed(c.sql, pgconn.NewCommandTag(c.tag)); got != c.want {
			t.Errorf("%s: changed = %d, want %d", c.name, got, c.want)
		}
	}
}
