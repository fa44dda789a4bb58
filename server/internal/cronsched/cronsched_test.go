package cronsched

import (
	"strings"
	"testing"
	"time"
)

func TestParseErrors(t *testing.T) {
	for _, tc := range []struct{ expr, tz, want string }{
		{"", "", "empty"},
		{"* * * *", "", "5-field"},
		{"* * * * * *", "", "5-field"},
		{"61 * * * *", "", "5-field"},
		{"* * * * mon-xyz", "", "5-field"},
		{"CRON_TZ=UTC * * * * *", "", "timezone"},
		{"@every 1m", "", "interval"},
		{"* * * * *", "Mars/Olympus", "timezone"},
	} {
		_, err := Parse(tc.expr, tc.tz)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Parse(%q, %q) = %v, want an error naming %q", tc.expr, tc.tz, err, tc.want)
		}
	}
}

func TestNext(t *testing.T) {
	at := time.Date(2026, 3, 10, 10, 7, 30, 0, time.UTC)
	for _, tc := range []struct {
		expr, tz string
		want     time.Time
	}{
		{"* * * * *", "", time.Date(2026, 3, 10, 10, 8, 0, 0, time.UTC)},
		{"*/15 * * * *", "", time.Date(2026, 3, 10, 10, 15, 0, 0, time.UTC)},
		{"0 9 * * *", "", time.Date(2026, 3, 11, 9, 0, 0, 0, time.UTC)},
		{"0 9 * * *", "Europe/Paris", time.Date(2026, 3, 11, 8, 0, 0, 0, time.UTC)},
		{"@hourly", "", time.Date(2026, 3, 10, 11, 0, 0, 0, time.UTC)},
		{"0 0 * * sun", "", time.Date(2026, 3, 15, 0, 0, 0, 0, time.UTC)},
	} {
		s, err := Parse(tc.expr, tc.tz)
		if err != nil {
			t.Fatalf("Parse(%q): %v", tc.expr, err)
		}
		if got := s.Next(at); !got.Equal(tc.want) || got.Location() != time.UTC {
			t.Errorf("Next(%q in %q) = %v, want %v", tc.expr, tc.tz, got, tc.want)
		}
	}
	s, _ := Parse("* * * * *", "")
	if got := s.NextBefore(at, at.Add(10*time.Second)); !got.IsZero() {
		t.Errorf("NextBefore past the end = %v, want zero", got)
	}
	if got := s.NextBefore(at, at.Add(time.Minute)); got.IsZero() {
		t.Error("NextBefore within the end = zero")
	}
	if got := s.Next(at.Truncate(time.Minute)); !got.Equal(at.Truncate(time.Minute).Add(time.Minute)) {
		t.Errorf("Next from a slot = %v, want the following slot", got)
	}
}
