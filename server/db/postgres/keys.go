package postgres

// KeysComponent names the API keys' table in schema_migrations: its own
// component, so the keys' schema is versioned apart from the other tables.
const KeysComponent = "server_keys"

// keyMigrations is the keys' schema; see pgdb.Migrate.
var keyMigrations = []string{
	// 1: the keys table.
	`
CREATE TABLE trellis_api_keys (
	key_id       text COLLATE "C" NOT NULL PRIMARY KEY,
	tenant       text COLLATE "C" NOT NULL,
	name         text             NOT NULL,
	prefix       text COLLATE "C" NOT NULL,
	hash         bytea            NOT NULL UNIQUE,
	created_at   timestamptz      NOT NULL,
	last_used_at timestamptz,
	revoked_at   timestamptz
);
CREATE INDEX trellis_api_keys_tenant ON trellis_api_keys (tenant, created_at);
`,
}
