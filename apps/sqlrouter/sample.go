package sqlrouter

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	_ "modernc.org/sqlite" // registers the "sqlite" driver
)

// sampleSchema is the example's lending library: its branches, the
// authors and books of its catalogue, its members and their loans.
const sampleSchema = `
CREATE TABLE branches (
	id   INTEGER PRIMARY KEY,
	name TEXT NOT NULL UNIQUE,
	city TEXT NOT NULL
);
CREATE TABLE authors (
	id      INTEGER PRIMARY KEY,
	name    TEXT NOT NULL,
	country TEXT NOT NULL
);
CREATE TABLE books (
	id        INTEGER PRIMARY KEY,
	title     TEXT NOT NULL,
	author_id INTEGER NOT NULL REFERENCES authors (id),
	genre     TEXT NOT NULL CHECK (genre IN ('fiction', 'mystery', 'science', 'history', 'children')),
	published INTEGER NOT NULL
);
CREATE TABLE members (
	id        INTEGER PRIMARY KEY,
	name      TEXT NOT NULL,
	branch_id INTEGER NOT NULL REFERENCES branches (id),
	joined_on TEXT NOT NULL
);
CREATE TABLE loans (
	id          INTEGER PRIMARY KEY,
	book_id     INTEGER NOT NULL REFERENCES books (id),
	member_id   INTEGER NOT NULL REFERENCES members (id),
	branch_id   INTEGER NOT NULL REFERENCES branches (id),
	loaned_on   TEXT NOT NULL,
	returned_on TEXT
);
CREATE INDEX loans_book ON loans (book_id);
CREATE INDEX loans_member ON loans (member_id);
`

var sampleBranches = [][]any{
	{1, "Riverside", "Alderford"},
	{2, "Old Market", "Alderford"},
	{3, "Hillcrest", "Brennock"},
}

var sampleAuthors = [][]any{
	{1, "Mara Quillon", "Ireland"},
	{2, "Tomas Elvik", "Norway"},
	{3, "Ines Carvalho", "Portugal"},
	{4, "Ravi Sundaram", "India"},
	{5, "Helen Ashdown", "England"},
	{6, "Kofi Mensah", "Ghana"},
}

var sampleBooks = [][]any{
	{1, "The Salt Road", 1, "fiction", 2019},
	{2, "Harbour Lights", 1, "fiction", 2022},
	{3, "A Quiet Orchard", 2, "fiction", 2020},
	{4, "The Ninth Key", 3, "mystery", 2018},
	{5, "Fog over Carrow", 3, "mystery", 2023},
	{6, "Small Wonders of Light", 4, "science", 2021},
	{7, "How Rivers Think", 4, "science", 2024},
	{8, "The Copper Age", 5, "history", 2016},
	{9, "Maps of Lost Cities", 5, "history", 2022},
	{10, "Pip and the Paper Boat", 6, "children", 2020},
	{11, "The Moon Garden", 6, "children", 2023},
	{12, "Winter Ledger", 2, "mystery", 2024},
}

var sampleMembers = [][]any{
	{1, "Aoife Brennan", 1, "2021-03-14"},
	{2, "Lars Holm", 1, "2022-07-02"},
	{3, "Priya Nair", 2, "2020-11-20"},
	{4, "Sam Okoro", 2, "2023-01-09"},
	{5, "Lucia Ferri", 3, "2019-05-30"},
	{6, "Jon Park", 3, "2024-02-17"},
	{7, "Nadia Rahman", 1, "2024-09-01"},
	{8, "Owen Price", 2, "2025-01-12"},
}

// sampleLoans: book, member, branch, loaned on, returned on (nil: still
// out). In 2025: fiction 8, mystery 7, science 4, history 3, children 2;
// the six loans of 2024 would change the order if the year were ignored.
var sampleLoans = [][]any{
	{1, 1, 1, "2024-10-03", "2024-10-20"},
	{10, 3, 2, "2024-11-11", "2024-11-25"},
	{11, 5, 3, "2024-11-30", "2024-12-14"},
	{10, 6, 3, "2024-12-05", "2024-12-19"},
	{8, 2, 1, "2024-12-10", "2025-01-04"},
	{3, 4, 2, "2024-12-21", "2025-01-08"},
	{1, 2, 1, "2025-01-06", "2025-01-27"},
	{4, 3, 2, "2025-01-15", "2025-02-01"},
	{6, 5, 3, "2025-01-22", "2025-02-10"},
	{2, 1, 1, "2025-02-03", "2025-02-24"},
	{5, 4, 2, "2025-02-14", "2025-03-03"},
	{8, 6, 3, "2025-02-20", "2025-03-12"},
	{3, 7, 1, "2025-03-02", "2025-03-21"},
	{12, 8, 2, "2025-03-09", "2025-03-30"},
	{7, 2, 1, "2025-03-18", "2025-04-02"},
	{10, 5, 3, "2025-04-01", "2025-04-15"},
	{1, 3, 2, "2025-04-07", "2025-04-28"},
	{4, 1, 1, "2025-04-19", "2025-05-06"},
	{9, 4, 2, "2025-05-05", "2025-05-26"},
	{2, 6, 3, "2025-05-12", "2025-06-02"},
	{6, 7, 1, "2025-05-28", "2025-06-16"},
	{5, 8, 2, "2025-06-10", "2025-07-01"},
	{3, 5, 3, "2025-06-23", "2025-07-08"},
	{11, 1, 1, "2025-07-04", "2025-07-18"},
	{12, 3, 2, "2025-07-15", nil},
	{1, 4, 2, "2025-08-02", nil},
	{7, 6, 3, "2025-08-19", nil},
	{8, 2, 1, "2025-09-03", nil},
	{4, 7, 1, "2025-09-14", nil},
	{2, 8, 2, "2025-09-20", nil},
}

// CreateSampleDB creates the example's library database at path (and its
// directory) when the file does not exist yet, and reports whether it did.
// An existing file is left alone, whatever it holds.
func CreateSampleDB(ctx context.Context, path string) (bool, error) {
	if _, err := os.Stat(path); err == nil {
		return false, nil
	} else if !errors.Is(err, os.ErrNotExist) {
		return false, fmt.Errorf("sqlrouter: sample database %s: %w", path, err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return false, fmt.Errorf("sqlrouter: sample database %s: %w", path, err)
	}
	// Filled under a temporary name of its own and renamed once complete,
	// so an interrupted start never leaves a half-filled file behind, and
	// two creators at once (the web page asks for the graph and the
	// schemas together, and each builds the app) never write one file.
	f, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".*.part")
	if err != nil {
		return false, fmt.Errorf("sqlrouter: sample database %s: %w", path, err)
	}
	tmp := f.Name()
	_ = f.Close()
	defer os.Remove(tmp) // gone after the rename; a leftover otherwise
	if err := fillSample(ctx, tmp); err != nil {
		return false, err
	}
	if _, err := os.Stat(path); err == nil {
		return false, nil // another creator finished first
	}
	if err := os.Rename(tmp, path); err != nil {
		return false, fmt.Errorf("sqlrouter: sample database %s: %w", path, err)
	}
	return true, nil
}

// sampleTable is one table's rows and the statement inserting one.
type sampleTable struct {
	insert string
	rows   [][]any
}

// sampleTables are the sample's rows, in an order the foreign keys allow.
func sampleTables() []sampleTable {
	return []sampleTable{
		{`INSERT INTO branches (id, name, city) VALUES (?, ?, ?)`, sampleBranches},
		{`INSERT INTO authors (id, name, country) VALUES (?, ?, ?)`, sampleAuthors},
		{`INSERT INTO books (id, title, author_id, genre, published) VALUES (?, ?, ?, ?, ?)`, sampleBooks},
		{`INSERT INTO members (id, name, branch_id, joined_on) VALUES (?, ?, ?, ?)`, sampleMembers},
		{`INSERT INTO loans (book_id, member_id, branch_id, loaned_on, returned_on) VALUES (?, ?, ?, ?, ?)`, sampleLoans},
	}
}

func fillSample(ctx context.Context, path string) (err error) {
	wrap := func(e error) error { return fmt.Errorf("sqlrouter: create the sample database: %w", e) }
	db, err := sql.Open("sqlite", "file:"+filepath.ToSlash(path)+"?_pragma=foreign_keys(1)")
	if err != nil {
		return wrap(err)
	}
	defer func() {
		if cerr := db.Close(); err == nil && cerr != nil {
			err = wrap(cerr)
		}
	}()
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return wrap(err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, sampleSchema); err != nil {
		return wrap(err)
	}
	for _, t := range sampleTables() {
		for _, r := range t.rows {
			if _, err := tx.ExecContext(ctx, t.insert, r...); err != nil {
				return wrap(fmt.Errorf("%s %v: %w", t.insert, r, err))
			}
		}
	}
	if err := tx.Commit(); err != nil {
		return wrap(err)
	}
	return nil
}
