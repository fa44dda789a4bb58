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
// A backend that decodes stored rows also implements Corrupter, so that the
// suite can check that an undecodable row is reported as an error.
package checkpointtest
