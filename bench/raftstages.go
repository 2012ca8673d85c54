package bench

import (
	"fmt"
	"strings"
	"sync"
	"time"

	metrics "github.com/hashicorp/go-metrics"
)

// raftStages are the stages of a replicated round that hashicorp/raft
// times through go-metrics, in the order a round passes them: the
// leader's log write, the AppendEntries round trip to a follower (its
// log write included), a follower's log write, and an entry's time from
// the leader's write to its commit.
var raftStages = []struct{ key, name string }{
	{"raft.leader.dispatchLog", "leader log write"},
	{"raft.replication.appendEntries.rpc", "AppendEntries round trip"},
	{"raft.rpc.appendEntries.storeLogs", "follower log write"},
	{"raft.commitTime", "write to commit"},
}

// stageSink is a go-metrics sink that keeps the sum and count of each
// timing sample, for one measured run.
type stageSink struct {
	mu  sync.Mutex
	sum map[string]float64
	n   map[string]int
}

// listenRaftStages makes a new stageSink the process's go-metrics sink,
// where hashicorp/raft reports, until the next call.
func listenRaftStages() (*stageSink, error) {
	s := &stageSink{sum: map[string]float64{}, n: map[string]int{}}
	_, err := metrics.NewGlobal(&metrics.Config{TimerGranularity: time.Microsecond, FilterDefault: true}, s)
	return s, err
}

func (s *stageSink) add(key []string, val float32) {
	k := strings.Join(key, ".")
	s.mu.Lock()
	s.sum[k] += float64(val)
	s.n[k]++
	s.mu.Unlock()
}

func (s *stageSink) AddSample(key []string, val float32) { s.add(key, val) }
func (s *stageSink) AddSampleWithLabels(key []string, val float32, _ []metrics.Label) {
	s.add(key, val)
}
func (*stageSink) SetGauge([]string, float32)                               {}
func (*stageSink) SetGaugeWithLabels([]string, float32, []metrics.Label)    {}
func (*stageSink) EmitKey([]string, float32)                                {}
func (*stageSink) IncrCounter([]string, float32)                            {}
func (*stageSink) IncrCounterWithLabels([]string, float32, []metrics.Label) {}

// note renders the mean of each stage in µs.
func (s *stageSink) note() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var parts []string
	for _, st := range raftStages {
		if n := s.n[st.key]; n > 0 {
			parts = append(parts, fmt.Sprintf("%s %.0f", st.name, s.sum[st.key]/float64(n)))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return "Raft stages, mean µs: " + strings.Join(parts, ", ")
}
