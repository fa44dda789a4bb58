-- API keys on SQLite (see datasets.sql).

-- name: InsertKey
INSERT INTO trellis_api_keys (key_id, tenant, name, prefix, hash, created_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6)

-- name: KeyByHash
SELECT key_id, tenant, name, prefix, created_at, last_used_at, revoked_at FROM trellis_api_keys WHERE hash = ?1

-- name: ListKeys
SELECT key_id, tenant, name, prefix, created_at, last_used_at, revoked_at FROM trellis_api_keys
WHERE ?1 = '' OR tenant = ?1 ORDER BY created_at, key_id

-- name: RevokeKey
UPDATE trellis_api_keys SET revoked_at = COALESCE(revoked_at, ?2) WHERE key_id = ?1
RETURNING key_id, tenant, name, prefix, created_at, last_used_at, revoked_at

-- name: TouchKey
UPDATE trellis_api_keys SET last_used_at = ?2 WHERE key_id = ?1

-- name: CountActiveKeys
SELECT count(*) FROM trellis_api_keys WHERE revoked_at IS NULL
