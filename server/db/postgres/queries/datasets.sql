-- Datasets and their cases on PostgreSQL. Parameters are numbered, in the
-- order sqlcore.Queries documents. JSON arrives as bytes and is cast to
-- jsonb; it is read back as text, so the bytes are the database's
-- normalised form.

-- name: GetDataset
SELECT dataset_id, name, description, metadata::text, criteria::text, version, created_at, updated_at,
	(SELECT count(*) FROM trellis_dataset_cases c WHERE c.tenant = d.tenant AND c.dataset_id = d.dataset_id AND c.version_removed IS NULL)
FROM trellis_datasets d WHERE tenant = $1 AND dataset_id = $2

-- name: GetDatasetForUpdate
SELECT dataset_id, name, description, metadata::text, criteria::text, version, created_at, updated_at,
	(SELECT count(*) FROM trellis_dataset_cases c WHERE c.tenant = d.tenant AND c.dataset_id = d.dataset_id AND c.version_removed IS NULL)
FROM trellis_datasets d WHERE tenant = $1 AND dataset_id = $2
FOR UPDATE

-- name: InsertDataset
INSERT INTO trellis_datasets (tenant, dataset_id, name, description, metadata, criteria, version, created_at, updated_at)
VALUES ($1, $2, $3, $4, $5::jsonb, $6::jsonb, 1, $7, $7)

-- name: UpdateDataset
UPDATE trellis_datasets SET name = $1, description = $2, metadata = $3::jsonb, criteria = $4::jsonb, updated_at = $5
WHERE tenant = $6 AND dataset_id = $7

-- name: DeleteDataset
DELETE FROM trellis_datasets WHERE tenant = $1 AND dataset_id = $2

-- name: SearchDatasets
SELECT dataset_id, name, description, metadata::text, criteria::text, version, created_at, updated_at,
	(SELECT count(*) FROM trellis_dataset_cases c WHERE c.tenant = d.tenant AND c.dataset_id = d.dataset_id AND c.version_removed IS NULL)
FROM trellis_datasets d
WHERE tenant = $1 AND strpos(lower(name COLLATE "default"), lower($2 COLLATE "default")) > 0
ORDER BY created_at DESC, dataset_id DESC LIMIT $3 OFFSET $4

-- name: SetDatasetVersion
UPDATE trellis_datasets SET version = $1, updated_at = $2 WHERE tenant = $3 AND dataset_id = $4

-- name: LastCasePosition
SELECT COALESCE(MAX(position), 0) FROM trellis_dataset_cases WHERE tenant = $1 AND dataset_id = $2

-- name: InsertCase
INSERT INTO trellis_dataset_cases (tenant, dataset_id, case_id, version_added, position, data, created_at)
VALUES ($1, $2, $3, $4, $5, $6::jsonb, $7)

-- name: TakenCase
SELECT case_id FROM trellis_dataset_cases
WHERE tenant = $1 AND dataset_id = $2 AND case_id = ANY($3) AND version_removed IS NULL
LIMIT 1

-- name: RetireCase
UPDATE trellis_dataset_cases SET version_removed = $1
WHERE tenant = $2 AND dataset_id = $3 AND case_id = $4 AND version_removed IS NULL
RETURNING position

-- name: DatasetCases
SELECT case_id, data::text, version_added, created_at FROM trellis_dataset_cases
WHERE tenant = $1 AND dataset_id = $2 AND version_added <= $3 AND (version_removed IS NULL OR version_removed > $3)
ORDER BY position
