package prom

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/rocketstore/rocketstore/cluster"
)

// AttachCluster registers the rocketstore_raft_* and rocketstore_cluster_*
// series of a replica, read from status once per scrape (Raft's stats
// take its locks: one read serves every series), the leader's
// rocketstore_raft_follower_* among them; later calls do nothing.
func (m *Metrics) AttachCluster(status func() cluster.Status) {
	m.clusterOnce.Do(func() { m.Registry.MustRegister(&clusterCollector{status: status}) })
}

// clusterSeries are the series, each with its value in a Status.
var clusterSeries = []struct {
	name, help string
	kind       prometheus.ValueType
	value      func(s *cluster.Status) (float64, bool)
}{
	{"rocketstore_raft_leader", "1 while this node is the group's Raft leader, else 0.", prometheus.GaugeValue,
		func(s *cluster.Status) (float64, bool) { return b2f(s.State == "Leader"), true }},
	{"rocketstore_raft_term", "Current Raft term (it grows by one for every election held in the group).", prometheus.GaugeValue,
		func(s *cluster.Status) (float64, bool) { return float64(s.Term), true }},
	{"rocketstore_raft_last_log_index", "Newest entry in this node's Raft log.", prometheus.GaugeValue,
		func(s *cluster.Status) (float64, bool) { return float64(s.LastLogIndex), true }},
	{"rocketstore_raft_commit_index", "Newest Raft entry this node knows committed.", prometheus.GaugeValue,
		func(s *cluster.Status) (float64, bool) { return float64(s.CommitIndex), true }},
	{"rocketstore_raft_applied_index", "Newest Raft entry applied to this node's store.", prometheus.GaugeValue,
		func(s *cluster.Status) (float64, bool) { return float64(s.AppliedIndex), true }},
	{"rocketstore_raft_apply_lag_entries", "Committed Raft entries not yet applied to this node's store (commit index - applied index).", prometheus.GaugeValue,
		func(s *cluster.Status) (float64, bool) {
			return float64(s.CommitIndex - min(s.CommitIndex, s.AppliedIndex)), true
		}},
	{"rocketstore_raft_last_snapshot_index", "Raft index of this node's newest snapshot.", prometheus.GaugeValue,
		func(s *cluster.Status) (float64, bool) { return float64(s.LastSnapshotIndex), true }},
	{"rocketstore_raft_last_contact_seconds", "Time since a follower last heard from the leader (0 on the leader; absent until a first contact).", prometheus.GaugeValue,
		func(s *cluster.Status) (float64, bool) { return float64(s.LastContactMs) / 1000, s.LastContactMs >= 0 }},
	{"rocketstore_raft_elections_started_total", "Times this node became a candidate (started an election) since it started.", prometheus.CounterValue,
		func(s *cluster.Status) (float64, bool) { return float64(s.ElectionsStarted), true }},
	{"rocketstore_raft_elections_won_total", "Times this node became the group's leader since it started.", prometheus.CounterValue,
		func(s *cluster.Status) (float64, bool) { return float64(s.ElectionsWon), true }},
	{"rocketstore_raft_snapshot_installs_total", "Leader snapshots (its CommitLog) installed on this node to catch it up.", prometheus.CounterValue,
		func(s *cluster.Status) (float64, bool) { return float64(s.SnapshotInstalls), true }},
	{"rocketstore_cluster_applied_offset_bytes", "CommitLog offset up to which this node applied the group's log.", prometheus.GaugeValue,
		func(s *cluster.Status) (float64, bool) { return float64(s.AppliedOffset), true }},
	{"rocketstore_cluster_repaired_records_total", "CommitLog records rewritten from a replica (at start and by the scrub).", prometheus.CounterValue,
		func(s *cluster.Status) (float64, bool) { return float64(s.Repaired), true }},
	{"rocketstore_cluster_scrub_runs_total", "Runs of the background scrub (one every scrubIntervalMs).", prometheus.CounterValue,
		func(s *cluster.Status) (float64, bool) { return float64(s.ScrubRuns), true }},
	{"rocketstore_cluster_scrubbed_bytes_total", "CommitLog bytes the background scrub compared with the other replicas.", prometheus.CounterValue,
		func(s *cluster.Status) (float64, bool) { return float64(s.ScrubbedBytes), true }},
}

// clusterDescs are clusterSeries' descriptors, in the same order.
var clusterDescs = func() []*prometheus.Desc {
	out := make([]*prometheus.Desc, len(clusterSeries))
	for i, s := range clusterSeries {
		out[i] = prometheus.NewDesc(s.name, s.help, nil, nil)
	}
	return out
}()

// followerSeries are the leader's series of each follower (label
// follower: its node id), each with its value in a FollowerStatus.
var followerSeries = []struct {
	name, help string
	value      func(f *cluster.FollowerStatus) (float64, bool)
}{
	{"rocketstore_raft_follower_match_index", "On the leader: newest Raft entry the follower confirmed to hold in this term.",
		func(f *cluster.FollowerStatus) (float64, bool) { return float64(f.MatchIndex), true }},
	{"rocketstore_raft_follower_lag_entries", "On the leader: entries of its log the follower has not confirmed (last log index - match index).",
		func(f *cluster.FollowerStatus) (float64, bool) { return float64(f.LagEntries), true }},
	{"rocketstore_raft_follower_last_contact_seconds", "On the leader: time since the follower last answered it (absent until a first answer in this term).",
		func(f *cluster.FollowerStatus) (float64, bool) {
			return float64(f.LastContactMs) / 1000, f.LastContactMs >= 0
		}},
}

// followerDescs are followerSeries' descriptors, in the same order.
var followerDescs = func() []*prometheus.Desc {
	out := make([]*prometheus.Desc, len(followerSeries))
	for i, s := range followerSeries {
		out[i] = prometheus.NewDesc(s.name, s.help, []string{"follower"}, nil)
	}
	return out
}()

type clusterCollector struct{ status func() cluster.Status }

func (c *clusterCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range clusterDescs {
		ch <- d
	}
	for _, d := range followerDescs {
		ch <- d
	}
}

func (c *clusterCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.status()
	for i, series := range clusterSeries {
		if v, ok := series.value(&s); ok {
			ch <- prometheus.MustNewConstMetric(clusterDescs[i], series.kind, v)
		}
	}
	for i := range s.Followers {
		f := &s.Followers[i]
		for j, series := range followerSeries {
			if v, ok := series.value(f); ok {
				ch <- prometheus.MustNewConstMetric(followerDescs[j], prometheus.GaugeValue, v, f.ID)
			}
		}
	}
}
