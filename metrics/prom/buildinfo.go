package prom

import (
	"runtime/debug"

	"github.com/prometheus/client_golang/prometheus"
)

// buildInfo is rocketstore_build_info: 1, labelled with the module
// version, the Go version and the VCS revision the binary was built from
// ("unknown" where the build recorded none, e.g. with -buildvcs=false).
func buildInfo() prometheus.Collector {
	version, goVersion, revision := "unknown", "unknown", "unknown"
	if bi, ok := debug.ReadBuildInfo(); ok {
		goVersion = bi.GoVersion
		if bi.Main.Version != "" {
			version = bi.Main.Version
		}
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" && s.Value != "" {
				revision = s.Value
			}
		}
	}
	g := prometheus.NewGauge(prometheus.GaugeOpts{Name: "rocketstore_build_info",
		Help:        "1, labelled with the build's version, Go version and VCS revision.",
		ConstLabels: prometheus.Labels{"version": version, "goversion": goVersion, "revision": revision}})
	g.Set(1)
	return g
}
