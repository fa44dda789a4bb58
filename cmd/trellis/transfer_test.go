package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// trellis transfer copies a migrated file to another, counts without
// writing under --dry-run, copies nothing the second time, and refuses a
// missing source and a missing flag.
func TestTransfer(t *testing.T) {
	dir := t.TempDir()
	src, dst := filepath.Join(dir, "src.db"), filepath.Join(dir, "dst.db")
	if _, err := trellis(t, "", "keys", "create", "--tenant", "acme", "--database", src); err != nil {
		t.Fatal(err)
	}
	out, err := trellis(t, "", "transfer", "--from", src, "--to", dst, "--dry-run")
	if err != nil || !strings.Contains(out, "dry run: nothing was written") || !strings.Contains(out, "trellis_api_keys             1 rows (dry run") {
		t.Fatalf("dry run: %q %v", out, err)
	}
	out, err = trellis(t, "", "transfer", "--from", src, "--to", "sqlite://"+dst)
	if err != nil || !strings.Contains(out, "trellis_api_keys             1 rows: 1 copied") || !strings.Contains(out, "transferred 1 records") {
		t.Fatalf("transfer: %q %v", out, err)
	}
	out, err = trellis(t, "", "keys", "list", "--database", dst)
	if err != nil || !strings.Contains(out, "acme") {
		t.Fatalf("keys on the target: %q %v", out, err)
	}
	out, err = trellis(t, "", "transfer", "--from", src, "--to", dst)
	if err != nil || !strings.Contains(out, "nothing was copied") {
		t.Fatalf("second transfer: %q %v", out, err)
	}
	if out, err := trellis(t, "", "transfer", "--from", filepath.Join(dir, "missing.db"), "--to", dst); err == nil || !strings.Contains(out+err.Error(), "missing.db") {
		t.Errorf("a missing source: %q %v", out, err)
	}
	if _, err := trellis(t, "", "transfer", "--to", dst); err == nil || !strings.Contains(err.Error(), "--from") {
		t.Errorf("no --from: %v", err)
	}
}
