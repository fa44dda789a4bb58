-- Assistants and their versions on SQLite (see datasets.sql). Searches
-- start from Select*/Count*; names and metadata are matched in Go.

-- name: GetAssistant
SELECT assistant_id, graph_id, name, description, config, context, metadata, version, created_at, updated_at
FROM trellis_assistants WHERE tenant = ?1 AND assistant_id = ?2

-- name: GetAssistantForUpdate
SELECT assistant_id, graph_id, name, description, config, context, metadata, version, created_at, updated_at
FROM trellis_assistants WHERE tenant = ?1 AND assistant_id = ?2

-- name: InsertAssistant
INSERT INTO trellis_assistants (tenant, assistant_id, graph_id, name, description, config, context, metadata, version, created_at, updated_at)
VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, 1, ?9, ?9) ON CONFLICT DO NOTHING

-- name: InsertAssistantVersion
INSERT INTO trellis_assistant_versions
	(tenant, assistant_id, version, graph_id, name, description, config, context, metadata, created_at)
VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)

-- name: NextAssistantVersion
SELECT max(version) + 1 FROM trellis_assistant_versions WHERE tenant = ?1 AND assistant_id = ?2

-- name: UpdateAssistant
UPDATE trellis_assistants SET graph_id = ?1, name = ?2, description = ?3, config = ?4,
	context = ?5, metadata = ?6, version = ?7, updated_at = ?8
WHERE tenant = ?9 AND assistant_id = ?10

-- name: DeleteAssistant
DELETE FROM trellis_assistants WHERE tenant = ?1 AND assistant_id = ?2

-- name: SelectAssistants
SELECT assistant_id, graph_id, name, description, config, context, metadata, version, created_at, updated_at
FROM trellis_assistants

-- name: CountAssistants
SELECT count(*) FROM trellis_assistants

-- name: SelectAssistantVersions
SELECT assistant_id, graph_id, name, description, config, context, metadata, version, created_at, created_at
FROM trellis_assistant_versions

-- name: SetLatestVersion
UPDATE trellis_assistants SET
	(graph_id, name, description, config, context, metadata, version, updated_at) =
	(SELECT graph_id, name, description, config, context, metadata, version, ?1 FROM trellis_assistant_versions
	 WHERE tenant = ?2 AND assistant_id = ?3 AND version = ?4)
WHERE tenant = ?2 AND assistant_id = ?3 AND EXISTS (SELECT 1 FROM trellis_assistant_versions
	 WHERE tenant = ?2 AND assistant_id = ?3 AND version = ?4)

-- name: GetAssistantVersion
SELECT assistant_id, graph_id, name, description, config, context, metadata, version, created_at, created_at
FROM trellis_assistant_versions WHERE tenant = ?1 AND assistant_id = ?2 AND version = ?3

-- name: ResolveAssistant
SELECT assistant_id, graph_id, name, description, config, context, metadata, version, created_at, updated_at
FROM trellis_assistants WHERE tenant = ?1 AND (assistant_id = ?2 OR graph_id = ?2)
ORDER BY assistant_id = ?2 DESC, created_at, assistant_id LIMIT 1
