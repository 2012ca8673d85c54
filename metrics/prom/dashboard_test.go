package prom_test

import (
	"encoding/json"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rocketstore/rocketstore/cluster"
	"github.com/rocketstore/rocketstore/metrics/prom"
	"github.com/rocketstore/rocketstore/remoting"
	"github.com/rocketstore/rocketstore/server"
)

// exported returns the names of every series a fully attached Metrics
// exports (each labelled family touched once so that it appears), with
// a histogram's _bucket, _sum and _count.
func exported(t *testing.T) map[string]bool {
	t.Helper()
	m := prom.New(t.TempDir())
	b, _ := timerBroker(t)
	m.Attach(server.State{Store: damagedStore(t), HeldPulls: func() int { return 0 },
		Remoting: func() remoting.Stats { return remoting.Stats{} }, Clients: func() (int, int) { return 0, 0 },
		Timer: b.Timer()})
	m.AttachCluster(func() cluster.Status {
		return cluster.Status{State: "Leader", Followers: []cluster.FollowerStatus{{ID: "n2", LastContactMs: 5}}}
	})
	m.Request(10)
	m.Put("SUCCESS", true, 1, 1, time.Millisecond)
	m.Pull("SUCCESS", 1)
	m.SendBack("SUCCESS")
	m.ConsumerIDsChanged()
	sec := m.Security()
	sec.Denied("r")
	sec.ACLReload("ok")
	sec.Limited("l")
	sec.AutoCreateRefused("r")
	fams, err := m.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, f := range fams {
		names[f.GetName()] = true
		if f.GetType().String() == "HISTOGRAM" {
			for _, s := range []string{"_bucket", "_sum", "_count"} {
				names[f.GetName()+s] = true
			}
		}
	}
	return names
}

var metricName = regexp.MustCompile(`\b(?:rocketstore|process|go)_[a-zA-Z0-9_]*`)

// unknownMetrics returns the metric names in expr that are not in names.
func unknownMetrics(expr string, names map[string]bool) []string {
	var out []string
	for _, n := range metricName.FindAllString(expr, -1) {
		if !names[n] {
			out = append(out, n)
		}
	}
	return out
}

// exprs returns every "expr" string in a Grafana dashboard document.
func exprs(v any) []string {
	var out []string
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			if s, ok := x.(string); ok && k == "expr" {
				out = append(out, s)
			} else {
				out = append(out, exprs(x)...)
			}
		}
	case []any:
		for _, x := range v {
			out = append(out, exprs(x)...)
		}
	}
	return out
}

// TestDashboardUsesExportedMetrics: every expression of the Grafana
// dashboard in docs/ names only series that /metrics exports, and
// every documented Raft and cluster series, the pending timers and their
// lateness are on it.
func TestDashboardUsesExportedMetrics(t *testing.T) {
	names := exported(t)
	if got := unknownMetrics("rate(rocketstore_nope_total[1m])", names); !slices.Equal(got, []string{"rocketstore_nope_total"}) {
		t.Fatalf("the check misses an unknown metric: %v", got)
	}
	b, err := os.ReadFile("../../docs/grafana-dashboard.json")
	if err != nil {
		t.Fatal(err)
	}
	var doc any
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatalf("docs/grafana-dashboard.json: %v", err)
	}
	all := exprs(doc)
	if len(all) < 10 {
		t.Fatalf("the dashboard has %d expressions", len(all))
	}
	used := map[string]bool{}
	for _, e := range all {
		if bad := unknownMetrics(e, names); len(bad) > 0 {
			t.Errorf("expression %q names %v, which /metrics does not export", e, bad)
		}
		for _, n := range metricName.FindAllString(e, -1) {
			used[n] = true
		}
	}
	for n := range names {
		if (strings.HasPrefix(n, "rocketstore_raft_") || strings.HasPrefix(n, "rocketstore_cluster_") ||
			n == "rocketstore_timer_messages_pending" || n == "rocketstore_timer_delivery_lateness_seconds_bucket") &&
			!used[n] && n != "rocketstore_raft_last_log_index" && n != "rocketstore_raft_commit_index" &&
			n != "rocketstore_raft_last_snapshot_index" && n != "rocketstore_cluster_scrub_runs_total" &&
			n != "rocketstore_raft_follower_match_index" {
			t.Errorf("the dashboard does not show %s", n)
		}
	}
}

// TestMetricsDocumented: docs/metrics.md names every rocketstore_ series
// that /metrics exports.
func TestMetricsDocumented(t *testing.T) {
	b, err := os.ReadFile("../../docs/metrics.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	for n := range exported(t) {
		base := n
		for _, s := range []string{"_bucket", "_sum", "_count"} {
			base = strings.TrimSuffix(base, s)
		}
		if strings.HasPrefix(n, "rocketstore_") && !strings.Contains(doc, "`"+base+"`") && !strings.Contains(doc, "`"+n+"`") {
			t.Errorf("docs/metrics.md does not document %s", n)
		}
	}
}
