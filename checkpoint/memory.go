package checkpoint

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"iter"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/trellis-agents/trellis/checkpoint/internal/savercheck"
)

// Memory is a Saver that keeps everything in process memory. It is meant for
// tests and for single-process use where losing the state on exit is
// acceptable. It is safe for concurrent use; the zero value is not usable,
// call NewMemory.
//
// Memory defines the semantics every Saver follows (the suite in package
// checkpoint/checkpointtest checks them):
//
//   - Checkpoints are keyed by thread, namespace and ID. A namespace's latest
//     checkpoint is the one whose ID sorts last.
//   - Blobs are stored once per thread, namespace, key and version, not per
//     checkpoint: a checkpoint's Put carries only its new blobs, and Get
//     rebuilds each key's chain from the blobs stored by earlier Puts.
//   - Every value passed in or handed out is a deep copy.
//
// Memory keeps Go values, not encoded rows, so it has no bytes of a
// checkpoint row that could rot; it still keeps a CRC-32C of every blob's
// data and pending write's value and checks it, and every Tuple it returns
// passes Tuple.Validate. Its size limit (see MemoryMaxBytes) is checked on
// Put and PutWrites only: it never holds more than it accepted.
type Memory struct {
	mu       sync.RWMutex
	threads  map[string]map[string]*memNamespace // thread -> namespace -> data
	now      func() time.Time                    // clock for Prune's OlderThan
	maxBytes int
	// the namespace the last Put stored in and where (see namespace);
	// used and set only with mu held for writing
	lastNS               *memNamespace
	lastThread, lastName string
}

// MemoryOption configures NewMemory.
type MemoryOption func(*Memory)

// MemoryMaxBytes sets the most bytes Memory accepts in one blob's data, one
// pending write's value, and one checkpoint (an estimate of its encoded
// size: IDs, keys, task payloads and metadata); larger ones fail with an
// error wrapping ErrTooLarge. The default is DefaultMaxBytes; n <= 0 keeps
// it.
func MemoryMaxBytes(n int) MemoryOption {
	return func(m *Memory) {
		if n > 0 {
			m.maxBytes = n
		}
	}
}

// blobID identifies a stored blob inside one thread namespace.
type blobID struct {
	key     string
	version uint64
}

// memNamespace is the data of one thread namespace. It always holds at
// least one checkpoint: it is created by the first Put and only removed with
// its thread.
type memNamespace struct {
	cps   []*memCheckpoint // the checkpoints by ID, ascending; see get
	blobs memBlobs
	slab  memSlab // where Put carves what it stores; see memory_slab.go
	// lastKey and lastList remember the blob list Put last used (see
	// listFor); collect, which may drop lists from blobs, forgets them.
	// Read and written only under Memory.mu held for writing.
	lastKey  string
	lastList *blobList
}

// listFor returns key's blob list, nil when it has none, remembering it
// for the next call: a run's Puts store blobs of the same key (a chain's
// one key) one after the other, and looking the key up in blobs hashed it
// each time. mu must be held for writing.
func (ns *memNamespace) listFor(key string) *blobList {
	if ns.lastList != nil && ns.lastKey == key {
		return ns.lastList
	}
	l := ns.blobs[key]
	if l != nil {
		ns.lastKey, ns.lastList = key, l
	}
	return l
}

// memBlob is a stored blob with its BlobChecksum.
type memBlob struct {
	Blob
	sum uint32
}

// memWrite is a stored pending write with its WriteChecksum.
type memWrite struct {
	PendingWrite
	sum uint32
}

var _ Saver = (*Memory)(nil)

// NewMemory returns an empty in-memory Saver.
func NewMemory(opts ...MemoryOption) *Memory {
	m := &Memory{threads: make(map[string]map[string]*memNamespace), now: time.Now, maxBytes: DefaultMaxBytes}
	for _, o := range opts {
		o(m)
	}
	return m
}

var errEmptyThread = errors.New("checkpoint: thread ID is empty")

// Get returns the checkpoint ref names, or the latest of ref's thread
// namespace when ref.ID is "". The returned Checkpoint.Blobs holds, for each
// key of Versions in sorted key order, the chain from the last Full blob up
// to the version in force, oldest first. A chain with a missing blob is an
// error naming the checkpoint and key; it does not wrap ErrNotFound.
func (m *Memory) Get(ctx context.Context, ref Ref) (*Tuple, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if ref.ThreadID == "" {
		return nil, errEmptyThread
	}
	m.mu.RLock()
	defer m.mu.RUnlock()
	ns := m.threads[ref.ThreadID][ref.Namespace]
	if ns == nil {
		return nil, notFound(ref)
	}
	id := ref.ID
	if id == "" {
		id = ns.latest()
	}
	c := ns.get(id)
	if c == nil {
		return nil, notFound(ref)
	}
	return ns.tuple(ref.ThreadID, ref.Namespace, id, c)
}

// List yields the checkpoints of ref's thread namespace, newest first, each
// as Get would return it. ref.ID is ignored. A thread or namespace with no
// checkpoints yields nothing. After an error List yields nothing more.
//
// List takes a snapshot when iteration starts, so the loop body may call the
// Saver, including Put.
func (m *Memory) List(ctx context.Context, ref Ref, opts ListOptions) iter.Seq2[*Tuple, error] {
	return func(yield func(*Tuple, error) bool) {
		if err := ctx.Err(); err != nil {
			yield(nil, err)
			return
		}
		if ref.ThreadID == "" {
			yield(nil, errEmptyThread)
			return
		}
		if opts.Limit < 0 {
			yield(nil, fmt.Errorf("checkpoint: list %s: negative limit %d", ref, opts.Limit))
			return
		}
		tuples, err := m.list(ref, opts)
		for _, t := range tuples {
			if err := ctx.Err(); err != nil {
				yield(nil, err)
				return
			}
			if !yield(t, nil) {
				return
			}
		}
		if err != nil {
			yield(nil, err)
		}
	}
}

// list builds List's tuples under the read lock. It returns the tuples
// before the first error, and that error.
func (m *Memory) list(ref Ref, opts ListOptions) ([]*Tuple, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	ns := m.threads[ref.ThreadID][ref.Namespace]
	if ns == nil {
		return nil, nil
	}
	var out []*Tuple
	for _, c := range slices.Backward(ns.cps) {
		id := c.id
		if opts.Limit > 0 && len(out) >= opts.Limit {
			break
		}
		if opts.Before != "" && id >= opts.Before {
			continue
		}
		if !c.metadata().Matches(opts.Filter) {
			continue
		}
		t, err := ns.tuple(ref.ThreadID, ref.Namespace, id, c)
		if err != nil {
			return out, err
		}
		out = append(out, t)
	}
	return out, nil
}

// Put stores cp after the latest checkpoint of ref's thread namespace. ref.ID
// must be the ID of that latest checkpoint ("" when the namespace has none),
// otherwise Put returns an error wrapping ErrConflict. md.Parent is stored as
// given (a fork names an older checkpoint).
// cp.ID must be new and sort after the latest ID (NewID does this). Each blob
// must be Full, or Delta with a Base below its Version; a blob whose key and
// version are already stored in the namespace must be identical to the
// stored one. When Put fails it has written nothing.
func (m *Memory) Put(ctx context.Context, ref Ref, cp Checkpoint, md Metadata) (Ref, error) {
	return putOut(&ref, &cp, m.put(ctx, &ref, &cp, nil, &md, false))
}

// PutOwned is Put for a caller that hands what cp and md point to over:
// Memory keeps the blobs' data, the tasks' payloads, cp.Waiting,
// cp.Deferred and md.Extra as they are instead of copying them, so neither
// the caller nor anyone it shared them with may change or read them
// afterwards. The containers Put copies element by element in any case —
// the cp.Versions map and the cp.Blobs and cp.Next slices — are not kept:
// the caller may clear and reuse them once PutOwned returns. The engine
// calls it for the checkpoints it builds for one Put when its saver is a
// *Memory itself (not a type that embeds one, whose Put may do more). It is
// not part of Saver.
func (m *Memory) PutOwned(ctx context.Context, ref Ref, cp Checkpoint, md Metadata) (Ref, error) {
	return putOut(&ref, &cp, m.put(ctx, &ref, &cp, nil, &md, true))
}

// put stores cp after ref, cp's versions being cp.Versions and vers (one
// of them empty). It neither changes nor keeps *ref, *cp and *md
// themselves (only what their fields hold, copied unless owned): they are
// pointers so that a step's save does not copy the structs at every call
// on its way.
func (m *Memory) put(ctx context.Context, ref *Ref, cp *Checkpoint, vers []KeyVersion, md *Metadata, owned bool) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if ref.ThreadID == "" {
		return errEmptyThread
	}
	if cp.ID == "" {
		return fmt.Errorf("checkpoint: put in %s: checkpoint ID is empty; assign one with NewID", putRef(ref, cp))
	}
	if err := checkPutBlobs(cp.Blobs); err != nil {
		return fmt.Errorf("checkpoint: put %s: %w", putRef(ref, cp), err)
	}
	if err := m.checkSizes(ref, cp, len(vers), md); err != nil {
		return err
	}
	for _, kv := range vers {
		if kv.Key == "" {
			return fmt.Errorf("checkpoint: put %s: a version's key is empty", putRef(ref, cp))
		}
	}

	m.mu.Lock()
	ns := m.namespace(ref.ThreadID, ref.Namespace)
	latest := ""
	if ns != nil {
		latest = ns.latest()
	}
	first, err := m.checkPut(ns, ref, latest, cp)
	if err != nil {
		m.mu.Unlock()
		return err
	}
	// Unlocked without a deferred call (a step's Put is a hot path):
	// checkPut and store only panic on a broken runtime (out of memory).
	m.store(ref, ns, cp, vers, md, owned, first)
	m.mu.Unlock()
	return nil
}

// checkSizes checks a checkpoint's row (with nvers versions besides
// cp.Versions) and blobs against the size limit.
// Only a checkpoint over the limit goes through CheckSize and
// CheckBlobSizes, which build the error: the check is a comparison a step.
func (m *Memory) checkSizes(ref *Ref, cp *Checkpoint, nvers int, md *Metadata) error {
	limit := m.maxBytes // NewMemory makes it positive
	if n := rowBytes(cp, md) + 88*nvers; n > limit {
		return CheckSize(putRef(ref, cp), "put", "the checkpoint", n, limit)
	}
	for _, b := range cp.Blobs {
		if len(b.Data) > limit {
			return CheckBlobSizes(putRef(ref, cp), "put", cp.Blobs, limit)
		}
	}
	return nil
}

// checkPut checks, under m.mu, that cp may follow latest in namespace ns
// (nil when it has none) for a writer that read ref.ID as the latest. It returns the stored blob list of cp's first
// blob's key, nil when there is none, for store to add to without
// looking it up again.
func (m *Memory) checkPut(ns *memNamespace, ref *Ref, latest string, cp *Checkpoint) (*blobList, error) {
	if ref.ID != latest {
		out := putRef(ref, cp)
		if latest == "" {
			return nil, fmt.Errorf("checkpoint: put %s: the writer read checkpoint %q as the latest, but the namespace has none: %w", out, ref.ID, ErrConflict)
		}
		return nil, fmt.Errorf("checkpoint: put %s: the writer read checkpoint %q as the latest, but the latest is %s: %w", out, ref.ID, latest, ErrConflict)
	}
	var first *blobList
	if ns != nil {
		// The IDs are sorted and latest is the last: an ID after it is new,
		// which is every Put of a run, so only the others are searched.
		if cp.ID <= latest {
			if ns.get(cp.ID) != nil {
				return nil, fmt.Errorf("checkpoint: put %s: a checkpoint with this ID already exists", putRef(ref, cp))
			}
			return nil, fmt.Errorf("checkpoint: put %s: the ID sorts before the latest checkpoint %s; IDs must grow (use NewID)", putRef(ref, cp), latest)
		}
		for i := range cp.Blobs {
			b := &cp.Blobs[i]
			l := ns.listFor(b.Key)
			if l == nil {
				continue
			}
			if i == 0 {
				first = l
			}
			if c, j, ok := l.find(b.Version); ok && !l.chunk(c)[j].blob(b.Key).Blob.Equal(*b) {
				return nil, fmt.Errorf("checkpoint: put %s: key %q version %d is already stored with other content; blob versions must not be reused", putRef(ref, cp), b.Key, b.Version)
			}
		}
	}
	return first, nil
}

// store stores a checked checkpoint under m.mu in namespace ns of ref's
// thread, creating it when ns is nil, and returns the namespace. first is
// what checkPut returned for cp, or nil.
func (m *Memory) store(ref *Ref, ns *memNamespace, cp *Checkpoint, vers []KeyVersion, md *Metadata, owned bool, first *blobList) *memNamespace {
	if ns == nil {
		ns = &memNamespace{blobs: make(memBlobs)}
		if m.threads[ref.ThreadID] == nil {
			m.threads[ref.ThreadID] = make(map[string]*memNamespace)
		}
		m.threads[ref.ThreadID][ref.Namespace] = ns
		m.lastNS, m.lastThread, m.lastName = ns, ref.ThreadID, ref.Namespace
	}
	ns.store(cp, vers, md, owned, first)
	return ns
}

// PutWrites replaces the pending writes of task taskID after the checkpoint
// ref names; ref.ID is required. It returns an error wrapping ErrNotFound
// when that checkpoint does not exist. Each write's TaskID must be taskID or
// empty (it is then filled in), and no two writes may share an Index. Writing
// an empty list removes the task's writes.
func (m *Memory) PutWrites(ctx context.Context, ref Ref, taskID string, writes []PendingWrite) error {
	return m.putWrites(ctx, ref, taskID, writes, false)
}

// PutWritesOwned is PutWrites for a caller that hands the writes' values
// over: Memory keeps each Value as it is instead of copying it, so no one
// may change it afterwards. The writes slice itself is not kept. Like
// PutOwned, the engine calls it only when its saver is a *Memory itself;
// it is not part of Saver.
func (m *Memory) PutWritesOwned(ctx context.Context, ref Ref, taskID string, writes []PendingWrite) error {
	return m.putWrites(ctx, ref, taskID, writes, true)
}

func (m *Memory) putWrites(ctx context.Context, ref Ref, taskID string, writes []PendingWrite, owned bool) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if ref.ThreadID == "" {
		return errEmptyThread
	}
	if ref.ID == "" {
		return fmt.Errorf("checkpoint: put writes in %s: checkpoint ID is empty", ref)
	}
	if taskID == "" {
		return fmt.Errorf("checkpoint: put writes for %s: task ID is empty", ref)
	}
	ws := make([]memWrite, len(writes))
	for i, w := range writes {
		if w.TaskID != "" && w.TaskID != taskID {
			return fmt.Errorf("checkpoint: put writes of task %q for %s: write %d belongs to task %q", taskID, ref, i, w.TaskID)
		}
		if err := CheckWriteSize(ref, "put writes", taskID, w, m.maxBytes); err != nil {
			return err
		}
		if !owned {
			w = cloneWrite(w)
		}
		ws[i].PendingWrite = w
		ws[i].TaskID = taskID
		ws[i].sum = WriteChecksum(ws[i].PendingWrite)
	}
	slices.SortFunc(ws, func(a, b memWrite) int { return cmp.Compare(a.Index, b.Index) })
	for i := 1; i < len(ws); i++ { // sorted: a repeated index is next to itself
		if ws[i].Index == ws[i-1].Index {
			return fmt.Errorf("checkpoint: put writes of task %q for %s: index %d is used twice", taskID, ref, ws[i].Index)
		}
	}

	m.mu.Lock()
	defer m.mu.Unlock()
	ns := m.threads[ref.ThreadID][ref.Namespace]
	c := ns.get(ref.ID)
	if c == nil {
		return notFound(ref)
	}
	if len(ws) == 0 {
		delete(c.writes(), taskID)
		return nil
	}
	c.writesFor()[taskID] = ws
	return nil
}

// CopyThread copies every namespace, checkpoint, blob and write of thread
// from into thread to. It returns an error wrapping ErrNotFound when from has
// no checkpoint, and an error when to already has one. The copy shares
// nothing with the original.
func (m *Memory) CopyThread(ctx context.Context, from, to string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if from == "" || to == "" {
		return errEmptyThread
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	src := m.threads[from]
	if len(src) == 0 {
		return fmt.Errorf("checkpoint: copy %s: %w", Ref{ThreadID: from}, ErrNotFound)
	}
	if len(m.threads[to]) > 0 {
		return fmt.Errorf("checkpoint: copy thread %q to %q: the target thread already has checkpoints", from, to)
	}
	dst := make(map[string]*memNamespace, len(src))
	for name, ns := range src {
		dst[name] = ns.clone()
	}
	m.forgetNamespace() // (to had none to remember; kept simple)
	m.threads[to] = dst
	return nil
}

// Prune removes, in each thread namespace (only opts.ThreadID's when set),
// the checkpoints beyond the newest opts.KeepLatest and those whose Created
// is more than opts.OlderThan before now; a checkpoint is removed when
// either limit says so, and a zero Created counts as old. The latest
// checkpoint of a namespace is never removed. Pending writes of removed
// checkpoints go with them, and so do the blobs no kept checkpoint needs.
// With both limits 0 Prune removes nothing. It returns how many checkpoints
// it removed.
func (m *Memory) Prune(ctx context.Context, opts PruneOptions) (int, error) {
	if run, err := savercheck.Prune(ctx, "checkpoint", opts.KeepLatest, opts.OlderThan); !run {
		return 0, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	cutoff := m.now().Add(-opts.OlderThan)
	removed := 0
	for thread, nss := range m.threads {
		if opts.ThreadID != "" && thread != opts.ThreadID {
			continue
		}
		for _, ns := range nss {
			removed += ns.prune(opts, cutoff)
		}
	}
	return removed, nil
}

// prune removes the namespace's checkpoints that opts selects (cutoff is
// now - OlderThan), collects unneeded blobs, and returns how many
// checkpoints it removed.
func (ns *memNamespace) prune(opts PruneOptions, cutoff time.Time) int {
	n := len(ns.cps)
	removed := ns.remove(func(i int, c *memCheckpoint) bool {
		return i < n-1 && ((opts.KeepLatest > 0 && i < n-opts.KeepLatest) ||
			(opts.OlderThan > 0 && c.created.Before(cutoff)))
	})
	if removed > 0 {
		ns.collect()
	}
	return removed
}

// collect removes the blobs that no checkpoint of the namespace needs.
func (ns *memNamespace) collect() {
	needed := make(map[blobID]bool)
	for _, c := range ns.cps {
		for _, kv := range c.versList() {
			key, v := kv.Key, kv.Version
			// Mark the chain as far as it goes; a broken chain is reported
			// by Get, not by Prune.
			for {
				b, ok := ns.blobs.get(key, v)
				if !ok || needed[blobID{key, v}] {
					break
				}
				needed[blobID{key, v}] = true
				if b.Kind != Delta || b.Base >= b.Version {
					break
				}
				v = b.Base
			}
		}
	}
	ns.lastKey, ns.lastList = "", nil // keep may drop the list remembered
	ns.blobs.keep(func(key string, v uint64) bool { return needed[blobID{key, v}] })
}

func (ns *memNamespace) latest() string {
	return ns.cps[len(ns.cps)-1].id
}

// tuple builds the Tuple of a stored checkpoint (whose ID is id), with its
// blob chains and writes, as deep copies, and checks it.
func (ns *memNamespace) tuple(thread, namespace, id string, c *memCheckpoint) (*Tuple, error) {
	ref := Ref{ThreadID: thread, Namespace: namespace, ID: id}
	cp := cloneCheckpoint(c.checkpoint())
	cp.Versions = c.versions()
	for _, key := range c.sortedKeys() {
		chain, err := ns.chain(key, cp.Versions[key])
		if err != nil {
			return nil, fmt.Errorf("checkpoint: %s: key %q: %w", ref, key, err)
		}
		cp.Blobs = append(cp.Blobs, chain...)
	}
	var writes []PendingWrite
	cws := c.writes()
	for _, task := range slices.Sorted(maps.Keys(cws)) {
		for _, w := range cws[task] {
			if WriteChecksum(w.PendingWrite) != w.sum {
				return nil, Corruptf(ref, "pending write %d of task %q fails its checksum", w.Index, task)
			}
			writes = append(writes, cloneWrite(w.PendingWrite))
		}
	}
	t := &Tuple{Ref: ref, Checkpoint: cp, Metadata: cloneMetadata(c.metadata()), Writes: writes}
	if err := t.Validate(); err != nil {
		return nil, err
	}
	return t, nil
}

// chain returns copies of the blobs that rebuild key at version v, oldest
// (the Full blob) first.
func (ns *memNamespace) chain(key string, v uint64) ([]Blob, error) {
	var chain []Blob
	for {
		b, ok := ns.blobs.get(key, v)
		if !ok {
			if len(chain) == 0 {
				return nil, fmt.Errorf("no blob is stored for version %d", v)
			}
			return nil, fmt.Errorf("delta version %d is based on version %d, which is not stored; the chain does not reach a full blob", chain[len(chain)-1].Version, v)
		}
		if BlobChecksum(b.Blob) != b.sum {
			return nil, fmt.Errorf("blob version %d fails its checksum: %w", v, ErrCorrupt)
		}
		chain = append(chain, cloneBlob(b.Blob))
		if b.Kind == Full {
			break
		}
		if b.Kind != Delta || b.Base >= b.Version {
			return nil, fmt.Errorf("blob version %d is a %s blob with base %d, which no Put stores: %w", b.Version, b.Kind, b.Base, ErrCorrupt)
		}
		v = b.Base
	}
	slices.Reverse(chain)
	return chain, nil
}

func (ns *memNamespace) clone() *memNamespace {
	out := &memNamespace{
		cps:   make([]*memCheckpoint, len(ns.cps)),
		blobs: ns.blobs.clone(),
	}
	for i, c := range ns.cps {
		cc := &memCheckpoint{}
		cc.set(cloneCheckpoint(c.checkpoint()), slices.Clone(c.versList()), cloneMetadata(c.metadata()))
		if src := c.writes(); src != nil {
			writes := make(map[string][]memWrite, len(src))
			for task, ws := range src {
				cws := make([]memWrite, len(ws))
				for i, w := range ws {
					cws[i] = memWrite{PendingWrite: cloneWrite(w.PendingWrite), sum: w.sum}
				}
				writes[task] = cws
			}
			cc.setWrites(writes)
		}
		out.cps[i] = cc
	}
	return out
}

// notFound reports that ref names nothing stored. The message is made only
// when read: every nested run of a new thread asks for its namespace's
// checkpoint first, and formatting the ref each time cost more than the
// lookup.
func notFound(ref Ref) error { return &notFoundError{ref} }

type notFoundError struct{ ref Ref }

func (e *notFoundError) Error() string { return e.ref.String() + ": " + ErrNotFound.Error() }
func (e *notFoundError) Unwrap() error { return ErrNotFound }

func cloneBlob(b Blob) Blob {
	b.Data = bytes.Clone(b.Data)
	return b
}

func cloneWrite(w PendingWrite) PendingWrite {
	w.Value = bytes.Clone(w.Value)
	return w
}

func cloneMetadata(md Metadata) Metadata {
	md.Extra = maps.Clone(md.Extra)
	return md
}

func cloneCheckpoint(cp Checkpoint) Checkpoint {
	cp.Versions = maps.Clone(cp.Versions)
	if cp.Blobs != nil {
		blobs := make([]Blob, len(cp.Blobs))
		for i, b := range cp.Blobs {
			blobs[i] = cloneBlob(b)
		}
		cp.Blobs = blobs
	}
	if cp.Next != nil {
		next := make([]Task, len(cp.Next))
		for i, t := range cp.Next {
			t.Payload = bytes.Clone(t.Payload)
			next[i] = t
		}
		cp.Next = next
	}
	if cp.Waiting != nil {
		waiting := make(map[string][]string, len(cp.Waiting))
		for k, v := range cp.Waiting {
			waiting[k] = slices.Clone(v)
		}
		cp.Waiting = waiting
	}
	cp.Deferred = slices.Clone(cp.Deferred)
	return cp
}

// rowBytes estimates the encoded size of a checkpoint without its blobs,
// for the size limit: the IDs, task fields and payloads, join barriers,
// deferred nodes and metadata, plus a little per entry.
func rowBytes(cp *Checkpoint, md *Metadata) int {
	// State key names come from the graph's definition, not from data:
	// count them at a generous 64 bytes each instead of iterating the map.
	n := 64 + len(cp.ID) + len(md.Parent) + len(md.RunID) + len(md.Source) + 88*len(cp.Versions)
	for _, t := range cp.Next {
		n += len(t.ID) + len(t.Node) + len(t.Path) + len(t.Payload) + 32
	}
	// Most checkpoints have neither map: ranging over a nil map still
	// starts an iterator.
	if len(cp.Waiting) > 0 {
		for k, v := range cp.Waiting {
			n += len(k) + 8
			for _, s := range v {
				n += len(s) + 4
			}
		}
	}
	for _, d := range cp.Deferred {
		n += len(d) + 4
	}
	if len(md.Extra) > 0 {
		for k, v := range md.Extra {
			n += len(k) + len(v) + 8
		}
	}
	return n
}

var _ Exporter = (*Memory)(nil)

// Threads returns up to limit IDs of threads holding checkpoints, in
// ascending byte order, those after after; see Exporter.
func (m *Memory) Threads(ctx context.Context, after string, limit int) ([]string, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if limit <= 0 {
		return nil, fmt.Errorf("checkpoint: list threads: limit %d is not positive", limit)
	}
	m.mu.RLock()
	var ids []string
	for id, nss := range m.threads {
		if id > after && len(nss) > 0 {
			ids = append(ids, id)
		}
	}
	m.mu.RUnlock()
	slices.Sort(ids)
	return ids[:min(limit, len(ids))], nil
}

// Namespaces returns the namespaces of thread holding checkpoints, in
// ascending byte order; see Exporter.
func (m *Memory) Namespaces(ctx context.Context, thread string) ([]string, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m.mu.RLock()
	defer m.mu.RUnlock()
	return slices.Sorted(maps.Keys(m.threads[thread])), nil
}

// CheckpointIDs returns up to limit checkpoint IDs of ref's thread
// namespace after ref.ID, oldest first; see Exporter.
func (m *Memory) CheckpointIDs(ctx context.Context, ref Ref, limit int) ([]string, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if limit <= 0 {
		return nil, fmt.Errorf("checkpoint: list the checkpoints of %s: limit %d is not positive", ref, limit)
	}
	m.mu.RLock()
	defer m.mu.RUnlock()
	ns := m.threads[ref.ThreadID][ref.Namespace]
	if ns == nil {
		return nil, nil
	}
	i, _ := ns.search(ref.ID)
	for i < len(ns.cps) && ns.cps[i].id <= ref.ID {
		i++
	}
	ids := make([]string, 0, min(len(ns.cps)-i, limit))
	for _, c := range ns.cps[i:min(len(ns.cps), i+limit)] {
		ids = append(ids, c.id)
	}
	return ids, nil
}
