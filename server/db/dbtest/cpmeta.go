package dbtest

import (
	"testing"

	"github.com/trellis-agents/trellis/server/db"
)

// testCheckpointMetadata: patches merge per checkpoint, are scoped to
// their thread and tenant, are copied with the thread and go with it.
func testCheckpointMetadata(t *testing.T, d db.DB) {
	ten, other := tenant(t, "a"), tenant(t, "b")
	mkThread(t, d, ten, "t", nil)
	mkThread(t, d, ten, "u", nil)
	mkThread(t, d, other, "t", nil)

	md, err := d.PatchCheckpointMetadata(bg(), ten, "t", "cp1", db.Metadata{"label": "a", "n": 1})
	ok(t, "PatchCheckpointMetadata", err)
	jsonEq(t, "first patch", md, `{"label":"a","n":1}`)
	md, err = d.PatchCheckpointMetadata(bg(), ten, "t", "cp1", db.Metadata{"n": 2, "deep": map[string]any{"x": true}})
	ok(t, "PatchCheckpointMetadata", err)
	jsonEq(t, "second patch", md, `{"label":"a","n":2,"deep":{"x":true}}`)
	_, err = d.PatchCheckpointMetadata(bg(), ten, "t", "cp2", db.Metadata{"label": "b"})
	ok(t, "PatchCheckpointMetadata", err)
	_, err = d.PatchCheckpointMetadata(bg(), ten, "u", "cp1", db.Metadata{"label": "u"})
	ok(t, "PatchCheckpointMetadata", err)

	got, err := d.CheckpointMetadata(bg(), ten, "t")
	ok(t, "CheckpointMetadata", err)
	jsonEq(t, "thread t", got, `{"cp1":{"label":"a","n":2,"deep":{"x":true}},"cp2":{"label":"b"}}`)
	got, err = d.CheckpointMetadata(bg(), other, "t")
	ok(t, "CheckpointMetadata", err)
	jsonEq(t, "another tenant's thread t", got, `{}`)

	_, err = d.PatchCheckpointMetadata(bg(), ten, "missing", "cp1", db.Metadata{"a": 1})
	isErr(t, "PatchCheckpointMetadata of a missing thread", err, db.ErrNotFound)
	_, err = d.PatchCheckpointMetadata(bg(), ten, "t", "", db.Metadata{"a": 1})
	isErr(t, "PatchCheckpointMetadata without a checkpoint", err, db.ErrInvalid)

	_, err = d.CopyThread(bg(), ten, "t", "copy")
	ok(t, "CopyThread", err)
	got, err = d.CheckpointMetadata(bg(), ten, "copy")
	ok(t, "CheckpointMetadata", err)
	jsonEq(t, "the copy", got, `{"cp1":{"label":"a","n":2,"deep":{"x":true}},"cp2":{"label":"b"}}`)

	ok(t, "DeleteThread", d.DeleteThread(bg(), ten, "t"))
	mkThread(t, d, ten, "t", nil)
	got, err = d.CheckpointMetadata(bg(), ten, "t")
	ok(t, "CheckpointMetadata", err)
	jsonEq(t, "a re-created thread", got, `{}`)
	got, err = d.CheckpointMetadata(bg(), ten, "u")
	ok(t, "CheckpointMetadata", err)
	jsonEq(t, "thread u", got, `{"cp1":{"label":"u"}}`)
}
