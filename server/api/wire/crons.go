package wire

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/trellis-agents/trellis/server/internal/cronsched"
)

// CronCreate is the cron part of POST /runs/crons and
// POST /threads/{thread_id}/runs/crons. The same body carries every
// RunCreate field (input, config, context, stream_mode, ...): those are
// the payload of the runs the cron creates, decoded and checked as a
// RunCreate.
type CronCreate struct {
	// AssistantID is the assistant (or graph ID) to run. Required.
	AssistantID string `json:"assistant_id"`
	// Schedule is a 5-field cron expression (minute hour day-of-month
	// month day-of-week), in Timezone. Required.
	Schedule string `json:"schedule"`
	// Timezone is the IANA time zone of Schedule (default UTC).
	Timezone string `json:"timezone,omitempty"`
	// EndTime, when set, is the instant (RFC 3339) after which the cron
	// stops firing.
	EndTime string `json:"end_time,omitempty"`
	// Enabled pauses the cron when false (default true).
	Enabled *bool `json:"enabled,omitempty"`
	// OnRunCompleted is what a stateless cron does with each run's thread
	// when the run ends (default "delete"). Ignored for a thread cron.
	OnRunCompleted OnRunCompleted `json:"on_run_completed,omitempty"`
	// Metadata is stored on the cron (and, in the payload, on its runs).
	Metadata Metadata `json:"metadata,omitempty"`
}

// Validate checks the schedule and time zone.
func (b *CronCreate) Validate() []FieldError {
	errs := nonEmpty("/assistant_id", b.AssistantID, "an assistant ID or graph ID")
	errs = append(errs, endTimeErrors(b.EndTime)...)
	return append(errs, ScheduleErrors(b.Schedule, b.Timezone)...)
}

// Validate checks the end time.
func (b *CronPatch) Validate() []FieldError { return endTimeErrors(b.EndTime) }

func endTimeErrors(s string) []FieldError {
	if _, err := ParseEndTime(s); err != nil {
		return []FieldError{{Pointer: "/end_time", Detail: err.Error()}}
	}
	return nil
}

// ParseEndTime parses an end_time (RFC 3339; "" is none, the zero time).
func ParseEndTime(s string) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("must be an RFC 3339 time such as 2030-01-01T00:00:00Z, not %q", s)
	}
	return t.UTC(), nil
}

// ScheduleErrors checks a schedule in a time zone, naming the field at
// fault.
func ScheduleErrors(schedule, tz string) []FieldError {
	if _, err := cronsched.Parse(schedule, ""); err != nil {
		return []FieldError{{Pointer: "/schedule", Detail: err.Error()}}
	}
	if _, err := cronsched.Parse(schedule, tz); err != nil {
		return []FieldError{{Pointer: "/timezone", Detail: err.Error()}}
	}
	return nil
}

// CronPatch is the body of PATCH /runs/crons/{cron_id}. Absent fields keep
// their value. Besides these, the payload fields input, config, context,
// webhook, interrupt_before, interrupt_after, stream_mode,
// stream_subgraphs, stream_resumable and durability replace the payload's.
type CronPatch struct {
	Schedule       *string        `json:"schedule,omitempty"`
	Timezone       *string        `json:"timezone,omitempty"`
	EndTime        string         `json:"end_time,omitempty"` // RFC 3339
	Enabled        *bool          `json:"enabled,omitempty"`
	OnRunCompleted OnRunCompleted `json:"on_run_completed,omitempty"`
	// Metadata is merged into the cron's, key by key.
	Metadata Metadata `json:"metadata,omitempty"`
}

// CronPayloadFields are the run-create fields a CronPatch replaces in the
// payload.
var CronPayloadFields = []string{"input", "config", "context", "webhook", "interrupt_before", "interrupt_after",
	"stream_mode", "stream_subgraphs", "stream_resumable", "durability"}

// CronSearch is the body of POST /runs/crons/search.
type CronSearch struct {
	AssistantID string `json:"assistant_id,omitempty"`
	ThreadID    string `json:"thread_id,omitempty"`
	Enabled     *bool  `json:"enabled,omitempty"`
	// Metadata keeps crons whose metadata contains these members.
	Metadata Metadata `json:"metadata,omitempty"`
	// Limit is the page size, 1 to MaxLimit (default DefaultLimit).
	Limit  *int `json:"limit,omitempty"`
	Offset int  `json:"offset,omitempty"`
	// SortBy and SortOrder order the results (default created_at desc).
	SortBy    CronSortBy `json:"sort_by,omitempty"`
	SortOrder SortOrder  `json:"sort_order,omitempty"`
	// Select limits each cron to these fields.
	Select []CronSelectField `json:"select,omitempty"`
}

// Validate checks limit and offset.
func (b *CronSearch) Validate() []FieldError { return pageErrors("", b.Limit, b.Offset) }

// CronCount is the body of POST /runs/crons/count.
type CronCount struct {
	AssistantID string   `json:"assistant_id,omitempty"`
	ThreadID    string   `json:"thread_id,omitempty"`
	Metadata    Metadata `json:"metadata,omitempty"`
}

// Cron is a cron in LangGraph's shape.
type Cron struct {
	CronID         string          `json:"cron_id"`
	AssistantID    string          `json:"assistant_id"`
	ThreadID       *string         `json:"thread_id"`
	OnRunCompleted string          `json:"on_run_completed,omitempty"`
	EndTime        *Time           `json:"end_time"`
	Schedule       string          `json:"schedule"`
	Timezone       *string         `json:"timezone"`
	CreatedAt      Time            `json:"created_at"`
	UpdatedAt      Time            `json:"updated_at"`
	Payload        json.RawMessage `json:"payload"`
	UserID         *string         `json:"user_id"`
	NextRunDate    *Time           `json:"next_run_date"`
	Metadata       Metadata        `json:"metadata"`
	Enabled        bool            `json:"enabled"`
}

// OnRunCompleted is what a stateless cron does with a run's thread.
type OnRunCompleted string

// Values lists the allowed values.
func (OnRunCompleted) Values() []string { return []string{"delete", "keep"} }

// CronSortBy orders cron searches.
type CronSortBy string

// Values lists the allowed values.
func (CronSortBy) Values() []string {
	return []string{"cron_id", "assistant_id", "thread_id", "created_at", "updated_at", "next_run_date"}
}

// CronSelectField is a field a cron search may return.
type CronSelectField string

// Values lists the allowed values.
func (CronSelectField) Values() []string {
	return []string{"cron_id", "assistant_id", "thread_id", "end_time", "schedule", "created_at", "updated_at",
		"user_id", "payload", "next_run_date", "metadata", "now", "timezone", "enabled", "on_run_completed"}
}
