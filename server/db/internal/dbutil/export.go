package dbutil

import (
	"fmt"
	"strings"

	"github.com/trellis-agents/trellis/server/db"
)

// ExportQuery is the keyset page query both drivers run for
// db.Exporter.ExportRows: t's columns in order, the rows whose key is past
// the cursor's (when hasAfter), ordered by the key, then the limit.
// placeholder(i) is the driver's i-th parameter (1-based: "$1" or "?");
// the caller passes the cursor's key values, then the limit, as the
// arguments.
func ExportQuery(t db.Table, hasAfter bool, placeholder func(i int) string) string {
	names := make([]string, len(t.Columns))
	for i, c := range t.Columns {
		names[i] = c.Name
	}
	key := strings.Join(names[:t.Key], ", ")
	q := `SELECT ` + strings.Join(names, ", ") + ` FROM ` + t.Name
	n := 0
	if hasAfter {
		ph := make([]string, t.Key)
		for i := range ph {
			n++
			ph[i] = placeholder(n)
		}
		q += ` WHERE (` + key + `) > (` + strings.Join(ph, ", ") + `)`
	}
	return q + ` ORDER BY ` + key + ` LIMIT ` + placeholder(n+1)
}

// CheckExportPage checks ExportRows' limit and cursor, naming the driver
// and the table.
func CheckExportPage(driver string, t db.Table, after db.Row, limit int) error {
	if limit <= 0 {
		return fmt.Errorf("%s: export %s: limit %d is not positive", driver, t.Name, limit)
	}
	if after != nil && len(after) < t.Key {
		return fmt.Errorf("%s: export %s: the cursor has %d values, want %d", driver, t.Name, len(after), t.Key)
	}
	return nil
}
