// Package crashtest holds the crash-and-resume test of durable threads: it
// kills a real child process in the middle of a step and resumes the thread
// in another. It has no API.
package crashtest
