package graph

import (
	"context"
	"errors"
	"fmt"
)

// AddWrites adds writes to the output of the node running with ctx, as if
// the node had returned them ahead of its own: the node's writes are those
// it added, in order, then those of the Update (or Command) it returns.
//
// It writes without converting an Update to Output: returning
// graph.Writes(k.Set(v)) costs one allocation in the node (the Update's
// conversion to Output), where
//
//	if err := graph.AddWrites(ctx, k.Set(v)); err != nil {
//		return nil, err
//	}
//	return nil, nil
//
// costs none beyond the task's copy of its writes, which for writes of
// small values comes from the same shared slabs as Writes' (see Writes).
//
// Added writes are the node's like returned ones in every respect: they
// go through the keys' reducers with the step's other writes, are checked
// against the schema, saved as pending writes, shown in events and cached.
// They are dropped with the rest of its output when the node fails,
// interrupts or is retried (each attempt starts with none). Code that
// inspects a node's returned Output (a wrapper around the node's
// function) does not see them.
//
// ctx must be the node's context or derive from it, and the node must not
// have returned: AddWrites from outside a node, from a parallel step started
// with Go, or after the node returned is an error. AddWrites is not safe for
// concurrent use by goroutines of one node.
func AddWrites(ctx context.Context, ws ...Write) error {
	t, ok := ctx.(*task)
	if !ok {
		t = taskFrom(ctx)
	}
	if t == nil || t.node.idx < 0 {
		return errors.New("graph: AddWrites needs the context of a running node (not of a parallel step started with Go, nor from outside a graph)")
	}
	if t.ran {
		return fmt.Errorf("graph: node %q added writes after it returned; add them while it runs", t.node.name)
	}
	for _, w := range ws {
		if w.key == nil {
			return errors.New("graph: AddWrites got a zero graph.Write; build writes with Key.Set, Append, Remove or Overwrite")
		}
	}
	if len(t.writes) == 0 && len(ws) > 0 {
		t.writes = copyWrites(ws)
		return nil
	}
	t.writes = append(t.writes, ws...)
	return nil
}

// joinWrites puts a node's added writes ahead of those it returned.
func joinWrites(added, returned Update) Update {
	switch {
	case len(added) == 0:
		return returned
	case len(returned) == 0:
		return added
	}
	return append(added[:len(added):len(added)], returned...)
}
