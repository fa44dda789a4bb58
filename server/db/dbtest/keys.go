package dbtest

import (
	"crypto/rand"
	"slices"
	"testing"
	"time"

	"github.com/trellis-agents/trellis/server/db"
)

// testKeys: keys are created with a unique ID and hash, found by hash
// (revoked or not), listed per tenant and across tenants, touched,
// revoked once (a second revocation keeps the first time) and counted
// while active.
func testKeys(t *testing.T, d db.DB) {
	a, b := tenant(t, "a"), tenant(t, "b")
	hash := func() []byte { h := make([]byte, 32); _, _ = rand.Read(h); return h }
	id := func(label string) string { return tenant(t, label) } // unique per run
	before, err := d.CountActiveKeys(bg())
	ok(t, "CountActiveKeys", err)

	ha, hb := hash(), hash()
	from := time.Now()
	ka, err := d.CreateKey(bg(), db.Key{ID: id("ka"), Tenant: a, Name: "ci", Prefix: "tk_abc"}, ha)
	ok(t, "CreateKey a", err)
	within(t, "CreatedAt", ka.CreatedAt, from, time.Now())
	if !ka.Active() || !ka.LastUsedAt.IsZero() {
		t.Errorf("new key %+v: want active and never used", ka)
	}
	kb, err := d.CreateKey(bg(), db.Key{ID: id("kb"), Tenant: b, Prefix: "tk_def"}, hb)
	ok(t, "CreateKey b", err)

	_, err = d.CreateKey(bg(), db.Key{ID: ka.ID, Tenant: a, Prefix: "tk_x"}, hash())
	isErr(t, "CreateKey with a taken ID", err, db.ErrConflict)
	_, err = d.CreateKey(bg(), db.Key{ID: id("dup"), Tenant: a, Prefix: "tk_x"}, ha)
	isErr(t, "CreateKey with a taken hash", err, db.ErrConflict)
	for _, bad := range []db.Key{{Tenant: a, Prefix: "p"}, {ID: id("x"), Prefix: "p"}, {ID: id("y"), Tenant: a}} {
		_, err = d.CreateKey(bg(), bad, hash())
		isErr(t, "CreateKey with an empty field", err, db.ErrInvalid)
	}
	_, err = d.CreateKey(bg(), db.Key{ID: id("z"), Tenant: a, Prefix: "p"}, nil)
	isErr(t, "CreateKey without a hash", err, db.ErrInvalid)

	got, err := d.KeyByHash(bg(), ha)
	ok(t, "KeyByHash", err)
	if got.ID != ka.ID || got.Tenant != a || got.Name != "ci" || got.Prefix != "tk_abc" || !got.CreatedAt.Equal(ka.CreatedAt) {
		t.Errorf("KeyByHash = %+v, want %+v", got, ka)
	}
	_, err = d.KeyByHash(bg(), hash())
	isErr(t, "KeyByHash of an unknown hash", err, db.ErrNotFound)

	n, err := d.CountActiveKeys(bg())
	ok(t, "CountActiveKeys", err)
	if n != before+2 {
		t.Errorf("CountActiveKeys = %d, want %d", n, before+2)
	}

	la, err := d.ListKeys(bg(), a)
	ok(t, "ListKeys a", err)
	if len(la) != 1 || la[0].ID != ka.ID {
		t.Errorf("ListKeys(a) = %+v, want only %s", la, ka.ID)
	}
	all, err := d.ListKeys(bg(), "")
	ok(t, "ListKeys all", err)
	ids := []string{}
	for _, k := range all {
		ids = append(ids, k.ID)
	}
	if !slices.Contains(ids, ka.ID) || !slices.Contains(ids, kb.ID) {
		t.Errorf("ListKeys(\"\") = %v, want %s and %s among them", ids, ka.ID, kb.ID)
	}

	used := time.Now().UTC().Truncate(time.Microsecond)
	ok(t, "TouchKey", d.TouchKey(bg(), ka.ID, used))
	got, err = d.KeyByHash(bg(), ha)
	ok(t, "KeyByHash", err)
	if !got.LastUsedAt.Equal(used) {
		t.Errorf("LastUsedAt = %v, want %v", got.LastUsedAt, used)
	}
	isErr(t, "TouchKey of an unknown key", d.TouchKey(bg(), id("none"), used), db.ErrNotFound)

	at := time.Now().UTC().Truncate(time.Microsecond)
	rk, err := d.RevokeKey(bg(), ka.ID, at)
	ok(t, "RevokeKey", err)
	if rk.Active() || !rk.RevokedAt.Equal(at) || rk.Tenant != a {
		t.Errorf("RevokeKey = %+v, want revoked at %v", rk, at)
	}
	rk, err = d.RevokeKey(bg(), ka.ID, at.Add(time.Hour))
	ok(t, "RevokeKey again", err)
	if !rk.RevokedAt.Equal(at) {
		t.Errorf("second RevokeKey moved RevokedAt to %v, want %v", rk.RevokedAt, at)
	}
	_, err = d.RevokeKey(bg(), id("none"), at)
	isErr(t, "RevokeKey of an unknown key", err, db.ErrNotFound)
	got, err = d.KeyByHash(bg(), ha)
	ok(t, "KeyByHash of a revoked key", err)
	if got.Active() {
		t.Errorf("KeyByHash after revoke = %+v, want revoked", got)
	}
	n, err = d.CountActiveKeys(bg())
	ok(t, "CountActiveKeys", err)
	if n != before+1 {
		t.Errorf("CountActiveKeys after a revoke = %d, want %d", n, before+1)
	}
	_, err = d.RevokeKey(bg(), kb.ID, at)
	ok(t, "RevokeKey b", err)
}
