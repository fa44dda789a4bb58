package checkpointtest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/trellis-agents/trellis/internal/testcmp"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/trellis-agents/trellis/checkpoint"
)

// Corrupter is implemented by a Saver under test whose stored data the
// suite may damage. Corrupt damages what the Saver stores for the
// checkpoint ref names (ref.ID is set) in the way d says; the suite then
// checks that reading it back fails with an error wrapping
// checkpoint.ErrCorrupt that names the thread and checkpoint (and the key or
// task), instead of returning a different state. A Saver for which a kind of
// damage cannot happen returns ErrNotApplicable for it, and documents why.
// The suite skips these checks for a Saver without Corrupter.
type Corrupter interface {
	Corrupt(ref checkpoint.Ref, d Damage) error
}

// ErrNotApplicable is returned by a Corrupter for a kind of damage that
// cannot happen to its Saver.
var ErrNotApplicable = errors.New("checkpointtest: this damage does not apply to the saver")

// DamageKind says how Corrupter.Corrupt damages a stored checkpoint.
type DamageKind string

// Kinds of damage.
const (
	// DamageEmptyObject replaces the checkpoint's stored payload (the
	// encoded checkpoint without its blobs) with the JSON "{}".
	DamageEmptyObject DamageKind = "checkpoint-empty-object"
	// DamageNull replaces the checkpoint's stored payload with "null".
	DamageNull DamageKind = "checkpoint-null"
	// DamageFlipCheckpoint changes one byte of the checkpoint's stored
	// payload, keeping it decodable when the storage requires valid JSON
	// (e.g. by changing the case of a letter inside a string).
	DamageFlipCheckpoint DamageKind = "checkpoint-flip"
	// DamageFlipBlob changes one byte of the stored data of the blob
	// Damage.Key, Damage.Version.
	DamageFlipBlob DamageKind = "blob-flip"
	// DamageFlipWrite changes one byte of the stored value of a pending
	// write of task Damage.TaskID on the checkpoint.
	DamageFlipWrite DamageKind = "write-flip"
)

// Damage describes one damage to a stored checkpoint.
type Damage struct {
	Kind    DamageKind
	Key     string // the blob's key, for DamageFlipBlob
	Version uint64 // the blob's version, for DamageFlipBlob
	TaskID  string // the write's task, for DamageFlipWrite
}

// Flip returns a copy of data with one byte changed so that JSON text stays
// valid JSON where it can: the case of the last ASCII letter is swapped, or
// else the last digit changes, or else the last byte's lowest bit flips. A
// Corrupter whose storage only accepts valid JSON uses it.
func Flip(data []byte) []byte {
	out := append([]byte(nil), data...)
	for i := len(out) - 1; i >= 0; i-- {
		if c := out[i]; ('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z') {
			out[i] ^= 0x20
			return out
		}
	}
	for i := len(out) - 1; i >= 0; i-- {
		if c := out[i]; '0' <= c && c <= '9' {
			out[i] = '0' + (c-'0'+1)%10
			return out
		}
	}
	if len(out) > 0 {
		out[len(out)-1] ^= 1
	}
	return out
}

// Run runs the conformance suite against the Savers newSaver returns, one
// subtest per behaviour. newSaver is called once per subtest; see the package
// documentation for what it may share.
func Run(t *testing.T, newSaver func(t *testing.T) checkpoint.Saver) {
	t.Helper()
	tests := []struct {
		name string
		fn   func(t *testing.T, s checkpoint.Saver)
	}{
		{"PutGet", testPutGet},
		{"PutValidation", testPutValidation},
		{"Conflict", testConflict},
		{"Namespaces", testNamespaces},
		{"BlobChains", testBlobChains},
		{"BrokenChain", testBrokenChain},
		{"List", testList},
		{"ListBreak", testListBreak},
		{"PutWrites", testPutWrites},
		{"AppendWrites", testAppendWrites},
		{"PutBatch", testPutBatch},
		{"DeleteThread", testDeleteThread},
		{"CopyThread", testCopyThread},
		{"PruneByCount", testPruneByCount},
		{"PruneByAge", testPruneByAge},
		{"PruneBothLimits", testPruneBothLimits},
		{"PruneAllThreads", testPruneAllThreads},
		{"ConcurrentThreads", testConcurrentThreads},
		{"ConcurrentWriters", testConcurrentWriters},
		{"DeepCopy", testDeepCopy},
		{"CanceledContext", testCanceledContext},
		{"Corrupt", testCorrupt},
		{"DeleteRun", testDeleteRun},
		{"DeleteRunKeepsNeededBlobs", testDeleteRunKeepsNeededBlobs},
		{"DeleteRunEdges", testDeleteRunEdges},
		{"DeleteRunConcurrentPut", testDeleteRunConcurrentPut},
		{"Export", testExport},
		{"Retention", testRetention},
		{"RetentionForksOnly", testRetentionForksOnly},
		{"RemoveCheckpoints", testRemoveCheckpoints},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.fn(t, newSaver(t))
		})
	}
}

// cmpOpts are the shared backend comparison options.
var cmpOpts = testcmp.Options

// uniqueThread returns a thread ID no other subtest or run uses.
func uniqueThread(t *testing.T, label string) string {
	return fmt.Sprintf("%s/%s/%s", t.Name(), label, checkpoint.NewID())
}

// now returns the current time as fixtures store it: UTC, whole
// milliseconds.
func now() time.Time {
	return time.Now().UTC().Truncate(time.Millisecond)
}

func full(key string, version uint64, data string) checkpoint.Blob {
	return checkpoint.Blob{Key: key, Version: version, Kind: checkpoint.Full, Data: json.RawMessage(data)}
}

func delta(key string, version, base uint64, data string) checkpoint.Blob {
	return checkpoint.Blob{Key: key, Version: version, Kind: checkpoint.Delta, Base: base, Data: json.RawMessage(data)}
}

// stored is a checkpoint the suite put, as it was given to Put.
type stored struct {
	ref checkpoint.Ref
	cp  checkpoint.Checkpoint
	md  checkpoint.Metadata
}

// want returns the Tuple a Saver should return for s, given the blob chains
// and writes the suite expects.
func (s stored) want(chains []checkpoint.Blob, writes ...checkpoint.PendingWrite) *checkpoint.Tuple {
	cp := s.cp
	cp.Blobs = chains
	return &checkpoint.Tuple{Ref: s.ref, Checkpoint: cp, Metadata: s.md, Writes: writes}
}

// thread writes a linear history of checkpoints into one thread namespace.
type thread struct {
	t        *testing.T
	s        checkpoint.Saver
	ref      checkpoint.Ref // ThreadID and Namespace
	latest   string
	step     int
	versions map[string]uint64
	run      string // Metadata.RunID of the next checkpoints; "" means "run-1"
}

func newThread(t *testing.T, s checkpoint.Saver, label string) *thread {
	return &thread{t: t, s: s, ref: checkpoint.Ref{ThreadID: uniqueThread(t, label)}, versions: map[string]uint64{}}
}

// namespace returns a writer for another namespace of the same thread.
func (th *thread) namespace(ns string) *thread {
	return &thread{t: th.t, s: th.s, ref: checkpoint.Ref{ThreadID: th.ref.ThreadID, Namespace: ns}, versions: map[string]uint64{}, run: th.run}
}

// next builds the thread's next checkpoint carrying blobs, without storing
// it.
func (th *thread) next(blobs ...checkpoint.Blob) (checkpoint.Checkpoint, checkpoint.Metadata) {
	versions := maps.Clone(th.versions)
	for _, b := range blobs {
		versions[b.Key] = max(versions[b.Key], b.Version)
	}
	source := checkpoint.SourceLoop
	if th.step == 0 {
		source = checkpoint.SourceInput
	}
	cp := checkpoint.Checkpoint{
		ID:       checkpoint.NewID(),
		Versions: versions,
		Blobs:    blobs,
		Next:     []checkpoint.Task{{ID: fmt.Sprintf("task-%d", th.step+1), Node: "agent", Path: "0"}},
		Created:  now(),
	}
	run := th.run
	if run == "" {
		run = "run-1"
	}
	md := checkpoint.Metadata{Source: source, Step: th.step, Parent: th.latest, RunID: run}
	return cp, md
}

// put stores the next checkpoint carrying blobs and fails the test on error.
func (th *thread) put(blobs ...checkpoint.Blob) stored {
	th.t.Helper()
	cp, md := th.next(blobs...)
	return th.putCP(cp, md)
}

// putAt is put with the checkpoint's Created set to at.
func (th *thread) putAt(at time.Time, blobs ...checkpoint.Blob) stored {
	th.t.Helper()
	cp, md := th.next(blobs...)
	cp.Created = at.UTC().Truncate(time.Millisecond)
	return th.putCP(cp, md)
}

// putCP stores cp and md, checks the returned Ref and advances the thread.
// It fails the test on error.
func (th *thread) putCP(cp checkpoint.Checkpoint, md checkpoint.Metadata) stored {
	th.t.Helper()
	st, err := th.tryPut(cp, md)
	if err != nil {
		th.t.Fatal(err)
	}
	return st
}

// tryPut is putCP returning the error instead of failing the test; it may be
// called from any goroutine.
func (th *thread) tryPut(cp checkpoint.Checkpoint, md checkpoint.Metadata) (stored, error) {
	ref, err := th.s.Put(context.Background(), at(th.ref, md.Parent), cp, md)
	if err != nil {
		return stored{}, fmt.Errorf("put %s, checkpoint %s: %w", th.ref, cp.ID, err)
	}
	want := checkpoint.Ref{ThreadID: th.ref.ThreadID, Namespace: th.ref.Namespace, ID: cp.ID}
	if ref != want {
		return stored{}, fmt.Errorf("put returned %+v, want %+v", ref, want)
	}
	th.latest = cp.ID
	th.step++
	th.versions = maps.Clone(cp.Versions)
	return stored{ref: ref, cp: cp, md: md}, nil
}

// get reads ref and fails the test on error.
func get(t *testing.T, s checkpoint.Saver, ref checkpoint.Ref) *checkpoint.Tuple {
	t.Helper()
	tup, err := s.Get(context.Background(), ref)
	if err != nil {
		t.Fatalf("Get(%s): %v", ref, err)
	}
	if tup == nil {
		t.Fatalf("Get(%s) returned a nil Tuple and no error", ref)
	}
	return tup
}

// checkGet compares Get(ref) with want.
func checkGet(t *testing.T, s checkpoint.Saver, ref checkpoint.Ref, want *checkpoint.Tuple) {
	t.Helper()
	got := get(t, s, ref)
	if diff := cmp.Diff(want, got, cmpOpts); diff != "" {
		t.Errorf("Get(%s) mismatch (-want +got):\n%s", ref, diff)
	}
}

// checkNotFound checks that Get(ref) fails with ErrNotFound and an error
// naming the thread (and the checkpoint, when ref has one).
func checkNotFound(t *testing.T, s checkpoint.Saver, ref checkpoint.Ref) {
	t.Helper()
	tup, err := s.Get(context.Background(), ref)
	if !errors.Is(err, checkpoint.ErrNotFound) {
		t.Errorf("Get(%s) error = %v, want ErrNotFound", ref, err)
		return
	}
	if tup != nil {
		t.Errorf("Get(%s) returned a Tuple with ErrNotFound: %+v", ref, tup)
	}
	checkErrorNames(t, err, ref.ThreadID, ref.ID)
}

// checkErrorNames checks that err's text contains every non-empty part.
func checkErrorNames(t *testing.T, err error, parts ...string) {
	t.Helper()
	for _, p := range parts {
		if p != "" && !strings.Contains(err.Error(), p) {
			t.Errorf("error %q does not name %q", err, p)
		}
	}
}

// collect drains a List sequence, stopping at the first error.
func collect(seq iter.Seq2[*checkpoint.Tuple, error]) ([]*checkpoint.Tuple, error) {
	var out []*checkpoint.Tuple
	for tup, err := range seq {
		if err != nil {
			return out, err
		}
		out = append(out, tup)
	}
	return out, nil
}

// listIDs lists ref's namespace with opts and returns the checkpoint IDs,
// failing the test on error.
func listIDs(t *testing.T, s checkpoint.Saver, ref checkpoint.Ref, opts checkpoint.ListOptions) []string {
	t.Helper()
	tuples, err := collect(s.List(context.Background(), ref, opts))
	if err != nil {
		t.Fatalf("List(%s, %+v): %v", ref, opts, err)
	}
	return ids(tuples)
}

func ids(tuples []*checkpoint.Tuple) []string {
	out := []string{}
	for _, tup := range tuples {
		out = append(out, tup.Ref.ID)
	}
	return out
}

func idsOf(sts ...stored) []string {
	out := []string{}
	for _, st := range sts {
		out = append(out, st.ref.ID)
	}
	return out
}

// checkIDs compares two ID lists.
func checkIDs(t *testing.T, what string, want, got []string) {
	t.Helper()
	if diff := cmp.Diff(want, got, cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("%s: checkpoint IDs mismatch (-want +got):\n%s", what, diff)
	}
}

// at returns ref naming checkpoint id: in Put, the checkpoint the writer
// read as the namespace's latest.
func at(ref checkpoint.Ref, id string) checkpoint.Ref {
	ref.ID = id
	return ref
}
