// Package txhook lets a caller add statements of its own to the write
// transaction of a backend it calls, so that both commit together: the run
// service puts a run's events and its lease check into the transaction in
// which the checkpoint saver stores the step (one write per step instead
// of two or three).
//
// The caller attaches a Func to the context of its call; a backend that
// supports hooks calls Run with its open transaction just before it
// commits, and fails the whole transaction when the Func fails. The
// transaction is the backend's own handle: a *sql.Tx for the SQLite
// backends, a pgx.Tx for the PostgreSQL ones. Only the backends of one
// database may be joined this way, which the caller arranges.
package txhook

import (
	"context"
	"reflect"
)

// Func adds its statements to tx, the backend's open write transaction.
type Func func(ctx context.Context, tx any) error

type key struct{}

// With returns ctx carrying fn for the next write transaction of a call
// made with it.
func With(ctx context.Context, fn Func) context.Context {
	return context.WithValue(ctx, key{}, fn)
}

// Run calls the Func ctx carries, if any, with tx. A backend calls it in
// each write transaction a call makes, before the commit.
func Run(ctx context.Context, tx any) error {
	if fn, _ := ctx.Value(key{}).(Func); fn != nil {
		return fn(ctx, tx)
	}
	return nil
}

// Has reports whether ctx carries a hook, so a store that can write without
// an explicit transaction (one statement, or a batch in an implicit one)
// opens one only when a hook must join it.
func Has(ctx context.Context) bool {
	fn, _ := ctx.Value(key{}).(Func)
	return fn != nil
}

type endKey struct{}

type endedKey struct{}

// WithEnd returns ctx carrying fn for the transaction that records the end
// of the work a call does (a run's finish), not for every write the call
// makes: the run queue completes its job there, so a run's end and its
// job's completion are one commit. A ctx that already carries end hooks
// keeps them: the transaction runs them first, then fn, and the first
// error ends the chain.
func WithEnd(ctx context.Context, fn Func) context.Context {
	if prev, _ := ctx.Value(endKey{}).(Func); prev != nil {
		next := fn
		fn = func(ctx context.Context, tx any) error {
			if err := prev(ctx, tx); err != nil {
				return err
			}
			return next(ctx, tx)
		}
	}
	return context.WithValue(ctx, endKey{}, fn)
}

// WithoutEnd returns ctx carrying no end hooks. A caller that adds
// statements of its own to the transaction after the call that records
// the end passes it to that call, and then runs ctx's end hooks itself
// (RunEndOf) once its statements are in: the hooks then still run last
// before the commit, so none of them marks its work done while a
// statement that can fail is still to come.
func WithoutEnd(ctx context.Context) context.Context {
	return context.WithValue(ctx, endKey{}, Func(nil))
}

// RunEnd calls the Funcs WithEnd put in ctx, if any, with tx. A backend
// calls it in the transaction that records the end of a run, before the
// commit.
func RunEnd(ctx context.Context, tx any) error {
	return RunEndOf(ctx, tx, nil)
}

// RunEndOf is RunEnd telling the hooks what the transaction ended: ended
// (a backend passes the finished db.Run) is what Ended returns on the
// context the hooks get.
func RunEndOf(ctx context.Context, tx any, ended any) error {
	fn, _ := ctx.Value(endKey{}).(Func)
	if fn == nil {
		return nil
	}
	if ended != nil {
		ctx = context.WithValue(ctx, endedKey{}, ended)
	}
	return fn(ctx, tx)
}

// Ended is what the transaction an end hook runs in ended, as its backend
// passed it to RunEndOf; nil when it said nothing.
func Ended(ctx context.Context) any {
	return ctx.Value(endedKey{})
}

type fencedKey struct{}

// fenced is the lease a transaction already checked or wrote.
type fenced struct {
	tx            any
	tenant, runID string
	token         int64
}

// WithFenced returns ctx saying that tx, an open write transaction, has
// already checked (or itself written) the lease of tenant's run runID
// with token. Nothing but tx can change that lease before tx ends (the
// check locks the lease's row, or the database has one writer), so a
// backend asked to check the same lease again in the same transaction may
// skip the read (see Fenced).
func WithFenced(ctx context.Context, tx any, tenant, runID string, token int64) context.Context {
	return context.WithValue(ctx, fencedKey{}, fenced{tx, tenant, runID, token})
}

// Fenced reports whether ctx says (WithFenced) that tx already checked
// the lease of tenant's run runID with token. A tx of a type that cannot
// be compared is never reported fenced.
func Fenced(ctx context.Context, tx any, tenant, runID string, token int64) bool {
	f, ok := ctx.Value(fencedKey{}).(fenced)
	if !ok || tx == nil || f.tenant != tenant || f.runID != runID || f.token != token {
		return false
	}
	if t := reflect.TypeOf(tx); t != reflect.TypeOf(f.tx) || !t.Comparable() {
		return false
	}
	return f.tx == tx
}
