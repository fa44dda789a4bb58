// Package storetest is the conformance suite every store.Store passes, in
// the manner of testing/fstest.
//
// A backend's test calls Run with a constructor:
//
//	func TestStore(t *testing.T) {
//		storetest.Run(t, func(t *testing.T) store.Store {
//			return mybackend.New(...)
//		})
//	}
//
// Run calls the constructor once per subtest. It may return a new Store each
// time or one shared by all subtests: every subtest writes only under a
// namespace of its own, ["storetest", <subtest name>, <random ID>], and
// searches across all namespaces only with a filter on a value no other
// subtest writes. A constructor that needs cleanup registers it with
// t.Cleanup.
//
// The suite compares values as JSON, not bytes, and times with
// time.Time.Equal, so a backend may re-encode JSON and store times at
// millisecond precision. The TTL subtest waits for real time to pass (up to
// two seconds), and so does RunIndex's Expiry subtest (a little over one).
//
// RunIndex is the semantic-search part, for stores opened with a
// store.IndexConfig; its constructor receives the config (with an
// embedtest.Hash embedder) to open the store with.
package storetest
