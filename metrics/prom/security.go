package prom

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/rocketstore/rocketstore/server"
)

// securityMetrics count what the ACL and the limits refuse.
type securityMetrics struct {
	denied, reloads, limited, createRefused *prometheus.CounterVec
}

// Security registers the security counters (on the first call) and
// returns them.
func (m *Metrics) Security() server.SecurityMetrics {
	m.secOnce.Do(func() {
		f := prometheus.NewCounterVec
		m.sec = &securityMetrics{
			denied: f(prometheus.CounterOpts{Name: "rocketstore_acl_denied_total",
				Help: "Requests refused NO_PERMISSION by the ACL, by reason."}, []string{"reason"}),
			reloads: f(prometheus.CounterOpts{Name: "rocketstore_acl_reloads_total",
				Help: "Reloads of the ACL file after a change, by result (ok, error: the previous rules stayed)."}, []string{"result"}),
			limited: f(prometheus.CounterOpts{Name: "rocketstore_requests_limited_total",
				Help: "Requests answered SYSTEM_BUSY by a rate or in-flight limit, by limit."}, []string{"limit"}),
			createRefused: f(prometheus.CounterOpts{Name: "rocketstore_topic_autocreate_refused_total",
				Help: "Sends to a missing topic whose auto-creation was refused, by reason."}, []string{"reason"}),
		}
		m.Registry.MustRegister(m.sec.denied, m.sec.reloads, m.sec.limited, m.sec.createRefused)
	})
	return m.sec
}

func (s *securityMetrics) Denied(reason string)    { s.denied.WithLabelValues(reason).Inc() }
func (s *securityMetrics) ACLReload(result string) { s.reloads.WithLabelValues(result).Inc() }
func (s *securityMetrics) Limited(limit string)    { s.limited.WithLabelValues(limit).Inc() }
func (s *securityMetrics) AutoCreateRefused(reason string) {
	s.createRefused.WithLabelValues(reason).Inc()
}
