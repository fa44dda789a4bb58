package server

import (
	"context"
	"sync"
	"testing"
	"time"
)

// Every migration set of a PostgreSQL schema (the service's tables,
// checkpoints, store and River's) runs under one advisory lock: while
// another session holds it, Migrate waits (seen in pg_locks, not timed),
// and once it is released Migrate finishes; replicas migrating at once
// all succeed.
func TestMigrationsShareOneLock(t *testing.T) {
	url, schema, conn := pgSchema(t, "miglock")
	ctx := context.Background()
	const key = `hashtextextended('trellis/migrate/' || $1::text, 0)`
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock(`+key+`)`, schema); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- Migrate(ctx, url, quiet()) }()
	// Wait until another backend waits on that lock.
	deadline := time.Now().Add(30 * time.Second)
	for {
		var waiting int
		err := conn.QueryRow(ctx, `SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted
			AND pid <> pg_backend_pid()`).Scan(&waiting)
		if err != nil {
			t.Fatal(err)
		}
		if waiting > 0 {
			break
		}
		select {
		case err := <-done:
			t.Fatalf("Migrate finished (%v) while the migration lock was held by another session", err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("Migrate never waited on the migration lock")
		}
		time.Sleep(10 * time.Millisecond)
	}
	var tables int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM information_schema.tables WHERE table_schema = $1`, schema).Scan(&tables); err != nil {
		t.Fatal(err)
	}
	if tables != 0 {
		t.Errorf("%d tables were created before the lock was granted", tables)
	}
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_unlock(`+key+`)`, schema); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("Migrate after the lock was released: %v", err)
	}
	// Replicas starting together on a fresh schema all succeed.
	url2, _, _ := pgSchema(t, "miglock2")
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i := range errs {
		wg.Go(func() { errs[i] = Migrate(ctx, url2, quiet()) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("migrate %d: %v", i, err)
		}
	}
}
