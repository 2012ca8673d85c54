// Package prom implements the server's metrics (server.Metrics) with
// Prometheus. cmd/rocketstore wires it in and serves Registry; the server
// package itself does not import Prometheus.
package prom

import (
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/rocketstore/rocketstore/server"
)

// Metrics are the server's Prometheus metrics. Create them with New, pass
// them in server.Config.Metrics, and serve Registry (e.g. with
// promhttp.HandlerFor). One Metrics serves one server.
type Metrics struct {
	// Registry holds every metric, the Go runtime's and the process's.
	Registry *prometheus.Registry

	requests *prometheus.CounterVec // by request code
	// byCode holds requests' counter of each code below
	// requestCodesCached once seen: Request runs once a request, and
	// the vector's lookup (the code formatted, the label hashed, a map
	// read under a lock) was a few per cent of serve's CPU under the
	// official client's load.
	byCode      [requestCodesCached]atomic.Pointer[prometheus.Counter]
	puts        *prometheus.CounterVec // send requests by response code
	putsBy      resultCounters         // puts' counters, by result
	putMessages prometheus.Counter
	putBytes    prometheus.Counter
	putLatency  prometheus.Histogram
	pulls       *prometheus.CounterVec // pull answers by response code
	pullsBy     resultCounters         // pulls' counters, by result
	pulledMsgs  prometheus.Counter
	sendBacks   *prometheus.CounterVec
	notifies    prometheus.Counter

	dir         string
	attached    sync.Once
	clusterOnce sync.Once
	secOnce     sync.Once
	sec         *securityMetrics

	diskMu  sync.Mutex
	diskAt  time.Time
	diskVal float64
}

var _ server.Metrics = (*Metrics)(nil)

// New returns metrics registered in a new registry, with the Go runtime and
// process collectors (the process's network series left out: see
// processCollector) and rocketstore_build_info. dir is the store directory whose size the disk-use
// gauge reports ("" for none).
func New(dir string) *Metrics {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), newProcessCollector(), buildInfo())
	m := &Metrics{Registry: reg, dir: dir}
	f := prometheus.NewCounterVec
	m.requests = f(prometheus.CounterOpts{Name: "rocketstore_requests_total", Help: "Remoting requests received, by request code."}, []string{"code"})
	m.puts = f(prometheus.CounterOpts{Name: "rocketstore_put_requests_total", Help: "Send requests (10, 310, 320) answered, by response code."}, []string{"result"})
	m.putMessages = prometheus.NewCounter(prometheus.CounterOpts{Name: "rocketstore_put_messages_total", Help: "Messages stored by send requests."})
	m.putBytes = prometheus.NewCounter(prometheus.CounterOpts{Name: "rocketstore_put_bytes_total", Help: "Body bytes of stored send requests."})
	m.putLatency = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "rocketstore_put_latency_seconds",
		Help:    "Time to store a send request; with SYNC_FLUSH it includes the flush (group commit).",
		Buckets: prometheus.ExponentialBuckets(50e-6, 2, 16)})
	m.pulls = f(prometheus.CounterOpts{Name: "rocketstore_pulls_total", Help: "Pull requests answered, by response code."}, []string{"result"})
	m.pulledMsgs = prometheus.NewCounter(prometheus.CounterOpts{Name: "rocketstore_pulled_messages_total", Help: "Messages returned by pulls."})
	m.sendBacks = f(prometheus.CounterOpts{Name: "rocketstore_send_backs_total", Help: "CONSUMER_SEND_MSG_BACK requests, by response code."}, []string{"result"})
	m.notifies = prometheus.NewCounter(prometheus.CounterOpts{Name: "rocketstore_consumer_ids_changed_total", Help: "Group membership changes notified to clients."})
	reg.MustRegister(m.requests, m.puts, m.putMessages, m.putBytes, m.putLatency, m.pulls, m.pulledMsgs, m.sendBacks, m.notifies)
	return m
}

// requestCodesCached bounds the request codes whose counters Request
// keeps at hand; RocketMQ's codes are below it, others take the lookup.
const requestCodesCached = 1024

// Request counts a remoting request by request code.
func (m *Metrics) Request(code int32) {
	if code < 0 || code >= requestCodesCached {
		m.requests.WithLabelValues(strconv.Itoa(int(code))).Inc()
		return
	}
	if c := m.byCode[code].Load(); c != nil {
		(*c).Inc()
		return
	}
	c := m.requests.WithLabelValues(strconv.Itoa(int(code)))
	m.byCode[code].Store(&c) // racing stores hold the same counter
	c.Inc()
}

// Put records a send request's answer.
func (m *Metrics) Put(result string, stored bool, msgs, bodyBytes int, took time.Duration) {
	m.putsBy.inc(m.puts, result)
	if stored {
		m.putMessages.Add(float64(msgs))
		m.putBytes.Add(float64(bodyBytes))
		m.putLatency.Observe(took.Seconds())
	}
}

// Pull records a pull's answer.
func (m *Metrics) Pull(result string, msgs int) {
	m.pullsBy.inc(m.pulls, result)
	m.pulledMsgs.Add(float64(msgs))
}

// SendBack counts a CONSUMER_SEND_MSG_BACK answer.
func (m *Metrics) SendBack(result string) { m.sendBacks.WithLabelValues(result).Inc() }

// ConsumerIDsChanged counts a group membership change notified to clients.
func (m *Metrics) ConsumerIDsChanged() { m.notifies.Inc() }

// resultCounters keeps a vector's counter of each result once seen, for
// the counters of every send and pull: the vector's own lookup hashes the
// label and reads a map under a lock. Results are response code names, a
// small fixed set, so the cache stays small.
type resultCounters struct{ m sync.Map } // result → prometheus.Counter

// inc counts one answer with result in vec.
func (rc *resultCounters) inc(vec *prometheus.CounterVec, result string) {
	if c, ok := rc.m.Load(result); ok {
		c.(prometheus.Counter).Inc()
		return
	}
	c := vec.WithLabelValues(result)
	rc.m.Store(result, c) // racing stores hold the same counter
	c.Inc()
}
