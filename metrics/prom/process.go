package prom

import (
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// processCollector is the client library's process collector without its
// process_network_* series: on Linux those read /proc/PID/net/dev, which
// counts every interface of the network namespace (every process's
// traffic, not this one's). The server's own traffic is counted on its
// connections instead (rocketstore_remoting_*_bytes_total).
type processCollector struct{ c prometheus.Collector }

func newProcessCollector() prometheus.Collector {
	return processCollector{collectors.NewProcessCollector(collectors.ProcessCollectorOpts{})}
}

// namespaceWide reports whether d is one of the namespace-wide series.
// A Desc exposes its name only through String.
func namespaceWide(d *prometheus.Desc) bool {
	return strings.Contains(d.String(), `fqName: "process_network_`)
}

func (p processCollector) Describe(ch chan<- *prometheus.Desc) {
	all := make(chan *prometheus.Desc)
	go func() { p.c.Describe(all); close(all) }()
	for d := range all {
		if !namespaceWide(d) {
			ch <- d
		}
	}
}

func (p processCollector) Collect(ch chan<- prometheus.Metric) {
	all := make(chan prometheus.Metric)
	go func() { p.c.Collect(all); close(all) }()
	for m := range all {
		if !namespaceWide(m.Desc()) {
			ch <- m
		}
	}
}
