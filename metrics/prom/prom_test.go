package prom_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/spf13/afero"

	"github.com/rocketstore/rocketstore/backend/memfs"
	"github.com/rocketstore/rocketstore/cluster"
	"github.com/rocketstore/rocketstore/engine"
	"github.com/rocketstore/rocketstore/internal/engineops"
	"github.com/rocketstore/rocketstore/metrics/prom"
	"github.com/rocketstore/rocketstore/remoting"
	"github.com/rocketstore/rocketstore/server"
)

// scrape fetches /metrics as Prometheus does and returns each series
// (name with labels, as in the text format) with its value.
func scrape(t *testing.T, m *prom.Metrics) map[string]float64 {
	t.Helper()
	srv := httptest.NewServer(promhttp.HandlerFor(m.Registry, promhttp.HandlerOpts{}))
	defer srv.Close()
	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, line := range strings.Split(string(b), "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			t.Fatalf("line %q: %v", line, err)
		}
		out[line[:i]] = v
	}
	return out
}

// valueOf returns the value of the series named name whatever its labels.
func valueOf(t *testing.T, got map[string]float64, name string) float64 {
	t.Helper()
	for k, v := range got {
		if k == name || strings.HasPrefix(k, name+"{") {
			return v
		}
	}
	t.Fatalf("no series %s", name)
	return 0
}

// damagedStore returns a store whose T/1 unit 0 points at T/2's record
// (a ConsumeQueue unit overwritten with another queue's, after a clean
// stop).
func damagedStore(t *testing.T) *engine.Store {
	t.Helper()
	cfg := engine.Config{CommitLogFileSize: 1 << 20, ConsumeQueueUnits: 100, Logger: slog.New(slog.DiscardHandler)}
	afs := afero.NewMemMapFs()
	s, err := engine.Open(memfs.New(afs), cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []int32{1, 2} {
		if _, err := s.Put(context.Background(), &engine.Message{Topic: "T", QueueID: q, Body: []byte("m")}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := engineops.Of(s).Dispatch(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	unit := make([]byte, engine.CQUnitSize)
	f, err := afs.OpenFile(fmt.Sprintf("consumequeue/T/2/%020d", 0), 2, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.ReadAt(unit, 0); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if f, err = afs.OpenFile(fmt.Sprintf("consumequeue/T/1/%020d", 0), 2, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt(unit, 0); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if s, err = engine.Open(memfs.New(afs), cfg); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// TestScrape reads the counters and the process series from /metrics:
// refused connections and remoting bytes from the server's counters, the
// ConsumeQueue integrity counters from the store that found a damaged
// unit at start-up (counted once, the pull after it serves the repaired
// unit), rocketstore_build_info, and no namespace-wide network
// series.
func TestScrape(t *testing.T) {
	s := damagedStore(t)
	m := prom.New("")
	rs := remoting.Stats{ConnsRejected: 3, ReceiveBudgetCloses: 2, BytesIn: 1234, BytesOut: 5678}
	m.Attach(server.State{Store: s, HeldPulls: func() int { return 0 },
		Remoting: func() remoting.Stats { return rs }, Clients: func() (int, int) { return 0, 0 }})

	// Open found the damaged unit (a clean start checks the units) and
	// rewrote it from the CommitLog: the counters say so before any pull.
	before := scrape(t, m)
	for name, want := range map[string]float64{"rocketstore_consumequeue_unit_mismatches_total": 1,
		"rocketstore_consumequeue_units_repaired_total": 1, "rocketstore_consumequeue_units_lost_total": 0} {
		if v := valueOf(t, before, name); v != want {
			t.Errorf("%s = %v after Open, want %v", name, v, want)
		}
	}
	r, err := s.GetMessage("T", 1, 0, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Messages) != 1 {
		t.Fatalf("pulled %d messages of T/1, want its one", len(r.Messages))
	}
	r.Release()

	got := scrape(t, m)
	for name, want := range map[string]float64{
		"rocketstore_connections_refused_total":          5,
		"rocketstore_remoting_receive_bytes_total":       1234,
		"rocketstore_remoting_transmit_bytes_total":      5678,
		"rocketstore_consumequeue_unit_mismatches_total": 1,
		"rocketstore_consumequeue_units_repaired_total":  1,
		"rocketstore_consumequeue_units_lost_total":      0,
		"rocketstore_build_info":                         1,
	} {
		if v := valueOf(t, got, name); v != want {
			t.Errorf("%s = %v, want %v", name, v, want)
		}
	}
	for k := range got {
		if strings.HasPrefix(k, "rocketstore_build_info{") &&
			(!strings.Contains(k, `goversion="go`) || !strings.Contains(k, `revision="`) || !strings.Contains(k, `version="`)) {
			t.Errorf("build info labels %s", k)
		}
		if strings.HasPrefix(k, "process_network_") {
			t.Errorf("namespace-wide series %s exported", k)
		}
		if strings.HasPrefix(k, "rocketstore_connections_refused ") || k == "rocketstore_connections_refused" {
			t.Errorf("the old gauge %s is still exported", k)
		}
	}
	if valueOf(t, got, "process_resident_memory_bytes") <= 0 {
		t.Error("the process collector's other series are gone")
	}
}

// TestScrapeCluster reads every Raft and cluster series from /metrics as
// the replica's status gives it, and leaves out the last contact of a
// follower that never heard from a leader.
func TestScrapeCluster(t *testing.T) {
	m := prom.New("")
	st := cluster.Status{State: "Leader", Term: 7, LastLogIndex: 120, CommitIndex: 118, AppliedIndex: 115,
		LastSnapshotIndex: 64, LastContactMs: 0, AppliedOffset: 4096, ElectionsStarted: 3, ElectionsWon: 2, SnapshotInstalls: 1,
		Repaired: 3, ScrubRuns: 9, ScrubbedBytes: 18432,
		Followers: []cluster.FollowerStatus{{ID: "n2", MatchIndex: 117, LagEntries: 3, LastContactMs: 250},
			{ID: "n3", LagEntries: 120, LastContactMs: -1}}}
	m.AttachCluster(func() cluster.Status { return st })
	got := scrape(t, m)
	for name, want := range map[string]float64{
		"rocketstore_raft_leader": 1, "rocketstore_raft_term": 7, "rocketstore_raft_last_log_index": 120,
		"rocketstore_raft_commit_index": 118, "rocketstore_raft_applied_index": 115, "rocketstore_raft_apply_lag_entries": 3,
		"rocketstore_raft_last_snapshot_index": 64, "rocketstore_raft_last_contact_seconds": 0,
		"rocketstore_raft_elections_started_total": 3, "rocketstore_raft_elections_won_total": 2,
		"rocketstore_raft_snapshot_installs_total":             1,
		`rocketstore_raft_follower_match_index{follower="n2"}`: 117, `rocketstore_raft_follower_lag_entries{follower="n2"}`: 3,
		`rocketstore_raft_follower_last_contact_seconds{follower="n2"}`: 0.25,
		`rocketstore_raft_follower_match_index{follower="n3"}`:          0, `rocketstore_raft_follower_lag_entries{follower="n3"}`: 120,
		"rocketstore_cluster_applied_offset_bytes": 4096, "rocketstore_cluster_repaired_records_total": 3,
		"rocketstore_cluster_scrub_runs_total": 9, "rocketstore_cluster_scrubbed_bytes_total": 18432,
	} {
		if v := valueOf(t, got, name); v != want {
			t.Errorf("%s = %v, want %v", name, v, want)
		}
	}
	if _, ok := got[`rocketstore_raft_follower_last_contact_seconds{follower="n3"}`]; ok {
		t.Error("a follower's last contact exported before it answered")
	}
	st = cluster.Status{State: "Follower", LastContactMs: 1500}
	if _, ok := scrape(t, m)[`rocketstore_raft_follower_lag_entries{follower="n2"}`]; ok {
		t.Error("a follower exports the leader's view of followers")
	}
	if v := valueOf(t, scrape(t, m), "rocketstore_raft_last_contact_seconds"); v != 1.5 {
		t.Errorf("last contact %v s, want 1.5", v)
	}
	if v := valueOf(t, scrape(t, m), "rocketstore_raft_leader"); v != 0 {
		t.Errorf("a follower reports leader %v", v)
	}
	st = cluster.Status{State: "Follower", LastContactMs: -1}
	if _, ok := scrape(t, m)["rocketstore_raft_last_contact_seconds"]; ok {
		t.Error("last contact exported before any contact")
	}
}

// TestRequestCountsByCode: Request counts every request under its code,
// the first of a code as well as the later ones (which take the cached
// counter), and codes beyond the cache too.
func TestRequestCountsByCode(t *testing.T) {
	m := prom.New("")
	for range 3 {
		m.Request(10)
	}
	m.Request(11)
	m.Request(-1)
	m.Request(5000)
	m.Request(5000)
	got := scrape(t, m)
	for code, want := range map[string]float64{"10": 3, "11": 1, "-1": 1, "5000": 2} {
		if v := valueOf(t, got, `rocketstore_requests_total{code="`+code+`"}`); v != want {
			t.Errorf("requests of code %s = %v, want %v", code, v, want)
		}
	}
}

// TestPutAndPullCountsByResult: each put and pull answer counts under its
// result, the first of a result as well as the later ones.
func TestPutAndPullCountsByResult(t *testing.T) {
	m := prom.New("")
	m.Put("SUCCESS", true, 1, 10, 0)
	m.Put("SUCCESS", true, 1, 10, 0)
	m.Put("TOPIC_NOT_EXIST", false, 0, 10, 0)
	for range 3 {
		m.Pull("PULL_NOT_FOUND", 0)
	}
	m.Pull("SUCCESS", 4)
	got := scrape(t, m)
	for series, want := range map[string]float64{
		`rocketstore_put_requests_total{result="SUCCESS"}`:         2,
		`rocketstore_put_requests_total{result="TOPIC_NOT_EXIST"}`: 1,
		`rocketstore_pulls_total{result="PULL_NOT_FOUND"}`:         3,
		`rocketstore_pulls_total{result="SUCCESS"}`:                1,
		`rocketstore_pulled_messages_total`:                        4,
	} {
		if v := valueOf(t, got, series); v != want {
			t.Errorf("%s = %v, want %v", series, v, want)
		}
	}
}
