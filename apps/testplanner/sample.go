package testplanner

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
)

// sampleSchema is the example shop's database: customers, products, their
// orders and order lines, and the payments of the orders.
const sampleSchema = `
CREATE TABLE customers (
	id         INTEGER PRIMARY KEY,
	name       TEXT NOT NULL,
	email      TEXT NOT NULL UNIQUE,
	city       TEXT NOT NULL,
	status     TEXT NOT NULL CHECK (status IN ('active', 'suspended')),
	created_at TEXT NOT NULL
);
CREATE TABLE products (
	id       INTEGER PRIMARY KEY,
	sku      TEXT NOT NULL UNIQUE,
	name     TEXT NOT NULL,
	category TEXT NOT NULL,
	price    REAL NOT NULL CHECK (price > 0),
	stock    INTEGER NOT NULL CHECK (stock >= 0),
	active   INTEGER NOT NULL DEFAULT 1
);
CREATE TABLE orders (
	id          INTEGER PRIMARY KEY,
	customer_id INTEGER NOT NULL REFERENCES customers (id),
	status      TEXT NOT NULL CHECK (status IN ('pending', 'paid', 'shipped', 'delivered', 'cancelled')),
	total       REAL NOT NULL,
	created_at  TEXT NOT NULL
);
CREATE TABLE order_items (
	id         INTEGER PRIMARY KEY,
	order_id   INTEGER NOT NULL REFERENCES orders (id),
	product_id INTEGER NOT NULL REFERENCES products (id),
	quantity   INTEGER NOT NULL CHECK (quantity > 0),
	unit_price REAL NOT NULL
);
CREATE TABLE payments (
	id       INTEGER PRIMARY KEY,
	order_id INTEGER NOT NULL REFERENCES orders (id),
	amount   REAL NOT NULL,
	method   TEXT NOT NULL CHECK (method IN ('card', 'transfer', 'wallet')),
	status   TEXT NOT NULL CHECK (status IN ('authorized', 'captured', 'refunded', 'failed')),
	paid_at  TEXT
);
CREATE INDEX orders_customer ON orders (customer_id);
CREATE INDEX order_items_order ON order_items (order_id);
CREATE INDEX payments_order ON payments (order_id);
`

var sampleCustomers = [][]any{
	{1, "Amara Okafor", "amara.okafor@example.com", "Lagos", "active", "2024-01-14"},
	{2, "Lukas Brenner", "lukas.brenner@example.com", "Graz", "active", "2024-02-03"},
	{3, "Mei Tanaka", "mei.tanaka@example.com", "Osaka", "active", "2024-02-21"},
	{4, "Diego Salvatierra", "diego.s@example.com", "Valparaíso", "suspended", "2024-03-09"},
	{5, "Ingrid Solberg", "ingrid.solberg@example.com", "Bergen", "active", "2024-03-30"},
	{6, "Tomasz Wierzba", "tomasz.w@example.com", "Gdańsk", "active", "2024-04-12"},
	{7, "Priya Raman", "priya.raman@example.com", "Chennai", "active", "2024-05-02"},
	{8, "Noah Fitzgerald", "noah.fitz@example.com", "Cork", "active", "2024-05-19"},
	{9, "Selin Aydın", "selin.aydin@example.com", "Izmir", "suspended", "2024-06-07"},
	{10, "Kwame Mensah", "kwame.mensah@example.com", "Kumasi", "active", "2024-06-28"},
	{11, "Elodie Marchand", "elodie.m@example.com", "Lyon", "active", "2024-07-15"},
	{12, "Rafael Cunha", "rafael.cunha@example.com", "Porto", "active", "2024-08-01"},
}

var sampleProducts = [][]any{
	{1, "MUG-001", "Stoneware mug", "kitchen", 12.5, 40, 1},
	{2, "KTL-002", "Electric kettle", "kitchen", 34.9, 8, 1},
	{3, "TEA-003", "Green tea, 100 g", "pantry", 6.75, 120, 1},
	{4, "LMP-004", "Desk lamp", "home", 45, 0, 1},
	{5, "NTB-005", "Dotted notebook", "stationery", 9.2, 65, 1},
	{6, "PEN-006", "Fountain pen", "stationery", 28, 3, 1},
	{7, "BAG-007", "Canvas tote bag", "accessories", 15, 22, 1},
	{8, "BLK-008", "Wool blanket", "home", 79, 5, 1},
	{9, "CUP-009", "Espresso cups, set of 2", "kitchen", 18.4, 0, 0},
	{10, "JAR-010", "Honey jar, 250 g", "pantry", 8.6, 54, 1},
	{11, "CND-011", "Beeswax candle", "home", 11, 31, 1},
	{12, "UMB-012", "Folding umbrella", "accessories", 24.5, 12, 1},
	{13, "PLN-013", "Weekly planner", "stationery", 14.3, 1, 1},
	{14, "TRY-014", "Bamboo serving tray", "kitchen", 21, 17, 1},
}

// sampleOrders: id, customer, status, created; the lines follow in
// sampleItems and the total is their sum.
var sampleOrders = [][]any{
	{1001, 1, "delivered", "2024-09-02"},
	{1002, 1, "shipped", "2024-09-20"},
	{1003, 2, "paid", "2024-09-21"},
	{1004, 3, "pending", "2024-09-22"},
	{1005, 3, "delivered", "2024-08-11"},
	{1006, 5, "cancelled", "2024-09-05"},
	{1007, 6, "pending", "2024-09-23"},
	{1008, 7, "paid", "2024-09-23"},
	{1009, 7, "delivered", "2024-07-30"},
	{1010, 8, "shipped", "2024-09-18"},
	{1011, 10, "pending", "2024-09-24"},
	{1012, 11, "delivered", "2024-06-14"},
	{1013, 12, "cancelled", "2024-09-10"},
	{1014, 4, "delivered", "2024-05-03"},
	{1015, 2, "pending", "2024-09-24"},
}

// sampleItems: order, product, quantity (the unit price is the product's).
var sampleItems = [][3]int{
	{1001, 1, 2}, {1001, 3, 1},
	{1002, 8, 1},
	{1003, 2, 1}, {1003, 10, 2},
	{1004, 5, 3},
	{1005, 6, 1}, {1005, 5, 1},
	{1006, 12, 1},
	{1007, 14, 2}, {1007, 11, 1},
	{1008, 7, 1},
	{1009, 3, 4},
	{1010, 13, 1}, {1010, 5, 2},
	{1011, 2, 1},
	{1012, 11, 3},
	{1013, 8, 1},
	{1014, 1, 1},
	{1015, 3, 2}, {1015, 10, 1},
}

// samplePayments: order, method, status, paid at (nil: not paid); the
// amount is the order's total.
var samplePayments = [][]any{
	{1001, "card", "captured", "2024-09-02"},
	{1002, "wallet", "captured", "2024-09-20"},
	{1003, "card", "captured", "2024-09-21"},
	{1005, "transfer", "captured", "2024-08-12"},
	{1006, "card", "refunded", "2024-09-05"},
	{1007, "card", "authorized", nil},
	{1008, "wallet", "captured", "2024-09-23"},
	{1009, "card", "captured", "2024-07-30"},
	{1010, "card", "captured", "2024-09-18"},
	{1011, "transfer", "failed", nil},
	{1012, "card", "captured", "2024-06-14"},
	{1013, "wallet", "refunded", "2024-09-11"},
	{1014, "card", "captured", "2024-05-03"},
}

// CreateSampleDB creates the example shop database at path (and its
// directory) when the file does not exist yet, and reports whether it did.
// An existing file is left alone, whatever it holds.
func CreateSampleDB(ctx context.Context, path string) (bool, error) {
	if _, err := os.Stat(path); err == nil {
		return false, nil
	} else if !errors.Is(err, os.ErrNotExist) {
		return false, fmt.Errorf("testplanner: sample database %s: %w", path, err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return false, fmt.Errorf("testplanner: sample database %s: %w", path, err)
	}
	// Written to a temporary file of its own and renamed, so a crash never
	// leaves a half-filled database that the next start would take as
	// complete, and two creators at once (two builds of the app) never
	// write the same file.
	f, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".*.tmp")
	if err != nil {
		return false, fmt.Errorf("testplanner: sample database %s: %w", path, err)
	}
	tmp := f.Name()
	_ = f.Close()
	defer os.Remove(tmp) // gone after the rename; a leftover otherwise
	if err := fill(ctx, tmp); err != nil {
		return false, err
	}
	if _, err := os.Stat(path); err == nil {
		return false, nil // another creator finished first
	}
	if err := os.Rename(tmp, path); err != nil {
		return false, fmt.Errorf("testplanner: sample database %s: %w", path, err)
	}
	return true, nil
}

func fill(ctx context.Context, path string) (err error) {
	db, err := sql.Open("sqlite", "file:"+filepath.ToSlash(path)+"?_pragma=foreign_keys(1)")
	if err != nil {
		return fmt.Errorf("testplanner: create the sample database: %w", err)
	}
	defer func() {
		if cerr := db.Close(); err == nil && cerr != nil {
			err = fmt.Errorf("testplanner: create the sample database: %w", cerr)
		}
	}()
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("testplanner: create the sample database: %w", err)
	}
	defer tx.Rollback()
	exec := func(q string, args ...any) {
		if err == nil {
			if _, e := tx.ExecContext(ctx, q, args...); e != nil {
				err = fmt.Errorf("testplanner: create the sample database: %s: %w", q, e)
			}
		}
	}
	exec(sampleSchema)
	price := map[int]float64{}
	for _, p := range sampleProducts {
		exec(`INSERT INTO products (id, sku, name, category, price, stock, active) VALUES (?, ?, ?, ?, ?, ?, ?)`, p...)
		price[p[0].(int)] = toFloat(p[4])
	}
	for _, c := range sampleCustomers {
		exec(`INSERT INTO customers (id, name, email, city, status, created_at) VALUES (?, ?, ?, ?, ?, ?)`, c...)
	}
	total := map[int]float64{}
	for _, it := range sampleItems {
		total[it[0]] += price[it[1]] * float64(it[2])
	}
	for _, o := range sampleOrders {
		id := o[0].(int)
		exec(`INSERT INTO orders (id, customer_id, status, total, created_at) VALUES (?, ?, ?, ?, ?)`, id, o[1], o[2], cents(total[id]), o[3])
	}
	for i, it := range sampleItems {
		exec(`INSERT INTO order_items (id, order_id, product_id, quantity, unit_price) VALUES (?, ?, ?, ?, ?)`, i+1, it[0], it[1], it[2], price[it[1]])
	}
	for i, p := range samplePayments {
		order := p[0].(int)
		exec(`INSERT INTO payments (id, order_id, amount, method, status, paid_at) VALUES (?, ?, ?, ?, ?, ?)`, 501+i, order, cents(total[order]), p[1], p[2], p[3])
	}
	if err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("testplanner: create the sample database: %w", err)
	}
	return nil
}

func toFloat(v any) float64 {
	switch v := v.(type) {
	case int:
		return float64(v)
	case float64:
		return v
	}
	return 0
}

func cents(v float64) float64 { return math.Round(v*100) / 100 }
