// Package pgdbtest gives the tests of Trellis's PostgreSQL backends a
// schema of their own. It is shared by several packages' tests, so it
// cannot live in a _test file.
package pgdbtest

import (
	"context"
	"math/rand/v2"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/trellis-agents/trellis/internal/pgdb"
	"github.com/trellis-agents/trellis/internal/testenv"
)

// Schema returns the test database's connection string and the name of a
// new, empty schema made for t, which is dropped with everything in it when
// t ends (pools using it must be closed by cleanups registered after this
// call, so that they run first). Without a configured database the test is
// skipped, or fails under TRELLIS_REQUIRE_SERVICES=1 (see package testenv).
func Schema(t testing.TB) (dsn, schema string) {
	t.Helper()
	dsn = testenv.PostgresDSN(t)
	schema = testenv.Name(t, strconv.FormatUint(rand.Uint64(), 36), pgdb.MaxIdentifierLen)
	exec(t, dsn, "CREATE SCHEMA "+pgx.Identifier{schema}.Sanitize(), true)
	t.Cleanup(func() {
		exec(t, dsn, "DROP SCHEMA IF EXISTS "+pgx.Identifier{schema}.Sanitize()+" CASCADE", false)
	})
	return dsn, schema
}

// exec runs one statement on a connection of its own. When first (the
// statement that sets the test up), a server that does not answer is
// reported through testenv.Unreachable and a failing statement stops the
// test; otherwise failures are only reported.
func exec(t testing.TB, dsn, sql string, first bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		if first {
			testenv.Unreachable(t, "PostgreSQL", err)
		}
		t.Errorf("connect to PostgreSQL: %v", err)
		return
	}
	defer func() { _ = conn.Close(context.Background()) }()
	if _, err := conn.Exec(ctx, sql); err != nil {
		if first {
			t.Fatalf("%s: %v", sql, err)
		}
		t.Errorf("%s: %v", sql, err)
	}
}
