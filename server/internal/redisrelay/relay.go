// Package redisrelay carries the run service's live events, run ends and
// cancel requests between replicas over Redis pub/sub (runs.Relay).
//
// Redis holds nothing here that cannot be lost: every event is in the
// durable log before it is relayed, the brokers read the log on a timer
// when a relay is in use, and cancel requests are also in the database.
// A Redis restart therefore costs latency, never events: go-redis
// reconnects and subscribes again by itself.
//
// Each run has a channel, subscribed to only while this process has
// subscribers for the run; cancel requests share one channel every replica
// listens to. A message names its origin, so a replica ignores its own.
package redisrelay

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/trellis-agents/trellis/server/db"
)

// Handler receives what other replicas relay.
type Handler struct {
	// Deliver hands relayed events to this process's subscribers.
	Deliver func(runID string, events []db.Event)
	// Ended tells this process's subscribers that a run ended.
	Ended func(runID string)
	// Cancel cancels a run if it executes in this process.
	Cancel func(runID, action string) bool
}

// queueSize bounds the operations waiting to be sent; past it, live
// messages are dropped (and counted): the durable log has them.
const queueSize = 4096

// opTimeout bounds one Redis command.
const opTimeout = 2 * time.Second

// Relay is a runs.Relay over Redis.
type Relay struct {
	rdb    goredis.UniversalClient
	prefix string
	origin string
	h      Handler
	log    *slog.Logger
	ps     *goredis.PubSub

	mu       sync.RWMutex // guards closed against a send on ops
	closed   bool
	ops      chan op
	sendDone chan struct{}
	recvDone chan struct{}
	once     sync.Once
	dropped  atomic.Int64
}

type opKind int

const (
	opPublish opKind = iota
	opEnd
	opCancel
	opWatch
	opUnwatch
)

type op struct {
	kind   opKind
	run    string
	action string
	events []db.Event
}

// message is what travels on a channel.
type message struct {
	Origin string     `json:"o"`
	Kind   string     `json:"k"` // "events", "end" or "cancel"
	Run    string     `json:"r"`
	Action string     `json:"a,omitempty"`
	Events []db.Event `json:"e,omitempty"`
}

// New starts a relay on rdb for the replica named origin. Channel names
// start with prefix ("trellis" when ""), so several deployments may share
// one Redis. Close stops it.
func New(ctx context.Context, rdb goredis.UniversalClient, prefix, origin string, h Handler, log *slog.Logger) (*Relay, error) {
	if rdb == nil || origin == "" || h.Deliver == nil || h.Ended == nil || h.Cancel == nil {
		return nil, errors.New("redisrelay: New needs a client, an origin and every handler")
	}
	if prefix == "" {
		prefix = "trellis"
	}
	if log == nil {
		log = slog.Default()
	}
	r := &Relay{rdb: rdb, prefix: prefix, origin: origin, h: h, log: log,
		ops: make(chan op, queueSize), sendDone: make(chan struct{}), recvDone: make(chan struct{})}
	pctx, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	if err := rdb.Ping(pctx).Err(); err != nil {
		return nil, errors.New("redisrelay: Redis does not answer: " + err.Error())
	}
	r.ps = rdb.Subscribe(pctx, r.cancelChannel())
	if _, err := r.ps.Receive(pctx); err != nil { // the subscription's confirmation
		r.ps.Close()
		return nil, errors.New("redisrelay: subscribe: " + err.Error())
	}
	go r.send()
	go r.receive()
	return r, nil
}

func (r *Relay) runChannel(runID string) string { return r.prefix + ":run:" + runID }
func (r *Relay) cancelChannel() string          { return r.prefix + ":cancel" }

// enqueue queues o without blocking; a full queue drops it.
func (r *Relay) enqueue(o op) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	if r.closed {
		return
	}
	select {
	case r.ops <- o:
	default:
		if n := r.dropped.Add(1); n == 1 || n%1000 == 0 {
			r.log.Warn("redisrelay: the send queue is full; live messages are dropped (streams read them from the log)", "dropped", n)
		}
	}
}

// Publish relays a run's events.
func (r *Relay) Publish(runID string, events []db.Event) {
	r.enqueue(op{kind: opPublish, run: runID, events: append([]db.Event(nil), events...)})
}

// End relays a run's end.
func (r *Relay) End(runID string) { r.enqueue(op{kind: opEnd, run: runID}) }

// Cancel relays a cancel request.
func (r *Relay) Cancel(runID, action string) {
	r.enqueue(op{kind: opCancel, run: runID, action: action})
}

// Watch subscribes to a run's channel until the returned stop is called.
func (r *Relay) Watch(runID string) func() {
	r.enqueue(op{kind: opWatch, run: runID})
	var once sync.Once
	return func() { once.Do(func() { r.enqueue(op{kind: opUnwatch, run: runID}) }) }
}

// Dropped reports how many live messages a full queue dropped.
func (r *Relay) Dropped() int64 { return r.dropped.Load() }

// send runs the queued operations in order.
func (r *Relay) send() {
	defer close(r.sendDone)
	for o := range r.ops {
		ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
		var err error
		switch o.kind {
		case opWatch:
			err = r.ps.Subscribe(ctx, r.runChannel(o.run))
		case opUnwatch:
			err = r.ps.Unsubscribe(ctx, r.runChannel(o.run))
		default:
			m := message{Origin: r.origin, Run: o.run}
			ch := r.runChannel(o.run)
			switch o.kind {
			case opPublish:
				m.Kind, m.Events = "events", o.events
			case opEnd:
				m.Kind = "end"
			case opCancel:
				m.Kind, m.Action, ch = "cancel", o.action, r.cancelChannel()
			}
			var b []byte
			if b, err = json.Marshal(m); err == nil {
				err = r.rdb.Publish(ctx, ch, b).Err()
			}
		}
		cancel()
		if err != nil {
			r.log.Debug("redisrelay: a relay command failed; streams fall back to the log", "err", err)
		}
	}
}

// receive hands other replicas' messages to the handler.
func (r *Relay) receive() {
	defer close(r.recvDone)
	for msg := range r.ps.Channel() {
		var m message
		if err := json.Unmarshal([]byte(msg.Payload), &m); err != nil || m.Origin == r.origin || m.Run == "" {
			continue
		}
		switch m.Kind {
		case "events":
			r.h.Deliver(m.Run, m.Events)
		case "end":
			r.h.Ended(m.Run)
		case "cancel":
			r.h.Cancel(m.Run, m.Action)
		}
	}
}

// Close stops the relay: queued operations are sent (each bounded by a
// timeout), then the subscription closes. The client stays open.
func (r *Relay) Close() error {
	var err error
	r.once.Do(func() {
		r.mu.Lock()
		r.closed = true
		close(r.ops)
		r.mu.Unlock()
		<-r.sendDone
		err = r.ps.Close()
		<-r.recvDone
	})
	return err
}
