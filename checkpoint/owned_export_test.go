package checkpoint

// CloneForPut deep-copies what a test hands over to PutOwned.
func CloneForPut(cp Checkpoint, md Metadata) (Checkpoint, Metadata) {
	return cloneCheckpoint(cp), cloneMetadata(md)
}
