-- Assistants and their versions on PostgreSQL (see datasets.sql).
-- Searches start from Select*/Count*.

-- name: GetAssistant
SELECT assistant_id, graph_id, name, description, config, context, metadata, version, created_at, updated_at
FROM trellis_assistants WHERE tenant = $1 AND assistant_id = $2

-- name: GetAssistantForUpdate
SELECT assistant_id, graph_id, name, description, config, context, metadata, version, created_at, updated_at
FROM trellis_assistants WHERE tenant = $1 AND assistant_id = $2
FOR UPDATE

-- name: InsertAssistant
INSERT INTO trellis_assistants (tenant, assistant_id, graph_id, name, description, config, context, metadata, version, created_at, updated_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, 1, $9, $9) ON CONFLICT DO NOTHING

-- name: InsertAssistantVersion
INSERT INTO trellis_assistant_versions
	(tenant, assistant_id, version, graph_id, name, description, config, context, metadata, created_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)

-- name: NextAssistantVersion
SELECT max(version) + 1 FROM trellis_assistant_versions WHERE tenant = $1 AND assistant_id = $2

-- name: UpdateAssistant
UPDATE trellis_assistants SET graph_id = $1, name = $2, description = $3, config = $4,
	context = $5, metadata = $6, version = $7, updated_at = $8
WHERE tenant = $9 AND assistant_id = $10

-- name: DeleteAssistant
DELETE FROM trellis_assistants WHERE tenant = $1 AND assistant_id = $2

-- name: SelectAssistants
SELECT assistant_id, graph_id, name, description, config, context, metadata, version, created_at, updated_at
FROM trellis_assistants

-- name: CountAssistants
SELECT count(*) FROM trellis_assistants

-- name: SelectAssistantVersions
SELECT assistant_id, graph_id, name, description, config, context, metadata, version, created_at, created_at
FROM trellis_assistant_versions

-- name: SetLatestVersion
UPDATE trellis_assistants a SET graph_id = v.graph_id, name = v.name, description = v.description,
	config = v.config, context = v.context, metadata = v.metadata, version = v.version, updated_at = $1
FROM trellis_assistant_versions v
WHERE a.tenant = $2 AND a.assistant_id = $3 AND v.tenant = a.tenant AND v.assistant_id = a.assistant_id AND v.version = $4

-- name: GetAssistantVersion
SELECT assistant_id, graph_id, name, description, config, context, metadata, version, created_at, created_at
FROM trellis_assistant_versions WHERE tenant = $1 AND assistant_id = $2 AND version = $3

-- name: ResolveAssistant
-- Two lookups, by key and by graph, each on its index: with the two
-- conditions ORed, the generic plan read every assistant of the tenant.
SELECT assistant_id, graph_id, name, description, config, context, metadata, version, created_at, updated_at FROM (
	SELECT * FROM trellis_assistants WHERE tenant = $1 AND assistant_id = $2
	UNION ALL
	(SELECT * FROM trellis_assistants WHERE graph_id = $2 AND tenant = $1 ORDER BY created_at, assistant_id LIMIT 1)
) a
ORDER BY assistant_id = $2 DESC, created_at, assistant_id LIMIT 1
