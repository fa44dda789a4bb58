package dbutil

import "github.com/trellis-agents/trellis/server/db"

// Key validates a key to create.
func Key(k db.Key, hash []byte) error {
	switch {
	case k.ID == "":
		return Invalid("the key's ID is empty")
	case k.Tenant == "":
		return Invalid("the key's tenant is empty")
	case k.Prefix == "":
		return Invalid("the key's prefix is empty")
	case len(hash) == 0:
		return Invalid("the key's hash is empty")
	}
	return nil
}
