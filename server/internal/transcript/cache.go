package transcript

import (
	"container/list"
	"context"
	"reflect"
	"sync"

	"github.com/trellis-agents/trellis/server/db"
)

// CacheBytes bounds what the transcripts keep of finished runs' logs
// (their items, roughly counted), across threads and tenants.
const CacheBytes = 32 << 20

// logs keeps the items of finished runs, so a thread's transcript, read on
// every refresh of the page, reads and parses the logs of its finished
// runs once, not every time: on a thread of many runs a refresh costs the
// runs under way. A run's log no longer changes once the run is finished;
// the key holds its status and update time, so a run that changed is
// read again.
var logs = newLogCache(CacheBytes)

// runLog returns the items of r's log: kept ones for a finished run, else
// read from st (and kept when r is finished).
func runLog(ctx context.Context, st Store, tenant string, r db.Run) ([]logItem, error) {
	k, ok := keyOf(st, tenant, r)
	if ok {
		if items, hit := logs.get(k); hit {
			return items, nil
		}
	}
	evs, err := st.ReadEvents(ctx, tenant, r.ID, 0, MaxEvents)
	if err != nil {
		return nil, err
	}
	items := parseLog(evs)
	if ok {
		logs.put(k, items)
	}
	return items, nil
}

// logKey names one finished run's log in one store.
type logKey struct {
	st                  Store // the store itself: two databases may hold the same run ID
	tenant, run, status string
	updated             int64
}

// keyOf returns the cache key of r, or false when r's log may still grow
// (a run not finished) or the store cannot be told apart (not a
// pointer).
func keyOf(st Store, tenant string, r db.Run) (logKey, bool) {
	if !r.Status.Terminal() || st == nil {
		return logKey{}, false
	}
	if t := reflect.TypeOf(st); t.Kind() != reflect.Pointer {
		return logKey{}, false
	}
	return logKey{st: st, tenant: tenant, run: r.ID, status: string(r.Status), updated: r.UpdatedAt.UnixNano()}, true
}

// logCache is a least-recently-used map of run logs' items, bounded by
// their size.
type logCache struct {
	mu    sync.Mutex
	max   int
	size  int
	order *list.List // of *logEntry, most recent first
	byKey map[logKey]*list.Element
}

type logEntry struct {
	key   logKey
	items []logItem
	size  int
}

func newLogCache(maxBytes int) *logCache {
	return &logCache{max: maxBytes, order: list.New(), byKey: map[logKey]*list.Element{}}
}

func (c *logCache) get(k logKey) ([]logItem, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.byKey[k]
	if !ok {
		return nil, false
	}
	c.order.MoveToFront(e)
	return e.Value.(*logEntry).items, true
}

// put keeps items under k, dropping the least recently used entries past
// the bound; a log larger than the whole bound is not kept.
func (c *logCache) put(k logKey, items []logItem) {
	n := sizeOf(items)
	if n > c.max {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.byKey[k]; ok {
		c.size -= e.Value.(*logEntry).size
		c.order.Remove(e)
	}
	c.byKey[k] = c.order.PushFront(&logEntry{key: k, items: items, size: n})
	c.size += n
	for c.size > c.max {
		e := c.order.Back()
		old := e.Value.(*logEntry)
		c.order.Remove(e)
		delete(c.byKey, old.key)
		c.size -= old.size
	}
}

// len reports how many logs are kept.
func (c *logCache) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.order.Len()
}

// sizeOf roughly counts the bytes items hold.
func sizeOf(items []logItem) int {
	n := 128
	for _, it := range items {
		n += 96 + len(it.ns) + len(it.data) + len(it.text) + len(it.msgID)
		for _, id := range it.ids {
			n += 16 + len(id)
		}
	}
	return n
}
