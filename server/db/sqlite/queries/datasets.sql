-- Datasets and their cases on SQLite. Parameters are numbered (?1), in
-- the order sqlcore.Queries documents; instants are Unix microseconds.
-- Writes hold the file's write lock, so no statement needs to lock a row.

-- name: GetDataset
SELECT dataset_id, name, description, metadata, criteria, version, created_at, updated_at,
	(SELECT count(*) FROM trellis_dataset_cases c WHERE c.tenant = d.tenant AND c.dataset_id = d.dataset_id AND c.version_removed IS NULL)
FROM trellis_datasets d WHERE tenant = ?1 AND dataset_id = ?2

-- name: GetDatasetForUpdate
SELECT dataset_id, name, description, metadata, criteria, version, created_at, updated_at,
	(SELECT count(*) FROM trellis_dataset_cases c WHERE c.tenant = d.tenant AND c.dataset_id = d.dataset_id AND c.version_removed IS NULL)
FROM trellis_datasets d WHERE tenant = ?1 AND dataset_id = ?2

-- name: InsertDataset
INSERT INTO trellis_datasets (tenant, dataset_id, name, description, metadata, criteria, version, created_at, updated_at)
VALUES (?1, ?2, ?3, ?4, ?5, ?6, 1, ?7, ?7)

-- name: UpdateDataset
UPDATE trellis_datasets SET name = ?1, description = ?2, metadata = ?3, criteria = ?4, updated_at = ?5
WHERE tenant = ?6 AND dataset_id = ?7

-- name: DeleteDataset
DELETE FROM trellis_datasets WHERE tenant = ?1 AND dataset_id = ?2

-- name: SearchDatasets
SELECT dataset_id, name, description, metadata, criteria, version, created_at, updated_at,
	(SELECT count(*) FROM trellis_dataset_cases c WHERE c.tenant = d.tenant AND c.dataset_id = d.dataset_id AND c.version_removed IS NULL)
FROM trellis_datasets d
WHERE tenant = ?1 AND instr(lower(name), lower(?2)) > 0
ORDER BY created_at DESC, dataset_id DESC LIMIT ?3 OFFSET ?4

-- name: SetDatasetVersion
UPDATE trellis_datasets SET version = ?1, updated_at = ?2 WHERE tenant = ?3 AND dataset_id = ?4

-- name: LastCasePosition
SELECT COALESCE(MAX(position), 0) FROM trellis_dataset_cases WHERE tenant = ?1 AND dataset_id = ?2

-- name: InsertCase
INSERT INTO trellis_dataset_cases (tenant, dataset_id, case_id, version_added, position, data, created_at)
VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)

-- name: TakenCase
SELECT case_id FROM trellis_dataset_cases
WHERE tenant = ?1 AND dataset_id = ?2 AND case_id IN (SELECT value FROM json_each(?3)) AND version_removed IS NULL
LIMIT 1

-- name: RetireCase
UPDATE trellis_dataset_cases SET version_removed = ?1
WHERE tenant = ?2 AND dataset_id = ?3 AND case_id = ?4 AND version_removed IS NULL
RETURNING position

-- name: DatasetCases
SELECT case_id, data, version_added, created_at FROM trellis_dataset_cases
WHERE tenant = ?1 AND dataset_id = ?2 AND version_added <= ?3 AND (version_removed IS NULL OR version_removed > ?3)
ORDER BY position
