package sqlite

import "github.com/trellis-agents/trellis/internal/sqlitedb"

// KeysComponent names the API keys' table in schema_migrations: its own
// component, so the keys' schema is versioned apart from the other tables.
const KeysComponent = "server_keys"

// keyMigrations is the keys' schema, oldest first.
var keyMigrations = []sqlitedb.Migration{{Version: 1, SQL: `
CREATE TABLE trellis_api_keys (
	key_id       TEXT    NOT NULL PRIMARY KEY,
	tenant       TEXT    NOT NULL,
	name         TEXT    NOT NULL,
	prefix       TEXT    NOT NULL,
	hash         BLOB    NOT NULL UNIQUE,
	created_at   INTEGER NOT NULL,
	last_used_at INTEGER,
	revoked_at   INTEGER
) WITHOUT ROWID;
CREATE INDEX trellis_api_keys_tenant ON trellis_api_keys (tenant, created_at);
`}}
