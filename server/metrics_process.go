package server

import (
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// processCollector is the standard process collector without its
// process_network_* series: on Linux they read /proc/PID/net/dev, which
// counts every interface of the network namespace (every process's
// traffic, not this one's). rocketstore_remoting_*_bytes_total count
// this process's remoting traffic instead.
type processCollector struct{ c prometheus.Collector }

func newProcessCollector() prometheus.Collector {
	return processCollector{collectors.NewProcessCollector(collectors.ProcessCollectorOpts{})}
}

// namespaceWide reports whether d is one of the namespace-wide series.
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

// buildInfo is rocketstore_build_info: 1, labelled with the module
// version ("(devel)" when built from a checkout), the Go version and the
// RocketMQ version the broker reports.
func buildInfo() prometheus.Collector {
	version := "(devel)"
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		version = bi.Main.Version
	}
	g := prometheus.NewGauge(prometheus.GaugeOpts{Name: "rocketstore_build_info",
		Help:        "Always 1; the labels say which build runs.",
		ConstLabels: prometheus.Labels{"version": version, "goversion": runtime.Version(), "rocketmq_version": BrokerVersionDesc}})
	g.Set(1)
	return g
}
