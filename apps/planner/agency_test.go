package planner

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"github.com/trellis-agents/trellis/tool"
)

// named returns the agency's tool with this name.
func named(t *testing.T, a *Agency, name string) tool.Tool {
	t.Helper()
	for _, tl := range a.Tools() {
		if tl.Info().Name == name {
			return tl
		}
	}
	t.Fatalf("the agency has no tool %q", name)
	return nil
}

// use runs the agency's tool name with raw JSON arguments, as the tool
// node would.
func use(t *testing.T, a *Agency, name, args string) (string, error) {
	t.Helper()
	return named(t, a, name).Call(context.Background(), json.RawMessage(args))
}

func TestAgencyTools(t *testing.T) {
	a := NewAgency()
	cases := []struct {
		name, tool, args string
		want             string // in the result, or in the error when bad
		bad              bool
	}{
		{"venues that fit", SearchVenues, `{"city":"lisbon","people":12}`, "Casa do Rio: up to 20 people, €900 per day", false},
		{"no venue fits", SearchVenues, `{"city":"Prague","people":30}`, "No venue in Prague holds 30 people.", false},
		{"unknown city", SearchVenues, `{"city":"Oslo","people":5}`, `no venues in "Oslo"`, true},
		{"too many people", SearchVenues, `{"city":"Lisbon","people":500}`, "1 to 40 people", true},
		{"missing argument", SearchVenues, `{"city":"Lisbon"}`, "people", true},
		{"activities", ListActivities, `{"city":"Berlin"}`, "escape room: €35 per person", false},
		{"free days", CheckAvailability, `{"venue":"quinta verde","days":3}`, "Quinta Verde is free for 3 days from Jun 16.", false},
		{"never free", CheckAvailability, `{"venue":"Kiez Studio","days":5}`, "not free for 5 days", false},
		{"unknown venue", CheckAvailability, `{"venue":"Nowhere","days":2}`, `no venue is named "Nowhere"`, true},
		{"budget", EstimateBudget, `{"venue":"Quinta Verde","people":12,"days":2,"activity":"cooking class"}`, "Quinta Verde: €3100 in all", false},
		{"budget without activity", EstimateBudget, `{"venue":"Casa do Rio","people":10,"days":1}`, "€1350 in all", false},
		{"activity elsewhere", EstimateBudget, `{"venue":"Casa do Rio","people":10,"days":1,"activity":"escape room"}`, `no activity "escape room" in Lisbon`, true},
		{"zero days", EstimateBudget, `{"venue":"Casa do Rio","people":10,"days":0}`, "1 to 5 days", true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := use(t, a, c.tool, c.args)
			switch {
			case c.bad && err == nil:
				t.Fatalf("accepted: %q", got)
			case c.bad && !strings.Contains(err.Error(), c.want):
				t.Errorf("err = %v; want it to say %q", err, c.want)
			case !c.bad && err != nil:
				t.Fatal(err)
			case !c.bad && !strings.Contains(got, c.want):
				t.Errorf("result = %q; want it to hold %q", got, c.want)
			}
		})
	}
	if a.Calls(SearchVenues) != 4 || len(a.Bookings()) != 0 {
		t.Errorf("search_venues counted %d calls; bookings %v", a.Calls(SearchVenues), a.Bookings())
	}
}

// Booking takes a free window: the same days cannot be booked twice, and
// a venue too small or days not free are refused.
func TestBooking(t *testing.T) {
	a := NewAgency()
	book := `{"venue":"Quinta Verde","start":"jun 9","days":2,"people":12}`
	got, err := use(t, a, BookVenue, book)
	if err != nil || !strings.Contains(got, "Confirmation OFF-001") {
		t.Fatalf("first booking: %q, %v", got, err)
	}
	if _, err := use(t, a, BookVenue, book); err == nil || !strings.Contains(err.Error(), "not free for 2 days") {
		t.Errorf("booking the same days again: %v", err)
	}
	if got, _ := use(t, a, CheckAvailability, `{"venue":"Quinta Verde","days":2}`); got != "Quinta Verde is free for 2 days from Jun 16." {
		t.Errorf("after booking: %q", got)
	}
	if _, err := use(t, a, BookVenue, `{"venue":"Miradouro Hall","start":"Jun 2","days":2,"people":12}`); err == nil || !strings.Contains(err.Error(), "holds 8 people") {
		t.Errorf("booking a venue too small: %v", err)
	}
	if got := a.Bookings(); len(got) != 1 || got[0].String() != "OFF-001: Quinta Verde from Jun 9, 2 days, 12 people" {
		t.Errorf("bookings = %v", got)
	}
	// Booking is a write tool: it waits for approval, and says what it does.
	for _, tl := range a.Tools() {
		in := tl.Info()
		if in.ReadOnly == (in.Name == BookVenue) {
			t.Errorf("tool %s: read-only %v", in.Name, in.ReadOnly)
		}
		if in.Name == BookVenue {
			s, ok := tl.(tool.Summarizer)
			if !ok || s.Summarize(json.RawMessage(book)) != "Book Quinta Verde for 12 people, 2 days from jun 9" {
				t.Errorf("the booking's summary is missing or wrong")
			}
			if got := s.Summarize(json.RawMessage(`{"venue":"Old Town Rooms","people":5,"days":1,"start":"Jun 3"}`)); got != "Book Old Town Rooms for 5 people, 1 day from Jun 3" {
				t.Errorf("a one-day booking's summary = %q, want \"1 day\" in the singular", got)
			}
		}
	}
}

// Parallel steps call the agency at once.
func TestAgencyConcurrentCalls(t *testing.T) {
	a := NewAgency()
	check, book := named(t, a, CheckAvailability), named(t, a, BookVenue)
	ctx := context.Background()
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			_, _ = check.Call(ctx, json.RawMessage(`{"venue":"Casa do Rio","days":2}`))
			_, _ = book.Call(ctx, json.RawMessage(`{"venue":"Casa do Rio","start":"Jun 23","days":2,"people":10}`))
		})
	}
	wg.Wait()
	if a.Calls(CheckAvailability) != 8 || a.Calls(BookVenue) != 8 || len(a.Bookings()) != 1 {
		t.Errorf("calls %d and %d, bookings %v; want 8, 8 and one booking", a.Calls(CheckAvailability), a.Calls(BookVenue), a.Bookings())
	}
}
