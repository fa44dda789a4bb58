package openaiapi

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/trellis-agents/trellis/checkpoint"
	"github.com/trellis-agents/trellis/server/db"
	"github.com/trellis-agents/trellis/server/internal/convo"
	"github.com/trellis-agents/trellis/server/runs"
)

// Thread metadata the wire keeps: the fingerprints of the histories the
// thread answered (oldest first), and the checkpoint each ended at, for
// forks.
const (
	mdTurns = convo.MetadataTurns
	// maxProbes bounds the searches for an earlier common message.
	maxProbes = 32
)

// turn is one message of the conversation as the thread sees it.
type turn = convo.Turn

func fingerprints(msgs []turn) []string { return convo.Fingerprints(msgs) }

// target is where a request's turn goes.
type target struct {
	ThreadID string
	// Thread is the thread's row; zero when it is new.
	Thread db.Thread
	Exists bool
	// ForkOf and ForkCheckpoint: the thread is a new copy of ForkOf,
	// run from ForkCheckpoint (the last common message).
	ForkOf, ForkCheckpoint string
	// Unseen are the messages the thread has not seen, the last one
	// included.
	Unseen []turn
	// Turns are the thread's fingerprints to extend.
	Turns []string
	At    map[string]any
}

// turnsOf reads a thread's fingerprints.
func turnsOf(t db.Thread) ([]string, map[string]any) { return convo.Recorded(t) }

// resolve finds the thread of a conversation. With an explicit thread ID
// the thread is continued (created when absent) and only the messages
// after the last history it answered are appended (just the last message
// when it answered none). Without one, the history (every message but the
// last) is looked up by fingerprint: a thread whose latest answer ended
// it is continued; a thread that answered an earlier prefix of it is
// forked there, at the last common message; no match starts a new thread
// with the whole conversation.
func (h *Handler) resolve(ctx context.Context, tenant, explicit string, msgs []turn) (target, error) {
	fps := fingerprints(msgs)
	if explicit != "" {
		t, err := h.DB.GetThread(ctx, tenant, explicit)
		if errors.Is(err, db.ErrNotFound) {
			return target{ThreadID: explicit, Unseen: msgs, At: map[string]any{}}, nil
		}
		if err != nil {
			return target{}, err
		}
		turns, at := turnsOf(t)
		unseen := convo.Unseen(turns, true, msgs)
		if len(unseen) == 0 {
			unseen = msgs[len(msgs)-1:] // the last message is always the new one here
		}
		return target{ThreadID: explicit, Thread: t, Exists: true, Unseen: unseen, Turns: turns, At: at}, nil
	}
	probes := 0
	for i := len(msgs) - 2; i >= 0 && probes < maxProbes; i-- {
		if msgs[i].Role != "assistant" {
			continue // a turn ends with the assistant's answer
		}
		probes++
		t, ok, err := h.findTurn(ctx, tenant, fps[i])
		if err != nil {
			return target{}, err
		}
		if !ok {
			continue
		}
		turns, at := turnsOf(t)
		k := slices.Index(turns, fps[i])
		if k == len(turns)-1 {
			return target{ThreadID: t.ID, Thread: t, Exists: true, Unseen: msgs[i+1:], Turns: turns, At: at}, nil
		}
		cp, _ := at[fps[i]].(string)
		if k < 0 || cp == "" {
			continue
		}
		kept := map[string]any{}
		for _, fp := range turns[:k+1] {
			if v, ok := at[fp]; ok {
				kept[fp] = v
			}
		}
		return target{ThreadID: checkpoint.NewID(), ForkOf: t.ID, ForkCheckpoint: cp, Unseen: msgs[i+1:], Turns: slices.Clone(turns[:k+1]), At: kept}, nil
	}
	return target{ThreadID: checkpoint.NewID(), Unseen: msgs, At: map[string]any{}}, nil
}

// findTurn finds the thread that answered the history fp ends: first the
// thread this process last recorded it on (checked, as another process
// may have moved on), else by a metadata search, which on SQLite reads
// every thread of the tenant.
func (h *Handler) findTurn(ctx context.Context, tenant, fp string) (db.Thread, bool, error) {
	if id, ok := h.recent.get(tenant + "/" + fp); ok {
		t, err := h.DB.GetThread(ctx, tenant, id)
		if err == nil {
			if turns, _ := turnsOf(t); slices.Contains(turns, fp) {
				return t, true, nil
			}
		} else if !errors.Is(err, db.ErrNotFound) {
			return db.Thread{}, false, err
		}
	}
	found, err := h.DB.SearchThreads(ctx, tenant, db.ThreadQuery{Query: db.Query{
		Metadata: db.Metadata{mdTurns: []any{fp}}, Limit: 1, SortBy: "updated_at", SortOrder: "desc",
	}})
	if err != nil || len(found) == 0 {
		return db.Thread{}, false, err
	}
	return found[0], true, nil
}

// recentTurns maps "tenant/fingerprint" to the thread a turn was recorded
// on, for the newest recentSize turns of this process.
type recentTurns struct {
	mu    sync.Mutex
	ids   map[string]string
	order []string // ring of keys, oldest at next
	next  int
}

const recentSize = 4096

func (c *recentTurns) get(key string) (string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	id, ok := c.ids[key]
	return id, ok
}

func (c *recentTurns) put(key, id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ids == nil {
		c.ids, c.order = map[string]string{}, make([]string, 0, recentSize)
	}
	if _, ok := c.ids[key]; ok {
		c.ids[key] = id
		return
	}
	if len(c.order) < recentSize {
		c.order = append(c.order, key)
	} else {
		delete(c.ids, c.order[c.next])
		c.order[c.next] = key
		c.next = (c.next + 1) % recentSize
	}
	c.ids[key] = id
}

// fork copies the thread a target forks, row and checkpoints.
func (h *Handler) fork(ctx context.Context, tenant string, tg *target) error {
	t, err := h.DB.CopyThread(ctx, tenant, tg.ForkOf, tg.ThreadID)
	if err != nil {
		return fmt.Errorf("fork thread %s: %w", tg.ForkOf, err)
	}
	if err := h.Saver.CopyThread(ctx, runs.ThreadKey(tenant, tg.ForkOf), runs.ThreadKey(tenant, tg.ThreadID)); err != nil && !errors.Is(err, checkpoint.ErrNotFound) {
		_ = h.DB.DeleteThread(context.WithoutCancel(ctx), tenant, tg.ThreadID)
		return fmt.Errorf("fork thread %s: %w", tg.ForkOf, err)
	}
	tg.Thread, tg.Exists = t, true
	return nil
}

// remember records that the thread answered the history, so the next
// request of the conversation finds it; with forkable, also the checkpoint
// the turn ended at, where an edit of a later message forks. A turn that
// ended waiting for an answer is not forkable: the answer given later is
// recorded on that checkpoint, so a branch from it could not answer again.
func (h *Handler) remember(ctx context.Context, tenant string, tg target, history []turn, forkable bool) error {
	fp, err := convo.Remember(ctx, h.DB, h.Saver, tenant, tg.ThreadID, tg.Turns, tg.At, history, forkable)
	if err != nil {
		return err
	}
	h.recent.put(tenant+"/"+fp, tg.ThreadID)
	return nil
}
