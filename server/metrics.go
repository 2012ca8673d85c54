package server

import (
	"io/fs"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/rocketstore/rocketstore/broker"
)

// Metrics are the server's Prometheus metrics. Create them with
// NewMetrics, pass them in Config.Metrics, and serve Registry (e.g. with
// promhttp.HandlerFor). One Metrics serves one Server.
type Metrics struct {
	Registry *prometheus.Registry

	requests    *prometheus.CounterVec // by request code
	puts        *prometheus.CounterVec // send requests by response code
	putMessages prometheus.Counter
	putBytes    prometheus.Counter
	putLatency  prometheus.Histogram
	pulls       *prometheus.CounterVec // pull answers by response code
	pulledMsgs  prometheus.Counter
	sendBacks   *prometheus.CounterVec
	notifies    prometheus.Counter

	dir  string
	once sync.Once

	diskMu  sync.Mutex
	diskAt  time.Time
	diskVal float64
}

// NewMetrics returns metrics registered in a new registry, with the Go
// runtime and process collectors. dir is the store directory whose size
// the disk-use gauge reports ("" for none).
func NewMetrics(dir string) *Metrics {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
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

// attach registers the gauges that read the server's and broker's state.
func (m *Metrics) attach(s *Server) {
	m.once.Do(func() {
		g := func(name, help string, fn func() float64) prometheus.Collector {
			return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help}, fn)
		}
		st := s.b.Store()
		m.Registry.MustRegister(
			g("rocketstore_held_pulls", "Pull requests held (long polling).", func() float64 { return float64(s.heldPulls()) }),
			g("rocketstore_dispatch_lag_bytes", "CommitLog bytes not yet dispatched to the ConsumeQueues and the index.",
				func() float64 { return float64(st.DispatchBehindBytes()) }),
			g("rocketstore_flush_lag_bytes", "CommitLog bytes written but not yet flushed to disk.",
				func() float64 { return float64(max(0, st.CommitLog().MaxOffset()-st.CommitLog().FlushedWhere())) }),
			g("rocketstore_commitlog_max_offset_bytes", "CommitLog write position.",
				func() float64 { return float64(st.CommitLog().MaxOffset()) }),
			g("rocketstore_store_writable", "1 while the store accepts puts, 0 while it refuses them (disk full, dispatch failing, flush failed).",
				func() float64 { return b2f(st.Health().Writable) }),
			g("rocketstore_store_disk_full", "1 while puts are refused because the disk is full (clears itself once space is freed).",
				func() float64 { return b2f(st.Health().DiskFull) }),
			g("rocketstore_store_dispatch_failing", "1 while the dispatcher cannot build ConsumeQueues or the index (retried every second).",
				func() float64 { return b2f(st.Health().DispatchFailing) }),
			g("rocketstore_store_flush_failed", "1 once a sync failed: the store is read-only until reopened.",
				func() float64 { return b2f(st.Health().FlushFailed) }),
			prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "rocketstore_dispatch_errors_total", Help: "Failed dispatch passes (each retry counts)."},
				func() float64 { return float64(st.Health().DispatchErrors) }),
			prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "rocketstore_disk_full_errors_total", Help: "Puts refused because a file could not be created (ENOSPC/EDQUOT)."},
				func() float64 { return float64(st.Health().DiskFullErrors) }),
			prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "rocketstore_flush_errors_total", Help: "Failed syncs (each turns the store read-only)."},
				func() float64 { return float64(st.Health().FlushErrors) }),
			prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "rocketstore_page_release_errors_total", Help: "Flushes whose release of the written pages' mapping failed (logged; the sync still writes them, only slower)."},
				func() float64 { return float64(st.Health().PageReleaseErrors) }),
			g("rocketstore_recovery_damaged_records", "Damaged CommitLog ranges the last recovery skipped and that are not repaired since (see the log and `rocketstore verify`).",
				func() float64 { return float64(st.Health().DamagedRecords) }),
			g("rocketstore_connections", "Open remoting connections.", func() float64 { return float64(s.rs.Stats().ConnsOpen) }),
			g("rocketstore_receive_buffer_bytes", "Bytes of incoming frames held (capped by serverMaxReceiveBytes).",
				func() float64 { return float64(s.rs.Stats().ReceiveBytesInUse) }),
			g("rocketstore_connections_refused", "Connections refused (serverMaxConnections) or closed waiting for receive buffer budget.",
				func() float64 { st := s.rs.Stats(); return float64(st.ConnsRejected + st.ReceiveBudgetCloses) }),
			g("rocketstore_consumer_groups", "Consumer groups with online clients.", func() float64 { g, _ := s.clients.counts(); return float64(g) }),
			g("rocketstore_consumers", "Online (group, client) registrations.", func() float64 { _, n := s.clients.counts(); return float64(n) }),
		)
		if m.dir != "" {
			m.Registry.MustRegister(g("rocketstore_disk_used_bytes", "Bytes allocated by the store directory's files.", m.diskUse))
		}
	})
}

// diskUse sums the sizes of the store's files, cached for a second so
// that frequent scrapes do not walk the tree each time.
func (m *Metrics) diskUse() float64 {
	m.diskMu.Lock()
	defer m.diskMu.Unlock()
	if time.Since(m.diskAt) < time.Second {
		return m.diskVal
	}
	var n int64
	_ = filepath.WalkDir(m.dir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if fi, err := d.Info(); err == nil {
				n += fi.Size()
			}
		}
		return nil
	})
	m.diskAt, m.diskVal = time.Now(), float64(n)
	return m.diskVal
}

func (m *Metrics) request(code int32) {
	m.requests.WithLabelValues(strconv.Itoa(int(code))).Inc()
}

func (m *Metrics) put(r broker.SendResult, bodyLen int, d time.Duration) {
	m.puts.WithLabelValues(r.Code.String()).Inc()
	if r.Code == broker.Success || r.Code == broker.FlushDiskTimeout {
		m.putMessages.Add(float64(r.MsgNum))
		m.putBytes.Add(float64(bodyLen))
		m.putLatency.Observe(d.Seconds())
	}
}

func (m *Metrics) pull(r *broker.PullResponse) {
	m.pulls.WithLabelValues(r.Code.String()).Inc()
	m.pulledMsgs.Add(float64(r.MsgCount))
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
