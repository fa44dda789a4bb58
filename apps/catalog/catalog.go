// Package catalog lists the apps by name, for runners that offer every app
// (the trellis command, a service building apps from configuration). The
// list is explicit: importing it registers nothing anywhere.
package catalog

import (
	"fmt"
	"slices"
	"strings"

	"github.com/trellis-agents/trellis/apps"
	"github.com/trellis-agents/trellis/apps/builder"
	"github.com/trellis-agents/trellis/apps/deep"
	"github.com/trellis-agents/trellis/apps/planner"
	"github.com/trellis-agents/trellis/apps/scheduler"
	"github.com/trellis-agents/trellis/apps/sqlrouter"
	"github.com/trellis-agents/trellis/apps/testplanner"
)

// Demo is the app `trellis demo` runs.
const Demo = scheduler.Name

// All returns every app's entry, in a fixed order.
func All() []apps.Entry {
	return []apps.Entry{
		scheduler.Entry(),
		builder.Entry(),
		planner.Entry(),
		sqlrouter.Entry(),
		testplanner.Entry(),
		deep.Entry(),
	}
}

// Lookup returns the app named name, or an error listing the names.
func Lookup(name string) (apps.Entry, error) {
	var names []string
	for _, e := range All() {
		if e.Name == name {
			return e, nil
		}
		names = append(names, e.Name)
	}
	slices.Sort(names)
	return apps.Entry{}, fmt.Errorf("no app %q; the apps are %s", name, strings.Join(names, ", "))
}
