// Package runs is the agent service's run service: it creates runs with a
// multitask strategy, executes them as jobs that advance a thread, cancels
// them, and keeps each run's event log, which every wire reads.
package runs

import (
	"context"
	"iter"
	"sync"
	"time"

	"github.com/trellis-agents/trellis/server/db"
)

// Broker hands a run's events to the subscribers in this process as they
// are appended to its durable log. It never blocks the publisher: a
// subscriber that falls more than its buffer behind is marked lagging and
// catches up from the durable log (see Join), so a slow client costs
// bounded memory and loses nothing.
type Broker struct {
	mu      sync.Mutex
	subs    map[string]map[*Subscription]struct{}
	relay   Relay
	watches map[string]func() // runs watched through the relay → stop
	poll    time.Duration     // Join also reads the log this often (0: never)
}

// NewBroker returns an empty broker.
func NewBroker() *Broker {
	return &Broker{subs: map[string]map[*Subscription]struct{}{}, watches: map[string]func(){}}
}

// Relay carries a broker's events, run ends and cancel requests to the
// brokers of other processes (replicas on one database), and theirs to it
// (through the broker's Deliver and Ended, and the run service's
// CancelLocal). It is best effort: the durable log stays the truth, and a
// broker with a relay also reads the log every poll interval, so a
// message lost with the relay (a Redis restart) costs latency, not
// events. Its methods must not block: they queue their work.
type Relay interface {
	// Publish sends a run's events, already durable, to other processes.
	Publish(runID string, events []db.Event)
	// End tells other processes that the run ended.
	End(runID string)
	// Cancel asks the process executing the run to cancel it.
	Cancel(runID, action string)
	// Watch starts receiving runID's events and end from other processes;
	// the returned function stops it.
	Watch(runID string) (stop func())
}

// SetRelay connects the broker to other processes through r; Join then
// also reads the durable log every poll (a second when 0). Call it before
// the broker is used.
func (b *Broker) SetRelay(r Relay, poll time.Duration) {
	if poll <= 0 {
		poll = time.Second
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.relay, b.poll = r, poll
}

// Subscription receives one run's live events.
type Subscription struct {
	b      *Broker
	runID  string
	mu     sync.Mutex
	queue  []db.Event    // delivered, not yet taken (at most subBuffer)
	spare  []db.Event    // the array of the batch taken before, reused
	lagged bool          // events were dropped: re-read the durable log
	ended  bool          // the run ended: nothing more will be published
	final  *runFinal     // how it ended, when it ended in this process
	wake   chan struct{} // signalled on delivery, lag or end (capacity 1)
}

// subBuffer is how many events a subscriber may fall behind before it is
// marked lagging. The queue grows to what the subscriber has not taken
// yet, so a run of a few events costs a few slots, not subBuffer: a
// channel of subBuffer events was 6.5 KB allocated per runs/wait.
const subBuffer = 64

// subFirst is the queue's capacity at its first delivery (a one-node run
// publishes a handful of events).
const subFirst = 4

// Subscribe starts receiving runID's events. Call Close when done.
func (b *Broker) Subscribe(runID string) *Subscription {
	s := &Subscription{b: b, runID: runID, wake: make(chan struct{}, 1)}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.subs[runID] == nil {
		b.subs[runID] = map[*Subscription]struct{}{}
		if b.relay != nil {
			b.watches[runID] = b.relay.Watch(runID)
		}
	}
	b.subs[runID][s] = struct{}{}
	return s
}

// Publish hands events (already durable, in Seq order) to runID's
// subscribers, here and, through the relay, in other processes.
func (b *Broker) Publish(runID string, events ...db.Event) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.relay != nil {
		b.relay.Publish(runID, events)
	}
	b.deliver(runID, events)
}

// relayCancel sends a cancel request to the other processes, when the
// broker has a relay.
func (b *Broker) relayCancel(runID, action string) {
	b.mu.Lock()
	r := b.relay
	b.mu.Unlock()
	if r != nil {
		r.Cancel(runID, action)
	}
}

// Deliver hands events relayed from another process to runID's
// subscribers here.
func (b *Broker) Deliver(runID string, events []db.Event) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.deliver(runID, events)
}

func (b *Broker) deliver(runID string, events []db.Event) {
	for s := range b.subs[runID] {
		s.mu.Lock()
		if cap(s.queue) == 0 { // the first delivery: room for a short run's events at once
			s.queue = make([]db.Event, 0, min(subBuffer, max(subFirst, len(events))))
		}
		for _, ev := range events {
			if len(s.queue) == subBuffer {
				s.lagged = true
				break
			}
			s.queue = append(s.queue, ev)
		}
		s.mu.Unlock()
		s.notify()
	}
}

// End tells runID's subscribers that the run has ended: after what they
// have, the durable log is complete.
func (b *Broker) End(runID string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.relay != nil {
		b.relay.End(runID)
	}
	b.ended(runID)
}

// Ended tells runID's subscribers here that the run ended in another
// process.
func (b *Broker) Ended(runID string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.ended(runID)
}

func (b *Broker) ended(runID string) {
	for s := range b.subs[runID] {
		s.signal(func() { s.ended = true })
	}
}

// runFinal is what the process that executed a run knows as it ends it:
// the Seq of the run's last event (0: unknown) and how the run ended.
type runFinal struct {
	seq int64
	end db.RunEnd
}

// endWith is End from the process that executed the run, with how it
// ended: a subscriber here that has every event up to f.seq then has the
// whole log and the run's status without reading either back.
func (b *Broker) endWith(runID string, f runFinal) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.relay != nil {
		b.relay.End(runID)
	}
	for s := range b.subs[runID] {
		s.signal(func() { s.ended, s.final = true, &f })
	}
}

// Subscribers reports how many subscriptions runID has (for tests and
// metrics).
func (b *Broker) Subscribers(runID string) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.subs[runID])
}

func (s *Subscription) signal(set func()) {
	s.mu.Lock()
	set()
	s.mu.Unlock()
	s.notify()
}

// notify wakes the subscriber, unless it is woken already.
func (s *Subscription) notify() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// take returns the events delivered since the last take, in order, and
// the subscription's state as of them. The returned slice is valid until
// the next take: its array then takes further deliveries.
func (s *Subscription) take() (evs []db.Event, lagged, ended bool, final *runFinal) {
	s.mu.Lock()
	defer s.mu.Unlock()
	evs = s.queue
	clear(s.spare) // let the events taken before go
	s.queue, s.spare = s.spare[:0], evs
	lagged, s.lagged = s.lagged, false
	return evs, lagged, s.ended, s.final
}

// Close stops the subscription.
func (s *Subscription) Close() {
	s.b.mu.Lock()
	defer s.b.mu.Unlock()
	if m := s.b.subs[s.runID]; m != nil {
		delete(m, s)
		if len(m) == 0 {
			delete(s.b.subs, s.runID)
			if stop := s.b.watches[s.runID]; stop != nil {
				delete(s.b.watches, s.runID)
				stop()
			}
		}
	}
}

// Log is what Join reads a run's durable events and status from.
type Log interface {
	ReadEvents(ctx context.Context, tenant, runID string, after int64, limit int) ([]db.Event, error)
}

// joinPage is how many durable events Join reads at a time.
const joinPage = 256

// Join yields runID's events with Seq > after: first from the durable log,
// then live from the broker, with no gap and no duplicate, until the run
// ends (the broker's End, or ended reporting true when Join starts or
// after the log is read) or ctx is done. A subscriber that lags is caught
// up from the log. ended reports whether the run is over (its status is
// terminal); it is asked once the log has been read, so a run that ends
// between the read and the subscription is not waited on forever. When
// log is a db.EventsStatusReader, the status read with the log answers
// instead, and ended is not called.
func Join(ctx context.Context, log Log, b *Broker, tenant, runID string, after int64, ended func(context.Context) (bool, error)) iter.Seq2[db.Event, error] {
	return join(ctx, log, b, tenant, runID, after, ended, nil)
}

// joinEnd is how a join ended, when it knows: complete says it yielded
// the run's whole log and the run has ended as end says, so a reader
// need not read the log's tail or the run's status again.
type joinEnd struct {
	complete bool
	end      db.RunEnd
}

// join is Join, reporting in out (when not nil) whether it yielded the
// whole log of an ended run: its status was read, terminal, with the log
// (db.EventsStatusReader), or the run ended in this process and every
// event up to its last was yielded.
func join(ctx context.Context, log Log, b *Broker, tenant, runID string, after int64, ended func(context.Context) (bool, error), out *joinEnd) iter.Seq2[db.Event, error] {
	if out == nil {
		out = &joinEnd{}
	}
	sl, _ := log.(db.EventsStatusReader)
	return func(yield func(db.Event, error) bool) {
		sub := b.Subscribe(runID) // before reading, so nothing falls between
		defer sub.Close()
		var poll <-chan time.Time // the log, read now and then when a relay may lose messages
		b.mu.Lock()
		if b.poll > 0 {
			t := time.NewTicker(b.poll)
			defer t.Stop()
			poll = t.C
		}
		b.mu.Unlock()
		last := after
		// catchUp reads the log past last; with sl it also reports the
		// run's status as of its last read (else the zero RunEnd).
		catchUp := func() (db.RunEnd, bool) {
			for {
				var (
					evs []db.Event
					st  db.RunEnd
					err error
				)
				if sl != nil {
					evs, st, err = sl.ReadEventsStatus(ctx, tenant, runID, last, joinPage)
				} else {
					evs, err = log.ReadEvents(ctx, tenant, runID, last, joinPage)
				}
				if err != nil {
					yield(db.Event{}, err)
					return db.RunEnd{}, false
				}
				for _, ev := range evs {
					last = ev.Seq
					if !yield(ev, nil) {
						return db.RunEnd{}, false
					}
				}
				if len(evs) < joinPage {
					return st, true
				}
			}
		}
		// over reports whether the run has ended, after a catchUp that
		// read st; when it has, the log is read to its end.
		over := func(st db.RunEnd) bool {
			if sl != nil {
				if st.Status.Terminal() {
					out.complete, out.end = true, st
					return true
				}
				return false
			}
			if done, err := ended(ctx); err != nil {
				yield(db.Event{}, err)
				return true
			} else if done {
				catchUp()
				return true
			}
			return false
		}
		st, ok := catchUp()
		if !ok || over(st) {
			return
		}
		for {
			select {
			case <-ctx.Done():
				return
			case <-poll:
				st, ok := catchUp()
				if !ok || over(st) {
					return
				}
			case <-sub.wake:
				evs, lagged, isEnded, final := sub.take()
				for _, ev := range evs {
					switch {
					case ev.Seq <= last:
						continue // read from the log already
					case ev.Seq > last+1:
						if lagged || isEnded {
							continue // the log read that follows fills any gap
						}
						if _, ok := catchUp(); !ok { // a gap: the log has what was missed
							return
						}
						if ev.Seq <= last {
							continue
						}
					}
					last = ev.Seq
					if !yield(ev, nil) {
						return
					}
				}
				if !lagged && !isEnded {
					continue
				}
				if isEnded && !lagged && final != nil && final.seq > 0 && last >= final.seq && final.end.Status.Terminal() {
					// Ended here, and every event came live.
					out.complete, out.end = true, final.end
					return
				}
				st, ok := catchUp()
				if !ok {
					return
				}
				if isEnded && st.Status.Terminal() {
					out.complete, out.end = true, st
				}
				if isEnded {
					return
				}
			}
		}
	}
}
