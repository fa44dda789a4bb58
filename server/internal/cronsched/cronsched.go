// Package cronsched parses the schedules of crons (5-field cron
// expressions: minute hour day-of-month month day-of-week, with the usual
// ranges, lists, steps, names and @hourly-style descriptors) and computes
// their slots in a time zone. It wraps robfig/cron's parser, and only that:
// firing is the server's own loop.
package cronsched

import (
	"fmt"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
)

var parser = cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// Schedule is a parsed cron expression in a time zone.
type Schedule struct {
	s   cron.Schedule
	loc *time.Location
}

// Parse parses a 5-field expression evaluated in the IANA time zone tz
// (UTC when empty). The error says which part is wrong.
func Parse(expr, tz string) (Schedule, error) {
	if strings.TrimSpace(expr) == "" {
		return Schedule{}, fmt.Errorf("the schedule is empty; want a 5-field cron expression such as \"*/5 * * * *\"")
	}
	if strings.Contains(expr, "TZ=") {
		return Schedule{}, fmt.Errorf("the schedule %q sets a time zone; pass it as timezone instead", expr)
	}
	if strings.HasPrefix(strings.TrimSpace(expr), "@every") {
		return Schedule{}, fmt.Errorf("the schedule %q is an interval; want a 5-field cron expression", expr)
	}
	s, err := parser.Parse(expr)
	if err != nil {
		return Schedule{}, fmt.Errorf("the schedule %q is not a 5-field cron expression (minute hour day-of-month month day-of-week): %v", expr, err)
	}
	loc := time.UTC
	if tz != "" {
		if loc, err = time.LoadLocation(tz); err != nil {
			return Schedule{}, fmt.Errorf("the timezone %q is not an IANA time zone: %v", tz, err)
		}
	}
	return Schedule{s: s, loc: loc}, nil
}

// Next returns the first slot strictly after t, in UTC; zero when the
// expression has none (e.g. February 30th).
func (s Schedule) Next(t time.Time) time.Time {
	n := s.s.Next(t.In(s.loc))
	if n.IsZero() {
		return n
	}
	return n.UTC()
}

// NextBefore returns the first slot strictly after t that is not after
// end (zero end: no bound), or zero when there is none.
func (s Schedule) NextBefore(t, end time.Time) time.Time {
	n := s.Next(t)
	if n.IsZero() || (!end.IsZero() && n.After(end)) {
		return time.Time{}
	}
	return n
}
