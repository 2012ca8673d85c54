package prom

import (
	"io/fs"
	"path/filepath"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/rocketstore/rocketstore/server"
)

// Attach registers the gauges that read the server's and the store's
// state; later calls do nothing.
func (m *Metrics) Attach(s server.State) {
	m.attached.Do(func() {
		g := func(name, help string, fn func() float64) prometheus.Collector {
			return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help}, fn)
		}
		c := func(name, help string, fn func() float64) prometheus.Collector {
			return prometheus.NewCounterFunc(prometheus.CounterOpts{Name: name, Help: help}, fn)
		}
		st := s.Store
		m.Registry.MustRegister(
			g("rocketstore_held_pulls", "Pull requests held (long polling).", func() float64 { return float64(s.HeldPulls()) }),
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
			c("rocketstore_dispatch_errors_total", "Failed dispatch passes (each retry counts).",
				func() float64 { return float64(st.Health().DispatchErrors) }),
			c("rocketstore_disk_full_errors_total", "Puts refused because a file could not be created (ENOSPC/EDQUOT).",
				func() float64 { return float64(st.Health().DiskFullErrors) }),
			c("rocketstore_flush_errors_total", "Failed syncs (each turns the store read-only).",
				func() float64 { return float64(st.Health().FlushErrors) }),
			c("rocketstore_page_release_errors_total", "Flushes whose release of the written pages' mapping failed (logged; the sync still writes them, only slower).",
				func() float64 { return float64(st.Health().PageReleaseErrors) }),
			c("rocketstore_consumequeue_unit_mismatches_total", "ConsumeQueue units found not to match the CommitLog record they point at (never served; logged at ERROR).",
				func() float64 { return float64(st.Health().UnitMismatches) }),
			c("rocketstore_consumequeue_units_repaired_total", "Mismatching ConsumeQueue units rewritten from the CommitLog.",
				func() float64 { return float64(st.Health().UnitsRepaired) }),
			c("rocketstore_consumequeue_units_lost_total", "Mismatching ConsumeQueue units whose record the CommitLog does not hold (pulls step over them).",
				func() float64 { return float64(st.Health().UnitsLost) }),
			g("rocketstore_recovery_damaged_records", "Damaged CommitLog ranges the last recovery skipped and that are not repaired since (see the log and `rocketstore verify`).",
				func() float64 { return float64(st.Health().DamagedRecords) }),
			g("rocketstore_connections", "Open remoting connections.", func() float64 { return float64(s.Remoting().ConnsOpen) }),
			g("rocketstore_receive_buffer_bytes", "Bytes of incoming frames held (capped by serverMaxReceiveBytes).",
				func() float64 { return float64(s.Remoting().ReceiveBytesInUse) }),
			c("rocketstore_connections_refused_total", "Connections refused (serverMaxConnections) or closed waiting for receive buffer budget.",
				func() float64 { st := s.Remoting(); return float64(st.ConnsRejected + st.ReceiveBudgetCloses) }),
			c("rocketstore_remoting_receive_bytes_total", "Frame bytes read on the server's remoting connections (name server and broker ports: this process's own traffic).",
				func() float64 { return float64(s.Remoting().BytesIn) }),
			c("rocketstore_remoting_transmit_bytes_total", "Frame bytes written on the server's remoting connections (name server and broker ports).",
				func() float64 { return float64(s.Remoting().BytesOut) }),
			g("rocketstore_consumer_groups", "Consumer groups with online clients.", func() float64 { g, _ := s.Clients(); return float64(g) }),
			g("rocketstore_consumers", "Online (group, client) registrations.", func() float64 { _, n := s.Clients(); return float64(n) }),
		)
		if s.Timer != nil {
			m.Registry.MustRegister(&timerCollector{svc: s.Timer})
		}
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

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
