// Package testcmp holds go-cmp options shared by the conformance suites: they
// compare what a backend returns with what a suite expects while allowing the
// backend to re-encode JSON, drop a time's monotonic reading, and turn empty
// slices or maps into nil.
package testcmp

import (
	"bytes"
	"encoding/json"
	"reflect"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// Options are the comparison options described in the package doc.
var Options = cmp.Options{
	cmpopts.EquateEmpty(),
	cmp.Comparer(func(a, b time.Time) bool { return a.Equal(b) }),
	cmp.FilterValues(func(a, b json.RawMessage) bool { return len(a) > 0 || len(b) > 0 },
		cmp.Comparer(JSONEqual)),
}

// JSONEqual compares two JSON texts by meaning, or by bytes when either is
// not valid JSON.
func JSONEqual(a, b json.RawMessage) bool {
	var va, vb any
	if json.Unmarshal(a, &va) != nil || json.Unmarshal(b, &vb) != nil {
		return bytes.Equal(a, b)
	}
	return reflect.DeepEqual(va, vb)
}
