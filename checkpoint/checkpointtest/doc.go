// Package checkpointtest is the conformance suite every checkpoint.Saver
// passes, in the manner of testing/fstest.
//
// A backend's test calls Run with a constructor:
//
//	func TestSaver(t *testing.T) {
//		checkpointtest.Run(t, func(t *testing.T) checkpoint.Saver {
//			return mybackend.New(...)
//		})
//	}
//
// Run calls the constructor once per subtest. The constructor may return a
// new Saver each time or one shared by all subtests: every subtest uses
// thread IDs of its own, and the only subtest that prunes across all threads
// touches nothing but checkpoints created twenty years ago. A constructor
// that needs cleanup registers it with t.Cleanup.
//
// The suite compares stored JSON by meaning, not by bytes, times with
// time.Time.Equal, and treats nil and empty slices and maps as equal, so a
// backend may re-encode JSON and drop the monotonic clock reading; fixture
// times are whole milliseconds in UTC.
//
// A backend also implements Corrupter, so that the suite can check that a
// damaged row (payload replaced by "{}" or "null", a flipped byte in a
// checkpoint, blob or pending write) is reported as an error wrapping
// checkpoint.ErrCorrupt, never read as a different state. RunLimits checks
// the backend's size limit and is called separately, with a constructor
// that takes the limit.
package checkpointtest
