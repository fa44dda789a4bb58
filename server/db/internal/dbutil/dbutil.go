// Package dbutil holds what the SQLite and PostgreSQL stores of record
// share: argument validation, defaults, JSON encoding of metadata and
// JSON containment, so that both answer the same calls the same way.
package dbutil

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/trellis-agents/trellis/internal/jsonmatch"
	"github.com/trellis-agents/trellis/server/db"
)

// DefaultLimit is the page size of a search with Limit 0.
const DefaultLimit = 10

// Now returns the current time as both stores keep it: UTC, whole
// microseconds (PostgreSQL's timestamptz precision).
func Now() time.Time { return time.Now().UTC().Truncate(time.Microsecond) }

// NewID returns a new ID for a row created without one: a UUIDv7, so IDs
// made later sort later.
func NewID() string {
	id, err := uuid.NewV7()
	if err != nil {
		return uuid.NewString()
	}
	return id.String()
}

// Invalid returns an error wrapping db.ErrInvalid with the message.
func Invalid(format string, args ...any) error {
	return fmt.Errorf("%s: %w", fmt.Sprintf(format, args...), db.ErrInvalid)
}

// Page returns the limit and offset of q, with the default limit for 0.
func Page(limit, offset int) (int, int, error) {
	if limit < 0 || offset < 0 {
		return 0, 0, Invalid("limit %d and offset %d must not be negative", limit, offset)
	}
	if limit == 0 {
		limit = DefaultLimit
	}
	return limit, offset, nil
}

// Sort columns of each resource: the Query.SortBy names they accept and the
// column each means.
var (
	AssistantSort = map[string]string{"": "created_at", "created_at": "created_at", "updated_at": "updated_at",
		"assistant_id": "assistant_id", "graph_id": "graph_id", "name": "name"}
	ThreadSort = map[string]string{"": "created_at", "created_at": "created_at", "updated_at": "updated_at",
		"thread_id": "thread_id", "status": "status"}
	CronSort = map[string]string{"": "created_at", "created_at": "created_at", "updated_at": "updated_at",
		"cron_id": "cron_id", "assistant_id": "assistant_id", "thread_id": "thread_id", "next_run_date": "next_run_at"}
)

// Order returns the SQL column and direction ("ASC" or "DESC") of q for a
// resource whose sort columns are cols.
func Order(q db.Query, cols map[string]string) (col, dir string, err error) {
	col, ok := cols[q.SortBy]
	if !ok {
		names := make([]string, 0, len(cols))
		for k := range cols {
			if k != "" {
				names = append(names, k)
			}
		}
		slices.Sort(names)
		return "", "", Invalid("sort_by %q is not one of %s", q.SortBy, strings.Join(names, ", "))
	}
	switch strings.ToLower(q.SortOrder) {
	case "", "desc":
		return col, "DESC", nil
	case "asc":
		return col, "ASC", nil
	}
	return "", "", Invalid(`sort_order %q is neither "asc" nor "desc"`, q.SortOrder)
}

// Object validates raw as a JSON object for field, returning "{}" when raw
// is empty.
func Object(field string, raw json.RawMessage) ([]byte, error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		return []byte("{}"), nil
	}
	v, err := jsonmatch.Decode(raw)
	if err != nil {
		return nil, Invalid("%s is not valid JSON: %v", field, err)
	}
	if _, ok := v.(map[string]any); !ok {
		return nil, Invalid("%s must be a JSON object, not %s", field, short(raw))
	}
	return raw, nil
}

// OptionalJSON validates raw as any JSON value for field; empty stays nil
// (stored as NULL).
func OptionalJSON(field string, raw json.RawMessage) ([]byte, error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		return nil, nil
	}
	if !json.Valid(raw) {
		return nil, Invalid("%s is not valid JSON: %s", field, short(raw))
	}
	return raw, nil
}

func short(b []byte) string {
	if len(b) > 40 {
		return string(b[:40]) + "..."
	}
	return string(b)
}

// EncodeMetadata encodes md as a JSON object ("{}" for nil).
func EncodeMetadata(md db.Metadata) ([]byte, error) {
	if md == nil {
		return []byte("{}"), nil
	}
	b, err := json.Marshal(md)
	if err != nil {
		return nil, Invalid("metadata does not encode as JSON: %v", err)
	}
	return b, nil
}

// DecodeMetadata decodes stored metadata, which must be a JSON object.
func DecodeMetadata(b []byte) (db.Metadata, error) {
	var md db.Metadata
	if err := json.Unmarshal(b, &md); err != nil {
		return nil, fmt.Errorf("decode metadata %s: %w", short(b), err)
	}
	if md == nil {
		return nil, fmt.Errorf("decode metadata: %s is not a JSON object", short(b))
	}
	return md, nil
}

// Merge returns old with the keys of patch set (top-level keys replace).
func Merge(old, patch db.Metadata) db.Metadata {
	out := make(db.Metadata, len(old)+len(patch))
	for k, v := range old {
		out[k] = v
	}
	for k, v := range patch {
		out[k] = v
	}
	return out
}

// Filter is a decoded containment filter; nil matches everything.
type Filter struct{ v any }

// Empty reports whether the filter matches everything.
func (f Filter) Empty() bool { return f.v == nil }

// MetadataFilter turns a metadata filter into a Filter.
func MetadataFilter(md db.Metadata) (Filter, error) {
	if len(md) == 0 {
		return Filter{}, nil
	}
	b, err := json.Marshal(md)
	if err != nil {
		return Filter{}, Invalid("metadata filter does not encode as JSON: %v", err)
	}
	v, err := jsonmatch.Decode(b)
	if err != nil {
		return Filter{}, Invalid("metadata filter: %v", err)
	}
	return Filter{v}, nil
}

// ObjectFilter turns a JSON object filter (e.g. on thread values) into a
// Filter; an empty raw or {} matches everything.
func ObjectFilter(field string, raw json.RawMessage) (Filter, error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		return Filter{}, nil
	}
	v, err := jsonmatch.Decode(raw)
	if err != nil {
		return Filter{}, Invalid("%s filter is not valid JSON: %v", field, err)
	}
	m, ok := v.(map[string]any)
	if !ok {
		return Filter{}, Invalid("%s filter must be a JSON object, not %s", field, short(raw))
	}
	if len(m) == 0 {
		return Filter{}, nil
	}
	return Filter{v}, nil
}

// JSON returns the filter as JSON text, for PostgreSQL's @>.
func (f Filter) JSON() []byte {
	b, _ := json.Marshal(f.v)
	return b
}

// Match reports whether the stored JSON doc contains the filter, with
// PostgreSQL's jsonb @> semantics: an object contains another when it has
// every key of it with a value that contains the other's; an array
// contains another when each element of the other is contained by some
// element of it; scalars must be equal (numbers by value, so 1 matches 1.0;
// "1" never matches 1). Undecodable or missing documents match nothing.
func (f Filter) Match(doc []byte) bool {
	if f.v == nil {
		return true
	}
	if len(doc) == 0 {
		return false
	}
	v, err := jsonmatch.Decode(doc)
	if err != nil {
		return false
	}
	return Contains(v, f.v)
}

// Contains reports whether value contains want, both decoded by
// jsonmatch.Decode; see Filter.Match.
func Contains(value, want any) bool {
	switch w := want.(type) {
	case map[string]any:
		v, ok := value.(map[string]any)
		if !ok {
			return false
		}
		for k, wv := range w {
			vv, ok := v[k]
			if !ok || !Contains(vv, wv) {
				return false
			}
		}
		return true
	case []any:
		v, ok := value.([]any)
		if !ok {
			return false
		}
		for _, we := range w {
			found := false
			for _, ve := range v {
				if Contains(ve, we) {
					found = true
					break
				}
			}
			if !found {
				return false
			}
		}
		return true
	}
	return jsonmatch.Equal(value, want)
}

// ThreadStatus validates a thread status; "" is allowed when optional.
func ThreadStatus(s db.ThreadStatus, optional bool) error {
	switch s {
	case db.ThreadIdle, db.ThreadBusy, db.ThreadInterrupted, db.ThreadError:
		return nil
	case "":
		if optional {
			return nil
		}
	}
	return Invalid("thread status %q is not one of idle, busy, interrupted, error", s)
}

// RunStatus validates a run status; "" is allowed when optional.
func RunStatus(s db.RunStatus, optional bool) error {
	switch s {
	case db.RunPending, db.RunRunning, db.RunSuccess, db.RunError, db.RunTimeout, db.RunInterrupted:
		return nil
	case "":
		if optional {
			return nil
		}
	}
	return Invalid("run status %q is not one of pending, running, success, error, timeout, interrupted", s)
}

// TerminalStatus validates a status a run ends with.
func TerminalStatus(s db.RunStatus) error {
	if err := RunStatus(s, false); err != nil {
		return err
	}
	if !s.Terminal() {
		return Invalid("run status %q is not terminal; use success, error, timeout or interrupted", s)
	}
	return nil
}

// CancelAction validates a RequestCancel action.
func CancelAction(a string) error {
	if a != "interrupt" && a != "rollback" {
		return Invalid(`cancel action %q is neither "interrupt" nor "rollback"`, a)
	}
	return nil
}

// TTL validates a lease duration.
func TTL(ttl time.Duration) error {
	if ttl <= 0 {
		return Invalid("lease duration %v must be positive", ttl)
	}
	return nil
}

// Tenant validates a tenant name: never empty, so a handler that forgot to
// set it fails loudly instead of sharing an anonymous tenant.
func Tenant(tenant string) error {
	if tenant == "" {
		return Invalid("the tenant is empty; the service passes its default tenant when auth is off")
	}
	return nil
}

// AfterRun is the status FinishRun leaves a thread that is still busy
// when its run ends with status (one whose outcome the run service did not
// record): error after an error or timeout, else idle.
func AfterRun(status db.RunStatus) db.ThreadStatus {
	if status == db.RunError || status == db.RunTimeout {
		return db.ThreadError
	}
	return db.ThreadIdle
}

// ThreadTTL checks a thread's TTL (nil: none) and returns what is stored:
// its duration in microseconds (nil for none) and its strategy ("" for
// none).
func ThreadTTL(t *db.TTL) (us any, strategy string, err error) {
	if t == nil {
		return nil, "", nil
	}
	if t.Duration < time.Microsecond {
		return nil, "", Invalid("ttl %s is not positive", t.Duration)
	}
	switch t.Strategy {
	case db.TTLDelete, db.TTLKeepLatest:
	default:
		return nil, "", Invalid("ttl strategy %q is neither %q nor %q", t.Strategy, db.TTLDelete, db.TTLKeepLatest)
	}
	return t.Duration.Microseconds(), t.Strategy, nil
}

// ScanTTL rebuilds a thread's TTL from its stored duration in
// microseconds (NULL: none) and strategy.
func ScanTTL(us *int64, strategy string) *db.TTL {
	if us == nil {
		return nil
	}
	return &db.TTL{Duration: time.Duration(*us) * time.Microsecond, Strategy: strategy}
}

// Cron validates a cron before it is stored: IDs and schedule present,
// payload a JSON object, on_run_completed "delete" or "keep" (empty:
// "delete"). It returns the payload and metadata to store.
func Cron(c *db.Cron) (payload, md []byte, err error) {
	if c.AssistantID == "" {
		return nil, nil, Invalid("the cron's assistant ID is empty")
	}
	if c.Schedule == "" {
		return nil, nil, Invalid("the cron's schedule is empty")
	}
	if c.ID != "" {
		if err := db.CheckID("cron", c.ID); err != nil {
			return nil, nil, err
		}
	}
	switch c.OnRunCompleted {
	case "":
		c.OnRunCompleted = "delete"
	case "delete", "keep":
	default:
		return nil, nil, Invalid(`on_run_completed %q is neither "delete" nor "keep"`, c.OnRunCompleted)
	}
	if payload, err = Object("payload", c.Payload); err != nil {
		return nil, nil, err
	}
	if md, err = EncodeMetadata(c.Metadata); err != nil {
		return nil, nil, err
	}
	return payload, md, nil
}

// MaxRunSearch bounds RunSearch.Limit.
const MaxRunSearch = 1000

// RunSearch checks q and returns its limit and its metadata keys in order,
// so that backends build the same query for the same search.
func RunSearch(q db.RunSearch) (limit int, keys []string, err error) {
	if q.AssistantID == "" {
		return 0, nil, Invalid("a run search needs an assistant ID")
	}
	if q.Limit < 0 || q.Limit > MaxRunSearch {
		return 0, nil, Invalid("run search limit %d is out of range: give 1 to %d (or 0, for %d)", q.Limit, MaxRunSearch, DefaultLimit)
	}
	limit = cmp.Or(q.Limit, DefaultLimit)
	for _, k := range append(slices.Sorted(maps.Keys(q.Metadata)), q.Missing...) {
		if k == "" || strings.ContainsAny(k, "\"\\.") {
			return 0, nil, Invalid("run search metadata key %q: give a plain name, without '\"', '\\' or '.'", k)
		}
	}
	return limit, slices.Sorted(maps.Keys(q.Metadata)), nil
}

// RunVersion checks a run's assistant version and returns it as a column
// value: nil (NULL) for 0, which runs the assistant's latest version.
func RunVersion(v int) (any, error) {
	if v < 0 {
		return nil, Invalid("a run's assistant version is 1 or more (0: the latest), not %d", v)
	}
	if v == 0 {
		return nil, nil
	}
	return int64(v), nil
}
