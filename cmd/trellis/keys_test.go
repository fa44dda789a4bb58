package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// keys create prints a key once; list shows its ID, tenant and prefix
// (never the key); revoke marks it revoked. The commands use serve's
// --database, or the config file's database.
func TestKeysCommands(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "t.db")
	if _, err := trellis(t, "", "keys", "create", "--database", db); err == nil || !strings.Contains(err.Error(), "--tenant is required") {
		t.Fatalf("create without --tenant: %v", err)
	}
	out, err := trellis(t, "", "keys", "create", "--tenant", "acme", "--name", "ci", "--database", db)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	key := regexp.MustCompile(`trellis_[A-Za-z0-9_-]{43}`).FindString(out)
	id := regexp.MustCompile(`created key ([0-9a-f]{16})`).FindStringSubmatch(out)
	if key == "" || id == nil {
		t.Fatalf("create printed no key or ID:\n%s", out)
	}

	// The config file's database is used when --database is not given.
	cfg := filepath.Join(dir, "trellis.yaml")
	if err := os.WriteFile(cfg, []byte("database: "+db+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err = trellis(t, "", "keys", "list", "--config", cfg)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if !strings.Contains(out, id[1]) || !strings.Contains(out, "acme") || !strings.Contains(out, " ci ") || !strings.Contains(out, key[:14]+"...") || strings.Contains(out, key) {
		t.Errorf("list shows the ID, tenant, name and prefix but not the key:\n%s", out)
	}
	out, err = trellis(t, "", "keys", "revoke", id[1], "--database", db)
	if err != nil || !strings.Contains(out, "revoked key "+id[1]) {
		t.Fatalf("revoke: %v\n%s", err, out)
	}
	out, _ = trellis(t, "", "keys", "list", "--database", db, "--tenant", "acme")
	if lines := strings.Split(strings.TrimSpace(out), "\n"); len(lines) != 2 || strings.HasSuffix(strings.TrimSpace(lines[1]), "-") {
		t.Errorf("list after revoke shows no revocation time:\n%s", out)
	}
	if _, err := trellis(t, "", "keys", "revoke", "nosuchkey", "--database", db); err == nil || !strings.Contains(err.Error(), "not found") {
		t.Errorf("revoke of an unknown key: %v", err)
	}
}

// serve refuses a public address while no key exists, in one line naming
// --insecure-no-auth (it stops before listening).
func TestServeRefusesPublicAddressWithoutKeys(t *testing.T) {
	t.Setenv("ANTHROPIC_API_KEY", "")
	_, err := trellis(t, "", "serve", "--addr", "0.0.0.0:0", "--db", filepath.Join(t.TempDir(), "t.db"))
	if err == nil || !strings.Contains(err.Error(), "--insecure-no-auth") || strings.Contains(err.Error(), "\n") {
		t.Fatalf("err = %v; want one line naming --insecure-no-auth", err)
	}
}
