package planner

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/trellis-agents/trellis/apps"
	"github.com/trellis-agents/trellis/tool"
)

// The agency's prices, in euros.
const (
	// CateringPerPersonDay is the catering price per person and day.
	CateringPerPersonDay = 45
	// MaxPeople is the largest group the agency plans for.
	MaxPeople = 40
)

// venue is a place the agency can book: its city, how many people it
// holds, its day rate and the windows in which it is free.
type venue struct {
	Name     string
	City     string
	Capacity int
	DayRate  int
	Area     string
	Free     []window
}

// window is a free period: the first day and how many days in a row.
type window struct {
	Start string
	Days  int
}

// activity is a team activity in a city, priced per person.
type activity struct {
	Name      string
	City      string
	PerPerson int
	Length    string
	Note      string
}

func sampleVenues() []venue {
	return []venue{
		{Name: "Casa do Rio", City: "Lisbon", Capacity: 20, DayRate: 900, Area: "riverside, 10 min from the centre", Free: []window{{"Jun 23", 3}}},
		{Name: "Quinta Verde", City: "Lisbon", Capacity: 14, DayRate: 650, Area: "garden estate, 25 min by train", Free: []window{{"Jun 9", 2}, {"Jun 16", 3}}},
		{Name: "Miradouro Hall", City: "Lisbon", Capacity: 8, DayRate: 400, Area: "old town rooftop", Free: []window{{"Jun 2", 5}}},
		{Name: "Spreeblick Loft", City: "Berlin", Capacity: 30, DayRate: 1200, Area: "canal-side loft", Free: []window{{"Jun 10", 2}}},
		{Name: "Kiez Studio", City: "Berlin", Capacity: 12, DayRate: 500, Area: "quiet courtyard studio", Free: []window{{"Jun 17", 3}}},
		{Name: "Vltava House", City: "Prague", Capacity: 16, DayRate: 700, Area: "by the river, near the old town", Free: []window{{"Jun 12", 2}}},
		{Name: "Old Town Rooms", City: "Prague", Capacity: 10, DayRate: 450, Area: "two linked meeting rooms", Free: []window{{"Jun 3", 4}}},
	}
}

func sampleActivities() []activity {
	return []activity{
		{Name: "tram tour", City: "Lisbon", PerPerson: 25, Length: "2 hours", Note: "guided, in the hills"},
		{Name: "cooking class", City: "Lisbon", PerPerson: 60, Length: "3 hours", Note: "can be fully vegetarian"},
		{Name: "sailing", City: "Lisbon", PerPerson: 70, Length: "half a day", Note: "weather permitting"},
		{Name: "street art walk", City: "Berlin", PerPerson: 20, Length: "2 hours", Note: "guided"},
		{Name: "escape room", City: "Berlin", PerPerson: 35, Length: "1 hour", Note: "teams of up to 6"},
		{Name: "river cruise", City: "Prague", PerPerson: 30, Length: "2 hours", Note: "dinner on board extra"},
	}
}

// Booking is a venue booked through the agency.
type Booking struct {
	Code   string
	Venue  string
	Start  string
	Days   int
	People int
	// Scope is the data scope (thread) of the run that booked it
	// (apps.WithScope), "" when the run had none.
	Scope string
}

func (b Booking) String() string {
	return fmt.Sprintf("%s: %s from %s, %d days, %d people", b.Code, b.Venue, b.Start, b.Days, b.People)
}

// Agency is the example's made-up events agency: venues with their free
// dates, activities, prices, and the bookings made. Its tools read it and
// book venues; it counts every tool call. It is safe for concurrent use
// (parallel steps call its tools at once).
type Agency struct {
	mu         sync.Mutex
	venues     []venue
	activities []activity
	bookings   []Booking
	calls      map[string]int
}

// NewAgency returns an agency holding the sample venues and activities in
// Lisbon, Berlin and Prague, with no bookings.
func NewAgency() *Agency {
	return &Agency{venues: sampleVenues(), activities: sampleActivities(), calls: map[string]int{}}
}

// Calls reports how many times the tool with this name ran.
func (a *Agency) Calls(name string) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.calls[name]
}

// Bookings returns the bookings made, in order.
func (a *Agency) Bookings() []Booking {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.bookings)
}

// BookingsIn returns the bookings made by runs of one scope, in order.
// The agency itself is shared (a venue booked by one thread is no longer
// free for another), as a real agency would be.
func (a *Agency) BookingsIn(scope string) []Booking {
	a.mu.Lock()
	defer a.mu.Unlock()
	var out []Booking
	for _, b := range a.bookings {
		if b.Scope == scope {
			out = append(out, b)
		}
	}
	return out
}

// count records a call; the caller holds a.mu.
func (a *Agency) count(name string) { a.calls[name]++ }

// findVenue returns the venue's index, matching its name without regard to
// case; the caller holds a.mu.
func (a *Agency) findVenue(name string) (int, bool) {
	for i, v := range a.venues {
		if strings.EqualFold(v.Name, strings.TrimSpace(name)) {
			return i, true
		}
	}
	return -1, false
}

func (a *Agency) venueNames() string {
	names := make([]string, len(a.venues))
	for i, v := range a.venues {
		names[i] = v.Name
	}
	return strings.Join(names, ", ")
}

// The tools' names.
const (
	SearchVenues      = "search_venues"
	ListActivities    = "list_activities"
	CheckAvailability = "check_availability"
	EstimateBudget    = "estimate_budget"
	BookVenue         = "book_venue"
)

type searchArgs struct {
	City   string `json:"city" jsonschema:"Lisbon, Berlin or Prague"`
	People int    `json:"people" jsonschema:"how many people come"`
}

type cityArgs struct {
	City string `json:"city" jsonschema:"Lisbon, Berlin or Prague"`
}

type availabilityArgs struct {
	Venue string `json:"venue" jsonschema:"the venue's name"`
	Days  int    `json:"days" jsonschema:"how many days in a row"`
}

type budgetArgs struct {
	Venue    string `json:"venue" jsonschema:"the venue's name"`
	People   int    `json:"people"`
	Days     int    `json:"days"`
	Activity string `json:"activity,omitempty" jsonschema:"an activity's name, or empty for none"`
}

type bookArgs struct {
	Venue  string `json:"venue" jsonschema:"the venue's name"`
	Start  string `json:"start" jsonschema:"the first day, as check_availability gives it (Jun 9)"`
	Days   int    `json:"days"`
	People int    `json:"people"`
}

// Tools returns the agency's tools: four read tools (search_venues,
// list_activities, check_availability, estimate_budget) and book_venue, a
// write tool that waits for a person's approval.
func (a *Agency) Tools() []tool.Tool {
	return []tool.Tool{
		tool.MustFunc(SearchVenues, "Find venues in a city that hold a group of the given size, with their day rates.", a.searchVenues, tool.ReadOnly()),
		tool.MustFunc(ListActivities, "List team activities in a city, with prices per person.", a.listActivities, tool.ReadOnly()),
		tool.MustFunc(CheckAvailability, "Say when a venue is free for a number of days in a row next month.", a.checkAvailability, tool.ReadOnly()),
		tool.MustFunc(EstimateBudget, "Estimate an offsite's cost: the venue, catering for everyone and an optional activity.", a.estimateBudget, tool.ReadOnly()),
		tool.MustFunc(BookVenue, "Book a venue for the group from a free start day. Needs approval.", a.bookVenue,
			tool.Summary(func(b bookArgs) string {
				return fmt.Sprintf("Book %s for %d people, %d %s from %s", b.Venue, b.People, b.Days, plural(b.Days, "day", "days"), b.Start)
			})),
	}
}

func checkPeople(name string, n int) error {
	if n < 1 || n > MaxPeople {
		return tool.BadArguments(name, "people is %d; the agency plans for 1 to %d people", n, MaxPeople)
	}
	return nil
}

func checkDays(name string, n int) error {
	if n < 1 || n > 5 {
		return tool.BadArguments(name, "days is %d; an offsite lasts 1 to 5 days", n)
	}
	return nil
}

func (a *Agency) knownCity(name, city string) error {
	for _, v := range a.venues {
		if strings.EqualFold(v.City, strings.TrimSpace(city)) {
			return nil
		}
	}
	return tool.BadArguments(name, "the agency has no venues in %q; use Lisbon, Berlin or Prague", city)
}

func (a *Agency) searchVenues(_ context.Context, args searchArgs) (string, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.count(SearchVenues)
	if err := a.knownCity(SearchVenues, args.City); err != nil {
		return "", err
	}
	if err := checkPeople(SearchVenues, args.People); err != nil {
		return "", err
	}
	var b strings.Builder
	for _, v := range a.venues {
		if strings.EqualFold(v.City, strings.TrimSpace(args.City)) && v.Capacity >= args.People {
			fmt.Fprintf(&b, "- %s: up to %d people, €%d per day, %s\n", v.Name, v.Capacity, v.DayRate, v.Area)
		}
	}
	if b.Len() == 0 {
		return fmt.Sprintf("No venue in %s holds %d people.", args.City, args.People), nil
	}
	return strings.TrimRight(b.String(), "\n"), nil
}

func (a *Agency) listActivities(_ context.Context, args cityArgs) (string, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.count(ListActivities)
	if err := a.knownCity(ListActivities, args.City); err != nil {
		return "", err
	}
	var b strings.Builder
	for _, act := range a.activities {
		if strings.EqualFold(act.City, strings.TrimSpace(args.City)) {
			fmt.Fprintf(&b, "- %s: €%d per person, %s (%s)\n", act.Name, act.PerPerson, act.Length, act.Note)
		}
	}
	if b.Len() == 0 {
		return "No activities listed in " + args.City + ".", nil
	}
	return strings.TrimRight(b.String(), "\n"), nil
}

func (a *Agency) checkAvailability(_ context.Context, args availabilityArgs) (string, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.count(CheckAvailability)
	i, ok := a.findVenue(args.Venue)
	if !ok {
		return "", tool.BadArguments(CheckAvailability, "no venue is named %q; the venues are %s", args.Venue, a.venueNames())
	}
	if err := checkDays(CheckAvailability, args.Days); err != nil {
		return "", err
	}
	v := a.venues[i]
	var starts []string
	for _, w := range v.Free {
		if w.Days >= args.Days {
			starts = append(starts, w.Start)
		}
	}
	if len(starts) == 0 {
		return fmt.Sprintf("%s is not free for %d days in a row next month.", v.Name, args.Days), nil
	}
	return fmt.Sprintf("%s is free for %d days from %s.", v.Name, args.Days, strings.Join(starts, " or from ")), nil
}

func (a *Agency) estimateBudget(_ context.Context, args budgetArgs) (string, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.count(EstimateBudget)
	i, ok := a.findVenue(args.Venue)
	if !ok {
		return "", tool.BadArguments(EstimateBudget, "no venue is named %q; the venues are %s", args.Venue, a.venueNames())
	}
	if err := checkPeople(EstimateBudget, args.People); err != nil {
		return "", err
	}
	if err := checkDays(EstimateBudget, args.Days); err != nil {
		return "", err
	}
	v := a.venues[i]
	venueCost := v.DayRate * args.Days
	catering := CateringPerPersonDay * args.People * args.Days
	total := venueCost + catering
	detail := fmt.Sprintf("venue €%d (%d days at €%d), catering €%d (%d people, %d days at €%d)",
		venueCost, args.Days, v.DayRate, catering, args.People, args.Days, CateringPerPersonDay)
	if name := strings.TrimSpace(args.Activity); name != "" {
		act, ok := a.findActivity(v.City, name)
		if !ok {
			return "", tool.BadArguments(EstimateBudget, "no activity %q in %s; see list_activities", name, v.City)
		}
		cost := act.PerPerson * args.People
		total += cost
		detail += fmt.Sprintf(", %s €%d", act.Name, cost)
	}
	return fmt.Sprintf("%s: €%d in all: %s.", v.Name, total, detail), nil
}

// findActivity returns the city's activity with this name; the caller
// holds a.mu.
func (a *Agency) findActivity(city, name string) (activity, bool) {
	for _, act := range a.activities {
		if strings.EqualFold(act.City, city) && strings.EqualFold(act.Name, name) {
			return act, true
		}
	}
	return activity{}, false
}

func (a *Agency) bookVenue(ctx context.Context, args bookArgs) (string, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.count(BookVenue)
	i, ok := a.findVenue(args.Venue)
	if !ok {
		return "", tool.BadArguments(BookVenue, "no venue is named %q; the venues are %s", args.Venue, a.venueNames())
	}
	if err := checkPeople(BookVenue, args.People); err != nil {
		return "", err
	}
	if err := checkDays(BookVenue, args.Days); err != nil {
		return "", err
	}
	v := &a.venues[i]
	if args.People > v.Capacity {
		return "", fmt.Errorf("%s holds %d people, not %d", v.Name, v.Capacity, args.People)
	}
	w := slices.IndexFunc(v.Free, func(w window) bool {
		return strings.EqualFold(w.Start, strings.TrimSpace(args.Start)) && w.Days >= args.Days
	})
	if w < 0 {
		return "", fmt.Errorf("%s is not free for %d days from %q; ask check_availability for the free days", v.Name, args.Days, args.Start)
	}
	start := v.Free[w].Start
	v.Free = slices.Delete(v.Free, w, w+1)
	b := Booking{Code: fmt.Sprintf("OFF-%03d", len(a.bookings)+1), Venue: v.Name, Start: start, Days: args.Days, People: args.People, Scope: apps.Scope(ctx)}
	a.bookings = append(a.bookings, b)
	return fmt.Sprintf("Booked %s for %d people, %d days from %s. Confirmation %s.", v.Name, b.People, b.Days, b.Start, b.Code), nil
}
