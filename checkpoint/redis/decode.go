package redis

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/trellis-agents/trellis/checkpoint"
)

// errReply reports a script reply of an unexpected shape.
var errReply = errors.New("unexpected reply from the Redis script")

// page is a decoded readScript reply.
type page struct {
	tuples []rawTuple
	blobs  []string
}

// rawTuple is one checkpoint of a page, not yet decoded.
type rawTuple struct {
	id     string
	fields map[string]string // the checkpoint's hash
	chains map[string][]int  // key -> indexes into page.blobs, newest first
}

func parsePage(reply any) (page, error) {
	top, ok := reply.([]any)
	if !ok || len(top) != 2 {
		return page{}, errReply
	}
	tuples, ok1 := top[0].([]any)
	blobs, ok2 := strs(top[1])
	if !ok1 || !ok2 {
		return page{}, errReply
	}
	out := page{blobs: blobs, tuples: make([]rawTuple, 0, len(tuples))}
	for _, t := range tuples {
		parts, ok := t.([]any)
		if !ok || len(parts) != 3 {
			return page{}, errReply
		}
		id, ok1 := parts[0].(string)
		flat, ok2 := strs(parts[1])
		chains, ok3 := parts[2].([]any)
		if !ok1 || !ok2 || !ok3 || len(flat)%2 != 0 || len(chains)%2 != 0 {
			return page{}, errReply
		}
		rt := rawTuple{id: id, fields: pairs(flat), chains: make(map[string][]int, len(chains)/2)}
		for i := 0; i < len(chains); i += 2 {
			key, ok1 := chains[i].(string)
			idx, ok2 := chains[i+1].([]any)
			if !ok1 || !ok2 {
				return page{}, errReply
			}
			ints := make([]int, len(idx))
			for j, x := range idx {
				n, ok := x.(int64)
				if !ok || n < 0 || n >= int64(len(blobs)) {
					return page{}, errReply
				}
				ints[j] = int(n)
			}
			rt.chains[key] = ints
		}
		out.tuples = append(out.tuples, rt)
	}
	return out, nil
}

// strs converts an array reply of strings.
func strs(v any) ([]string, bool) {
	arr, ok := v.([]any)
	if !ok {
		return nil, false
	}
	out := make([]string, len(arr))
	for i, x := range arr {
		if out[i], ok = x.(string); !ok {
			return nil, false
		}
	}
	return out, true
}

// pairs turns a flat field, value list into a map.
func pairs(flat []string) map[string]string {
	m := make(map[string]string, len(flat)/2)
	for i := 0; i+1 < len(flat); i += 2 {
		m[flat[i]] = flat[i+1]
	}
	return m
}

// metadata checks the size and checksum of a page's tuple and decodes its
// metadata; ref names the checkpoint.
func (rt rawTuple) metadata(ref checkpoint.Ref, limit int) (checkpoint.Metadata, error) {
	var md checkpoint.Metadata
	if len(rt.fields) == 0 {
		return md, checkpoint.Corruptf(ref, "the checkpoint is listed but its record is missing")
	}
	cp, mdRaw, vs, t := rt.fields[fieldCheckpoint], rt.fields[fieldMetadata], rt.fields[fieldVersions], rt.fields[fieldCreated]
	if err := checkpoint.CheckSize(ref, "read", "the checkpoint record", len(cp)+len(mdRaw)+len(vs), limit); err != nil {
		return md, err
	}
	if sum, ok := rt.fields[fieldSum]; ok && sum != recordSum(cp, mdRaw, vs, t) {
		return md, checkpoint.Corruptf(ref, "the checkpoint record fails its checksum")
	}
	if _, ok := rt.fields[fieldMetadata]; !ok {
		return md, checkpoint.Corruptf(ref, "the checkpoint's record has no metadata")
	}
	if err := json.Unmarshal([]byte(mdRaw), &md); err != nil {
		return md, checkpoint.Corruptf(ref, "decode metadata: %v", err)
	}
	return md, nil
}

// tuple decodes a page's tuple, or returns nil when its metadata does not
// match filter. Every error names the thread, namespace and checkpoint. The
// Tuple shares no memory with the page or with other tuples.
func (p page) tuple(thread, namespace string, rt rawTuple, filter map[string]string, limit int) (*checkpoint.Tuple, error) {
	ref := checkpoint.Ref{ThreadID: thread, Namespace: namespace, ID: rt.id}
	md, err := rt.metadata(ref, limit)
	if err != nil {
		return nil, err
	}
	if !md.Matches(filter) {
		return nil, nil
	}
	raw, ok := rt.fields[fieldCheckpoint]
	if !ok {
		return nil, checkpoint.Corruptf(ref, "the checkpoint's record has no checkpoint")
	}
	var sc storedCheckpoint
	if err := json.Unmarshal([]byte(raw), &sc); err != nil {
		return nil, checkpoint.Corruptf(ref, "decode checkpoint: %v", err)
	}
	if sc.Created == nil {
		return nil, checkpoint.Corruptf(ref, "the stored checkpoint has no creation time (it reads %.40q)", raw)
	}
	versions, err := decodeVersions(rt.fields[fieldVersions])
	if err != nil {
		return nil, checkpoint.Corruptf(ref, "decode versions: %v", err)
	}
	cp := checkpoint.Checkpoint{
		ID:       rt.id,
		Versions: versions,
		Next:     sc.Next,
		Waiting:  sc.Waiting,
		Deferred: sc.Deferred,
		Created:  *sc.Created,
	}
	for _, key := range slices.Sorted(maps.Keys(versions)) {
		chain, err := p.chain(key, versions[key], rt.chains[key], limit)
		if err != nil {
			return nil, fmt.Errorf("checkpoint/redis: %s: key %q: %w", ref, key, err)
		}
		cp.Blobs = append(cp.Blobs, chain...)
	}
	writes, err := rt.writes(ref, limit)
	if err != nil {
		return nil, err
	}
	t := &checkpoint.Tuple{Ref: ref, Checkpoint: cp, Metadata: md, Writes: writes}
	if err := t.Validate(); err != nil {
		return nil, err
	}
	return t, nil
}

// chain checks and decodes key's chain at version v from the blobs the
// script found (newest first), and returns it oldest first. Its checks and
// texts are checkpoint.Memory's.
func (p page) chain(key string, v uint64, idx []int, limit int) ([]checkpoint.Blob, error) {
	var chain []checkpoint.Blob
	for i := 0; ; i++ {
		if i >= len(idx) {
			if len(chain) == 0 {
				return nil, fmt.Errorf("no blob is stored for version %d", v)
			}
			return nil, fmt.Errorf("delta version %d is based on version %d, which is not stored; the chain does not reach a full blob", chain[len(chain)-1].Version, v)
		}
		b, err := decodeBlob(key, v, p.blobs[idx[i]])
		if errors.Is(err, checkpoint.ErrCorrupt) {
			return nil, fmt.Errorf("blob version %d: %w", v, err)
		}
		if err != nil {
			return nil, fmt.Errorf("blob version %d does not decode: %v: %w", v, err, checkpoint.ErrCorrupt)
		}
		if len(b.Data) > limit {
			return nil, fmt.Errorf("blob version %d has %d bytes, more than the limit of %d bytes: %w", v, len(b.Data), limit, checkpoint.ErrTooLarge)
		}
		chain = append(chain, b)
		if b.Kind == checkpoint.Full {
			break
		}
		if b.Base >= b.Version {
			return nil, fmt.Errorf("blob version %d is a %s blob with base %d, which no Put stores: %w", b.Version, b.Kind, b.Base, checkpoint.ErrCorrupt)
		}
		v = b.Base
	}
	if len(idx) > len(chain) {
		return nil, errReply
	}
	slices.Reverse(chain)
	return chain, nil
}

// writes decodes the checkpoint's pending writes, by task then index,
// checking checksums and sizes.
func (rt rawTuple) writes(ref checkpoint.Ref, limit int) ([]checkpoint.PendingWrite, error) {
	var tasks []string
	for f := range rt.fields {
		if task, ok := strings.CutPrefix(f, writesPrefix); ok {
			tasks = append(tasks, task)
		}
	}
	slices.Sort(tasks)
	var out []checkpoint.PendingWrite
	for _, task := range tasks {
		js, err := decodeWritesValue(rt.fields[writesPrefix+task])
		if err != nil {
			return nil, checkpoint.Corruptf(ref, "pending writes of task %q: %v", task, err)
		}
		var ws []checkpoint.PendingWrite
		if err := json.Unmarshal([]byte(js), &ws); err != nil {
			return nil, checkpoint.Corruptf(ref, "decode pending writes of task %q: %v", task, err)
		}
		for _, w := range ws {
			if err := checkpoint.CheckWriteSize(ref, "read", task, w, limit); err != nil {
				return nil, err
			}
			w.TaskID = task
			out = append(out, w)
		}
	}
	return out, nil
}
