package planner

import (
	"context"
	"testing"
)

// Agencies keeps at most Max scopes, dropping the least recently used, and
// Delete (the app's DeleteScope) drops a scope's agency.
func TestAgenciesAreBounded(t *testing.T) {
	as := &Agencies{Max: 2}
	a := as.For("a")
	as.For("b")
	if as.For("a") != a {
		t.Fatal("a scope's second use must give the same agency")
	}
	as.For("c") // drops b, the least recently used
	if as.Len() != 2 {
		t.Fatalf("len %d; want 2", as.Len())
	}
	if as.For("a") != a {
		t.Error("a was used last but one and must be kept")
	}
	as.Delete("a")
	as.Delete("nothing") // not an error
	if as.Len() != 1 || as.For("a") == a {
		t.Errorf("after Delete: len %d, same agency %v; want a fresh one", as.Len(), as.For("a") == a)
	}
}

func TestAppDeleteScopeDropsTheAgency(t *testing.T) {
	app, err := New(context.Background(), Config{Model: Script()})
	if err != nil {
		t.Fatal(err)
	}
	defer app.Close()
	if app.DeleteScope == nil {
		t.Fatal("the planner app keeps an agency per scope and must offer DeleteScope")
	}
	if err := app.DeleteScope(context.Background(), "t1"); err != nil {
		t.Errorf("deleting a scope without data: %v", err)
	}
	withOwn, err := New(context.Background(), Config{Model: Script(), Agency: NewAgency()})
	if err != nil {
		t.Fatal(err)
	}
	defer withOwn.Close()
	if withOwn.DeleteScope != nil {
		t.Error("an app over the caller's agency keeps nothing per scope")
	}
}
