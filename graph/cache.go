package graph

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"time"

	"github.com/trellis-agents/trellis/cache"
)

// CachePolicy makes a node's results reusable: a task whose key is found in
// the run's cache (WithNodeCache) does not run; it takes the writes and the
// Command goto stored under that key, and its EventTaskEnd says Cached.
// Conditional and fan-out edges are evaluated as usual. Only tasks that
// finish are stored; failed and interrupted ones never are. Use it for
// nodes whose output depends only on their input: a model call on the same
// messages, a lookup.
type CachePolicy struct {
	// Key derives the cache key from the node's input (the state it reads
	// and its Send payload; ctx gives RunContext). The default is a SHA-256
	// of the whole state and the payload, encoded as JSON: correct but
	// coarse, since any change to any key misses. A key function that
	// reads only what the node reads hits more often.
	Key func(ctx context.Context, s State, payload any) (string, error)
	// TTL is how long an entry lives; 0 means until the cache is cleared.
	TTL time.Duration
}

// WithCache sets the node's cache policy (see CachePolicy). Without a cache
// given to the run (WithNodeCache) it does nothing.
func WithCache(p CachePolicy) NodeOption {
	return nodeOptionFunc(func(n *nodeSpec) { n.cache = &p })
}

// WithNodeCache gives the run the cache that nodes with a CachePolicy use;
// subgraphs and graphs invoked from nodes inherit it. Errors of the cache
// fail the task (a retry policy that accepts them retries it).
func WithNodeCache(c cache.Cache) RunOption {
	return runOptionFunc(func(c2 *runConfig) { c2.rare().cache = c })
}

// ClearCache removes the cached results of the named nodes of g from c, or
// of all its nodes when none are named.
func (g *Graph) ClearCache(ctx context.Context, c cache.Cache, nodes ...string) error {
	if len(nodes) == 0 {
		for _, n := range g.nodes {
			if n.cache != nil {
				nodes = append(nodes, n.name)
			}
		}
		if len(nodes) == 0 {
			return nil
		}
	}
	nss := make([]string, len(nodes))
	for i, n := range nodes {
		if _, ok := g.byName[n]; !ok {
			return fmt.Errorf("graph: ClearCache: no node %q%s", n, suggest(n, g.byName))
		}
		nss[i] = g.cacheNamespace(n)
	}
	return c.Clear(ctx, nss...)
}

// cacheNamespace is the cache namespace of one node of g.
func (g *Graph) cacheNamespace(node string) string { return "trellis:" + g.name + "/" + node }

// cachedOutput is what a cache entry holds: the task's writes, encoded as
// pending writes are, and its goto.
type cachedOutput struct {
	Writes []wireLogEntry `json:"writes"`
	Goto   *wireRoutes    `json:"goto,omitempty"`
}

// cacheKey computes the task's cache key.
func (t *task) cacheKey(ctx context.Context) (string, error) {
	p := t.node.cache
	if p.Key != nil {
		k, err := p.Key(ctx, t.r.state, t.payload)
		if err != nil {
			return "", fmt.Errorf("its cache key function failed: %w", err)
		}
		return k, nil
	}
	h := sha256.New()
	for i, sl := range t.r.state.vals {
		if !sl.set {
			continue
		}
		k := t.r.g.sch.keys[i]
		b, err := k.encodeValue(sl.v)
		if err != nil {
			return "", fmt.Errorf("encode key %q for its cache key: %w", k.Name(), err)
		}
		fmt.Fprintf(h, "%s=%d:", k.Name(), len(b))
		h.Write(b)
	}
	if t.push {
		b, err := t.node.encodePayload(t.payload)
		if err != nil {
			return "", fmt.Errorf("encode its payload for its cache key: %w", err)
		}
		fmt.Fprintf(h, "payload=%d:", len(b))
		h.Write(b)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// cacheLookup reports whether the task's output was found in the cache and,
// if so, restores it. On a miss it returns the key to store under.
func (r *run) cacheLookup(t *task, c cache.Cache) (hit bool, key string, err error) {
	key, err = t.cacheKey(t)
	if err != nil {
		return false, "", err
	}
	b, ok, err := c.Get(t, r.g.cacheNamespace(t.node.name), key)
	if err != nil {
		return false, "", fmt.Errorf("read the node cache: %w", err)
	}
	if !ok {
		return false, key, nil
	}
	var out cachedOutput
	if err := json.Unmarshal(b, &out); err != nil {
		return false, "", fmt.Errorf("the node cache entry %s does not decode: %w; clear it with Graph.ClearCache", key, err)
	}
	writes := make(Update, 0, len(out.Writes))
	for _, e := range out.Writes {
		i, ok := r.g.sch.byName(e.Key)
		if !ok {
			return false, "", fmt.Errorf("the node cache entry %s writes key %q, which the schema lacks; clear it with Graph.ClearCache", key, e.Key)
		}
		w, err := r.g.sch.keys[i].decodeWrite(e.Write)
		if err != nil {
			return false, "", fmt.Errorf("the node cache entry %s: %w", key, err)
		}
		writes = append(writes, w)
	}
	t.writes = writes
	if out.Goto != nil {
		routes, err := r.decodeRoutes(*out.Goto)
		if err != nil {
			return false, "", fmt.Errorf("the node cache entry %s: %w", key, err)
		}
		t.routes, t.viaGoto = routes, true
	}
	t.intr().cached = true
	return true, key, nil
}

// cacheStore stores a finished task's output under key.
func (r *run) cacheStore(t *task, c cache.Cache, key string) error {
	var out cachedOutput
	for _, w := range t.writes {
		b, err := w.key.self.encodeWrite(w)
		if err != nil {
			return fmt.Errorf("encode its output for the node cache: %w", err)
		}
		out.Writes = append(out.Writes, wireLogEntry{Key: w.key.name, Write: b})
	}
	if t.viaGoto {
		wr := wireRoutes{Goto: true, Targets: []wireTarget{}}
		for _, tg := range t.routes {
			wt := wireTarget{Node: tg.node, Send: tg.send}
			if tg.send {
				p, err := r.g.nodes[r.g.byName[tg.node]].encodePayload(tg.payload)
				if err != nil {
					return fmt.Errorf("encode the payload sent to %q for the node cache: %w", tg.node, err)
				}
				wt.Payload = p
			}
			wr.Targets = append(wr.Targets, wt)
		}
		out.Goto = &wr
	}
	b, err := json.Marshal(out)
	if err != nil {
		return fmt.Errorf("encode its output for the node cache: %w", err)
	}
	// The task has finished: a sibling's failure, which cancels the step,
	// must not undo its work, so the write is detached from that and
	// bounded on its own.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(t), cacheWriteTimeout)
	defer cancel()
	if err := c.Set(ctx, r.g.cacheNamespace(t.node.name), key, b, t.node.cache.TTL); err != nil {
		return fmt.Errorf("write the node cache: %w", err)
	}
	return nil
}

// cacheWriteTimeout bounds storing a finished task's result in the cache.
const cacheWriteTimeout = 10 * time.Second
