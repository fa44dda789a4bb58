-- Experiments and their results on SQLite (see datasets.sql).

-- name: GetExperiment
SELECT experiment_id, name, dataset_id, dataset_version, assistant_id, repetitions, concurrency, baseline_id,
	metadata, status, total, summary, error, created_at, updated_at, assistant_version, criteria
FROM trellis_experiments WHERE tenant = ?1 AND experiment_id = ?2

-- name: InsertExperiment
INSERT INTO trellis_experiments (tenant, experiment_id, name, dataset_id, dataset_version, assistant_id,
	repetitions, concurrency, baseline_id, metadata, status, total, summary, error, created_at, updated_at, assistant_version, criteria)
VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, NULL, '', ?13, ?13, ?14, ?15)

-- name: SearchExperiments
SELECT experiment_id, name, dataset_id, dataset_version, assistant_id, repetitions, concurrency, baseline_id,
	metadata, status, total, summary, error, created_at, updated_at, assistant_version, criteria
FROM trellis_experiments
WHERE tenant = ?1 AND (?2 = '' OR dataset_id = ?2) AND (?3 = '' OR assistant_id = ?3)
ORDER BY created_at DESC, experiment_id DESC LIMIT ?4 OFFSET ?5

-- name: UpdateExperiment
UPDATE trellis_experiments SET status = ?1, summary = COALESCE(?2, summary),
	error = CASE WHEN ?3 = '' THEN error ELSE ?3 END, updated_at = ?4
WHERE tenant = ?5 AND experiment_id = ?6 AND status IN ('pending', 'running')

-- name: InsertExperimentResult
INSERT INTO trellis_experiment_results (tenant, experiment_id, case_id, repetition, passed, data, created_at)
VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7) ON CONFLICT DO NOTHING

-- name: ExperimentResults
SELECT case_id, repetition, passed, data, created_at FROM trellis_experiment_results
WHERE tenant = ?1 AND experiment_id = ?2 ORDER BY case_id, repetition

-- name: ExperimentProgress
SELECT count(*), COALESCE(SUM(passed), 0) FROM trellis_experiment_results
WHERE tenant = ?1 AND experiment_id = ?2
