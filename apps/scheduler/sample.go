package scheduler

// Sample returns the example week: five days of eight periods, a timetable
// of classes (two of them study halls that accept embedded tasks, one lab
// locked in place), three tasks already placed and four pending.
func Sample() *Schedule {
	items := []Item{
		{ID: 1, Title: "Linear algebra lecture", Kind: KindEvent, Category: "math", Duration: 2, Day: 1, Start: 1},
		{ID: 2, Title: "Physics lab", Kind: KindEvent, Category: "physics", Duration: 3, Day: 2, Start: 3, Locked: true},
		{ID: 3, Title: "Study hall", Kind: KindEvent, Duration: 3, Day: 3, Start: 5, CanEmbed: true},
		{ID: 4, Title: "History seminar", Kind: KindEvent, Category: "history", Duration: 2, Day: 4, Start: 1},
		{ID: 5, Title: "Library hour", Kind: KindEvent, Duration: 2, Day: 5, Start: 3, CanEmbed: true},
		{ID: 6, Title: "Programming class", Kind: KindEvent, Category: "cs", Duration: 2, Day: 1, Start: 5},
		{ID: 10, Title: "Algebra exercises, set 4", Kind: KindTask, Category: "math", Duration: 2, Day: 1, Start: 3},
		{ID: 11, Title: "Lab report draft", Kind: KindTask, Category: "physics", Duration: 2, Day: 2, Start: 7},
		{ID: 12, Title: "Read history chapter 5", Kind: KindTask, Category: "history", Duration: 1, Day: 3, Start: 6, Host: 3},
		{ID: 20, Title: "Review for the algebra quiz", Kind: KindTask, Category: "math", Duration: 2},
		{ID: 21, Title: "Programming assignment 3", Kind: KindTask, Category: "cs", Duration: 3},
		{ID: 22, Title: "Physics problem set", Kind: KindTask, Category: "physics", Duration: 2},
		{ID: 23, Title: "Essay outline", Kind: KindTask, Category: "history", Duration: 1},
	}
	s := &Schedule{
		Window: Window{Days: 5, Slots: 8, DayNames: []string{"Monday", "Tuesday", "Wednesday", "Thursday", "Friday"}},
		Items:  map[int]Item{},
	}
	for _, it := range items {
		s.Items[it.ID] = it
	}
	return s
}
