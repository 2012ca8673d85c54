package server

import (
	"time"

	"github.com/rocketstore/rocketstore/broker/timer"
	"github.com/rocketstore/rocketstore/engine"
	"github.com/rocketstore/rocketstore/remoting"
)

// Metrics receives the server's measurements (Config.Metrics; nil: none).
// Package metrics/prom implements it with Prometheus; keeping it an
// interface spares an embedder of this package the Prometheus client. The
// methods are called on the request paths and must be quick and safe for
// concurrent use.
type Metrics interface {
	// Request counts a remoting request by its request code.
	Request(code int32)
	// Put records a send request's answer: its response code's name, and
	// when stored (SUCCESS or FLUSH_DISK_TIMEOUT) the messages, body
	// bytes and time it took.
	Put(result string, stored bool, msgs, bodyBytes int, took time.Duration)
	// Pull records a pull's answer: its response code's name and the
	// messages it returned.
	Pull(result string, msgs int)
	// SendBack counts a CONSUMER_SEND_MSG_BACK answer by response code.
	SendBack(result string)
	// ConsumerIDsChanged counts a group membership change notified to
	// clients.
	ConsumerIDsChanged()
	// Security returns the counters of the ACL and the limits; the server
	// calls it once, when security is configured.
	Security() SecurityMetrics
	// Attach gives the metrics the server's state, which gauges read when
	// scraped; the server calls it once, at start.
	Attach(st State)
}

// SecurityMetrics count what the security checks refuse.
type SecurityMetrics interface {
	// Denied counts a request refused NO_PERMISSION by the ACL.
	Denied(reason string)
	// ACLReload counts a reload of the ACL file ("ok" or "error").
	ACLReload(result string)
	// Limited counts a request refused SYSTEM_BUSY by a limit.
	Limited(limit string)
	// AutoCreateRefused counts a refused topic auto-creation.
	AutoCreateRefused(reason string)
}

// State is what a running server offers gauges to read.
type State struct {
	// Store is the broker's store (offsets, lags, health).
	Store *engine.Store
	// HeldPulls returns the pull requests held (long polling).
	HeldPulls func() int
	// Remoting returns the remoting server's connection counters.
	Remoting func() remoting.Stats
	// Clients returns the consumer groups with online clients and the
	// online (group, client) registrations.
	Clients func() (groups, consumers int)
	// Timer is the broker's timer message service (pending timers,
	// deliveries and their lateness); nil: none.
	Timer *timer.Service
}

// attachMetrics hands the server's state to its metrics.
func (s *Server) attachMetrics() {
	s.metrics.Attach(State{Store: s.b.Store(), HeldPulls: s.heldPulls, Remoting: s.RemotingStats, Clients: s.clients.counts,
		Timer: s.b.Timer()})
}
