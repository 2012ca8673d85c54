package server_test

import (
	"runtime"
	"strings"
	"testing"

	"github.com/rocketstore/rocketstore/broker"
	"github.com/rocketstore/rocketstore/remoting"
	"github.com/rocketstore/rocketstore/server"
)

// TestMetricsNamesAndScope: counters are counters named _total, the build
// is described, and no series reports traffic beyond this process.
func TestMetricsNamesAndScope(t *testing.T) {
	m := server.NewMetrics(t.TempDir())
	e := newEnv(t, func(_ *broker.Config, sc *server.Config) { sc.Metrics = m })
	wantCode(t, e.send("M", 0, "x", ""), remoting.CodeSuccess)
	fams, err := m.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]int{} // index in fams + 1
	for i, f := range fams {
		byName[f.GetName()] = i + 1
		if strings.HasPrefix(f.GetName(), "process_network_") {
			t.Errorf("%s reports the whole network namespace, not this process", f.GetName())
		}
	}
	if byName["rocketstore_connections_refused"] != 0 {
		t.Error("rocketstore_connections_refused is still exported")
	}
	for _, n := range []string{"rocketstore_connections_refused_total", "rocketstore_remoting_receive_bytes_total", "rocketstore_remoting_transmit_bytes_total"} {
		if i := byName[n]; i == 0 || fams[i-1].GetType().String() != "COUNTER" {
			t.Errorf("%s: missing or not a counter", n)
		}
	}
	if i := byName["rocketstore_remoting_receive_bytes_total"]; i != 0 && fams[i-1].GetMetric()[0].GetCounter().GetValue() <= 0 {
		t.Error("rocketstore_remoting_receive_bytes_total is 0 after a send")
	}
	i := byName["rocketstore_build_info"]
	if i == 0 || len(fams[i-1].GetMetric()) != 1 || fams[i-1].GetMetric()[0].GetGauge().GetValue() != 1 {
		t.Fatal("rocketstore_build_info missing or not 1")
	}
	bi := fams[i-1]
	labels := map[string]string{}
	for _, l := range bi.GetMetric()[0].GetLabel() {
		labels[l.GetName()] = l.GetValue()
	}
	if labels["goversion"] != runtime.Version() || labels["version"] == "" || labels["rocketmq_version"] != server.BrokerVersionDesc {
		t.Errorf("rocketstore_build_info labels %v", labels)
	}
	if runtime.GOOS == "linux" && byName["process_cpu_seconds_total"] == 0 {
		t.Error("the process collector's own series are gone")
	}
}
