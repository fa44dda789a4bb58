package redis

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/trellis-agents/trellis/checkpoint"
)

// Key names. See the package documentation for the layout.

var (
	threadEscaper    = strings.NewReplacer("%", "%25", "{", "%7B", "}", "%7D")
	namespaceEscaper = strings.NewReplacer("%", "%25", ":", "%3A")
)

// escNamespace escapes a namespace for use inside a key: it then holds no
// ':', so the checkpoint ID after it is unambiguous.
func escNamespace(ns string) string { return namespaceEscaper.Replace(ns) }

// threadBase is the start of every key of a thread: the prefix, then the
// escaped thread ID as the Redis Cluster hash tag.
func (s *Saver) threadBase(thread string) string {
	return s.prefix + "{" + threadEscaper.Replace(thread) + "}:"
}

func (s *Saver) indexKey() string { return s.prefix + "threads" }

// nsKeys are the keys of one thread namespace.
type nsKeys struct {
	base       string // the thread's key base
	namespaces string // set of the thread's escaped namespaces
	ids        string // zset of checkpoint IDs, all scored 0
	blobs      string // hash of blobs: blobField -> encodeBlob
	cpPrefix   string // a checkpoint's hash is cpPrefix + ID
	escNS      string
}

func (s *Saver) keys(thread, namespace string) nsKeys {
	base := s.threadBase(thread)
	ns := escNamespace(namespace)
	return nsKeys{
		base:       base,
		namespaces: base + "ns",
		ids:        base + "ids:" + ns,
		blobs:      base + "blobs:" + ns,
		cpPrefix:   base + "cp:" + ns + ":",
		escNS:      ns,
	}
}

// Checkpoint hash fields. A field "w:" + task ID holds that task's pending
// writes.
const (
	fieldCheckpoint = "cp" // storedCheckpoint JSON
	fieldMetadata   = "md" // checkpoint.Metadata JSON
	fieldVersions   = "v"  // encodeVersions
	fieldCreated    = "t"  // timeKey of Checkpoint.Created
	fieldSum        = "s"  // recordSum of the four fields above
	writesPrefix    = "w:"
)

// storedCheckpoint is a checkpoint as stored in its hash's "cp" field:
// without ID (it is in the key), versions (field "v") and blobs (the
// namespace's blobs hash).
type storedCheckpoint struct {
	Next     []checkpoint.Task   `json:"next,omitempty"`
	Waiting  map[string][]string `json:"waiting,omitempty"`
	Deferred []string            `json:"deferred,omitempty"`
	Created  *time.Time          `json:"created"` // always written: nil means damaged
}

// blobField names a blob in its namespace's hash: key, NUL, version. The
// version is after the last NUL, so keys may hold NULs too.
func blobField(key string, version uint64) string {
	return key + "\x00" + strconv.FormatUint(version, 10)
}

// encodeBlob is a blob's stored value: a header line, "F" or "D", the base
// version in decimal, "," and checkpoint.BlobChecksum in 8 hex digits,
// then the data as given.
func encodeBlob(b checkpoint.Blob) []byte {
	kind := byte('F')
	if b.Kind == checkpoint.Delta {
		kind = 'D'
	}
	out := make([]byte, 0, len(b.Data)+31)
	out = append(out, kind)
	out = strconv.AppendUint(out, b.Base, 10)
	out = append(out, ',')
	out = appendHex32(out, checkpoint.BlobChecksum(b))
	out = append(out, '\n')
	return append(out, b.Data...)
}

// appendHex32 appends v as 8 lowercase hex digits.
func appendHex32(out []byte, v uint32) []byte {
	const digits = "0123456789abcdef"
	for shift := 28; shift >= 0; shift -= 4 {
		out = append(out, digits[(v>>uint(shift))&0xf])
	}
	return out
}

// parseHex32 parses 8 hex digits written by appendHex32.
func parseHex32(s string) (uint32, bool) {
	if len(s) != 8 {
		return 0, false
	}
	v, err := strconv.ParseUint(s, 16, 32)
	return uint32(v), err == nil
}

// errBadSum marks a blob whose data fails its checksum.
var errBadSum = fmt.Errorf("it fails its checksum: %w", checkpoint.ErrCorrupt)

// decodeBlob parses a value written by encodeBlob, or by the versions
// before checksums (no "," and checksum in the header), and checks the
// checksum when there is one.
func decodeBlob(key string, version uint64, val string) (checkpoint.Blob, error) {
	nl := strings.IndexByte(val, '\n')
	if nl < 2 {
		return checkpoint.Blob{}, errors.New("no header")
	}
	header := val[:nl]
	sumText, hasSum := "", false
	if comma := strings.IndexByte(header, ','); comma >= 0 {
		header, sumText, hasSum = header[:comma], header[comma+1:], true
	}
	val = header + val[nl:]
	nl = len(header)
	var kind checkpoint.BlobKind
	switch val[0] {
	case 'F':
		kind = checkpoint.Full
	case 'D':
		kind = checkpoint.Delta
	default:
		return checkpoint.Blob{}, fmt.Errorf("unknown kind %q", val[0])
	}
	base, err := parseDecimal(val[1:nl])
	if err != nil {
		return checkpoint.Blob{}, fmt.Errorf("base: %w", err)
	}
	b := checkpoint.Blob{Key: key, Version: version, Kind: kind, Base: base}
	if data := val[nl+1:]; data != "" {
		b.Data = json.RawMessage(data)
	}
	if hasSum {
		sum, ok := parseHex32(sumText)
		if !ok {
			return checkpoint.Blob{}, fmt.Errorf("bad checksum %q in the header: %w", sumText, checkpoint.ErrCorrupt)
		}
		if sum != checkpoint.BlobChecksum(b) {
			return checkpoint.Blob{}, errBadSum
		}
	}
	return b, nil
}

// recordSum is the "s" field of a checkpoint's hash: the CRC-32C of its
// "cp", "md", "v" and "t" fields, each followed by a NUL, in 8 hex digits.
func recordSum(cp, md, versions, created string) string {
	sum := checkpoint.ChecksumString(0, cp, "\x00", md, "\x00", versions, "\x00", created, "\x00")
	return string(appendHex32(nil, sum))
}

// encodeWrites is the stored value of a task's pending writes: "C", the
// CRC-32C of the JSON in 8 hex digits, "\n", then the JSON.
func encodeWrites(js []byte) string {
	out := make([]byte, 0, len(js)+10)
	out = append(out, 'C')
	out = appendHex32(out, checkpoint.Checksum(0, js))
	out = append(out, '\n')
	return string(append(out, js...))
}

// decodeWritesValue returns the JSON of a value written by encodeWrites,
// after checking its checksum, or the value itself when it was written
// before checksums (it then starts with "[").
func decodeWritesValue(val string) (string, error) {
	if !strings.HasPrefix(val, "C") {
		return val, nil
	}
	if len(val) < 10 || val[9] != '\n' {
		return "", fmt.Errorf("bad checksum header: %w", checkpoint.ErrCorrupt)
	}
	sum, ok := parseHex32(val[1:9])
	if !ok {
		return "", fmt.Errorf("bad checksum header: %w", checkpoint.ErrCorrupt)
	}
	js := val[10:]
	if checkpoint.ChecksumString(0, js) != sum {
		return "", fmt.Errorf("they fail their checksum: %w", checkpoint.ErrCorrupt)
	}
	return js, nil
}

// parseDecimal parses a canonical decimal uint64 (no sign, no leading
// zeros), the form the scripts compare.
func parseDecimal(s string) (uint64, error) {
	v, err := strconv.ParseUint(s, 10, 64)
	if err != nil || strconv.FormatUint(v, 10) != s {
		return 0, fmt.Errorf("%q is not a canonical decimal", s)
	}
	return v, nil
}

// encodeVersions encodes a checkpoint's versions so that both Go and the
// Lua scripts read them exactly: for each key in sorted order, the key's
// length in bytes, ':', the key, the version in decimal, '\n'.
func encodeVersions(vs map[string]uint64) string {
	var sb strings.Builder
	for _, k := range slices.Sorted(maps.Keys(vs)) {
		sb.WriteString(strconv.Itoa(len(k)))
		sb.WriteByte(':')
		sb.WriteString(k)
		sb.WriteString(strconv.FormatUint(vs[k], 10))
		sb.WriteByte('\n')
	}
	return sb.String()
}

// decodeVersions parses encodeVersions' output strictly.
func decodeVersions(s string) (map[string]uint64, error) {
	var out map[string]uint64
	for s != "" {
		colon := strings.IndexByte(s, ':')
		if colon < 1 {
			return nil, errors.New("missing key length")
		}
		n, err := parseDecimal(s[:colon])
		if err != nil || n > uint64(len(s)-colon-1) {
			return nil, fmt.Errorf("bad key length %q", s[:colon])
		}
		rest := s[colon+1:]
		key := rest[:n]
		rest = rest[n:]
		nl := strings.IndexByte(rest, '\n')
		if nl < 0 {
			return nil, fmt.Errorf("key %q: missing end of line", key)
		}
		v, err := parseDecimal(rest[:nl])
		if err != nil {
			return nil, fmt.Errorf("key %q: version: %w", key, err)
		}
		if out == nil {
			out = make(map[string]uint64)
		}
		if _, dup := out[key]; dup {
			return nil, fmt.Errorf("key %q appears twice", key)
		}
		out[key] = v
		s = rest[nl+1:]
	}
	return out, nil
}

// timeKey encodes t so that byte order is time order: the Unix seconds with
// the sign bit flipped and the nanoseconds, both zero-padded. Prune compares
// it with the cutoff in Lua; the zero time sorts before every cutoff.
func timeKey(t time.Time) string {
	return fmt.Sprintf("%020d%09d", uint64(t.Unix())^(1<<63), t.Nanosecond())
}

// checkWrites validates PutWrites' input as checkpoint.Memory does and
// returns the writes with the task ID filled in, sorted by index.
func checkWrites(ref checkpoint.Ref, taskID string, writes []checkpoint.PendingWrite) ([]checkpoint.PendingWrite, error) {
	ws := make([]checkpoint.PendingWrite, len(writes))
	indexes := make(map[int]bool, len(writes))
	for i, w := range writes {
		if w.TaskID != "" && w.TaskID != taskID {
			return nil, fmt.Errorf("checkpoint/redis: put writes of task %q for %s: write %d belongs to task %q", taskID, ref, i, w.TaskID)
		}
		if indexes[w.Index] {
			return nil, fmt.Errorf("checkpoint/redis: put writes of task %q for %s: index %d is used twice", taskID, ref, w.Index)
		}
		indexes[w.Index] = true
		ws[i] = w
		ws[i].TaskID = taskID
	}
	slices.SortFunc(ws, func(a, b checkpoint.PendingWrite) int { return cmp.Compare(a.Index, b.Index) })
	return ws, nil
}
