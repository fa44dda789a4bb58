package main

import (
	"context"
	"testing"

	"go.uber.org/goleak"
)

func TestQuickstartRuns(t *testing.T) {
	defer goleak.VerifyNone(t)
	g, err := build()
	if err != nil {
		t.Fatal(err)
	}
	res, err := g.Invoke(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	// 2 rounds × (plan, research, write) = 6 steps; round 1 has 3 topics, round 2 one.
	if res.Steps != 6 || Round.Get(res.State) != 2 || len(Notes.Get(res.State)) != 4 {
		t.Fatalf("steps %d, state %v", res.Steps, res.State)
	}
	if err := run(context.Background()); err != nil {
		t.Fatal(err)
	}
}
