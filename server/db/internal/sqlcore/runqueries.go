package sqlcore

// runQueries are the statements of the run path (runs, leases, events,
// the finish, export and import), a group of Queries' fields; each field's
// comment says its numbered parameters and the columns it returns.
type runQueries struct {
	// GetRun ($1 tenant, $2 run ID, $3 thread ID or "" for any) returns a
	// run's columns (see scanRun).
	GetRun string
	// GetRunForUpdate is GetRun locking the run's row until the
	// transaction ends where the dialect needs it.
	GetRunForUpdate string
	// SelectRuns is the start of a run search, to which WHERE, ORDER BY and
	// LIMIT are added: the columns of GetRun.
	SelectRuns string
	// LockRunThread ($1 tenant, $2 thread ID) returns a row when the
	// thread exists, keeping it from being deleted until the transaction
	// ends where the dialect needs it.
	LockRunThread string
	// InsertRun ($1 tenant, $2 run ID, $3 thread ID, $4 assistant ID, $5
	// metadata, $6 kwargs, $7 multitask strategy, $8 now, $9 not-before or
	// NULL, $10 assistant version or NULL, $11 pre-claim owner or NULL,
	// $12 pre-claim expiry or NULL) stores a pending run numbered after
	// the thread's others, with lease token 0 held by $11 until $12 when
	// $11 is not NULL (the pre-claim, txhook.PreClaim), and returns its
	// columns (those of GetRun), or stores and returns nothing when the
	// ID is taken.
	InsertRun string
	// ExtendThreadExpiry ($1 now, $2 tenant, $3 thread ID) moves the
	// thread's expiry to its TTL after now.
	ExtendThreadExpiry string
	// ListRuns ($1 tenant, $2 thread ID, $3 status or "" for any, $4
	// limit, $5 offset) returns runs' columns, newest first.
	ListRuns string
	// DeleteRun ($1 tenant, $2 run ID).
	DeleteRun string
	// NextPending ($1 tenant, $2 thread ID, $3 now) returns the columns of
	// the thread's oldest pending run that may start at now.
	NextPending string
	// NextPendingRun ($1 tenant, $2 thread ID, $3 now) is NextPending's
	// run followed by whether a run of the thread is running and the
	// run's assistant's columns as GetAssistant returns them (empty ID,
	// and NULL or empty values, when it is gone).
	NextPendingRun string
	// PendingAfter ($1 tenant, $2 thread ID, $3 now) returns whether a
	// pending run of the thread is due and the earliest NotBefore of
	// those that are not yet (NULL: none).
	PendingAfter string
	// RunningRun ($1 tenant, $2 thread ID) returns the ID of the thread's
	// running run.
	RunningRun string
	// LockRunSlots ($1 tenant) makes the claims of one tenant take turns
	// until the transaction ends, where the dialect's writers do not
	// already; a dialect whose writers are serialized gives no text.
	LockRunSlots string `sql:"optional"`
	// CountRunning ($1 tenant) counts the tenant's running runs.
	CountRunning string
	// ClaimRun ($1 now, $2 tenant, $3 run ID, $4 count, $5 owner, $6
	// expiry) sets the run running with its next lease token, held by
	// owner until expiry (replacing any lease the run had, such as its
	// owner's pre-claim), adds count to its last event Seq (the events its
	// claim's transaction appends: txhook.Seqs) and returns the run's
	// columns (those of GetRun) followed by the token and the event Seq;
	// no row while another owner's pre-claim (token 0) of the run is live
	// at $1.
	ClaimRun string
	// ClaimPendingRun is ClaimRun only when the run is pending and due
	// ($1 now): no row otherwise. A run of the thread already running
	// makes it fail on the one-running index.
	ClaimPendingRun string
	// ClaimPendingRunMarkBusy is ClaimPendingRun that also sets the run's
	// thread busy (MarkThreadBusy) when it claims the run, in one
	// statement, where the dialect can (optional).
	ClaimPendingRunMarkBusy string `sql:"optional"`
	// PreClaimHolder ($1 tenant, $2 run ID) returns the owner and expiry
	// of the run's pre-claim (its lease while the token is 0); no row when
	// it has none.
	PreClaimHolder string
	// ReleasePreClaim ($1 tenant, $2 run ID, $3 owner) ends the run's
	// pre-claim (token 0) held by owner.
	ReleasePreClaim string
	// MarkThreadBusy ($1 tenant, $2 thread ID).
	MarkThreadBusy string
	// LeaseToken ($1 tenant, $2 run ID) returns the token of the run's
	// lease (no row when none holds the run), locking the run's row until
	// the transaction ends where the dialect needs it (so a take-over
	// waits for a fenced write).
	LeaseToken string
	// RenewLease ($1 new expiry, $2 tenant, $3 run ID, $4 token) sets the
	// lease's expiry to the later of $1 and a microsecond after the old
	// one, and returns it; no row when the token does not hold the run.
	RenewLease string
	// ExpiredLeases ($1 now, $2 limit or NULL for all) returns tenant, run
	// ID, thread ID, owner, token and expiry of the leases expired at now,
	// the soonest expired first.
	ExpiredLeases string
	// TakeOverLease ($1 owner, $2 expiry, $3 tenant, $4 run ID, $5 token,
	// $6 expiry read, $7 now) gives the lease to owner with the next token
	// when it is unchanged, returning the token and thread ID.
	TakeOverLease string
	// RenewPreClaim ($1 new expiry, $2 tenant, $3 run ID, $4 owner) sets
	// the expiry of the run's pre-claim (the lease of token 0 a hand-off's
	// accept writes, txhook.PreClaim) while owner still holds it.
	RenewPreClaim string
	// DropLease ($1 tenant, $2 run ID, $3 token, $4 expiry read) ends
	// the run's lease when it is unchanged since it was read.
	DropLease string
	// ImportLease ($1 tenant, $2 run ID, $3 thread ID, $4 owner, $5
	// token, $6 expiry) gives the run the lease of an old export's
	// trellis_leases row (db.LegacyLeases) unless a lease holds it.
	ImportLease string
	// EndRun ($1 status, $2 usage or NULL, $3 error, $4 now, $5 tenant, $6
	// run ID, $7 count, $8 lease token) records a run's end and ends its
	// lease while the lease's token is $8 (checked as FencedBumpEventSeq
	// does; no row otherwise), adds count to its last event Seq (as
	// ClaimRun does), and returns the run's columns (those of GetRun), so
	// the finish need not read the run again, followed by the event Seq.
	EndRun string
	// EndRunWithResult is EndRun and SetThreadResult in one statement,
	// where the dialect can (optional): EndRun's $1–$8, then the thread's
	// $9 status, $10 error, $11 whether to set the values, $12 values, $13
	// interrupts or NULL, $14 thread ID and $15 title or '' ($4 now and
	// $5 tenant shared).
	// The thread is updated only when the run is; it returns EndRun's
	// columns followed by SetThreadResult's and PendingAfter's as of $4,
	// and no row when the lease does not hold the run.
	EndRunWithResult string `sql:"optional"`
	// FreeThread ($1 status, $2 tenant, $3 thread ID) sets the status of
	// the thread if it is still busy.
	FreeThread string
	// CancelRun ($1 status, $2 now, $3 tenant, $4 run ID) ends a run that
	// never started.
	CancelRun string
	// RequestCancel ($1 action, $2 now, $3 tenant, $4 run ID).
	RequestCancel string
	// PendingThreads ($1 tenant, $2 thread ID, $3 limit) returns tenant,
	// thread ID and earliest start (NULL when a run may start now) of the
	// threads with pending runs after ($1, $2) in byte order, in that
	// order.
	PendingThreads string
	// BumpEventSeq ($1 count, $2 tenant, $3 run ID) adds count to the
	// run's last event Seq and returns the new one.
	BumpEventSeq string
	// FencedBumpEventSeq ($1 count, $2 tenant, $3 run ID, $4 lease token)
	// is LeaseToken and BumpEventSeq in one statement: it moves the Seq
	// only when the lease on the run's row has token $4, returning no row
	// otherwise (the lease is lost). A dialect that gives no text checks and bumps in two.
	FencedBumpEventSeq string `sql:"optional"`
	// ImportedRuns runs after runs are imported with their sequence
	// numbers, where the dialect must move the sequence that numbers new
	// runs past them; other dialects give no text.
	ImportedRuns string `sql:"optional"`
	// InsertRunOnThread (InsertRun's $1–$12) is LockRunThread and InsertRun
	// in one statement, and ExtendThreadExpiry too where the dialect can:
	// it stores the run only when its thread exists (keeping the thread
	// from being deleted until the transaction ends where the dialect
	// needs it) and returns InsertRun's columns followed by whether the
	// thread was found, whether the run was stored, and whether the
	// thread's expiry is still to be moved (ExtendThreadExpiry). A dialect
	// may return no row when nothing was stored; LockRunThread then says
	// whether the thread exists.
	InsertRunOnThread string
	// InsertThreadAndRun (InsertRun's $1–$12, $13 the thread's metadata,
	// $14 its interrupts) is InsertThread of an idle thread with no TTL
	// unless it exists, then InsertRunOnThread, in one statement where the
	// dialect can (optional); it returns InsertRunOnThread's row. A thread
	// not found there may have been inserted or deleted by another
	// transaction meanwhile: InsertRunOnThread decides.
	InsertThreadAndRun string `sql:"optional"`
}
