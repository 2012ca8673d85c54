package cluster

import (
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

// TestFollowerTrackerAnswers: the tracker takes a follower's match index
// from successful answers of the current term only; heartbeats and
// refusals count as contact, a newer term's answer or a new term of
// leadership starts over.
func TestFollowerTrackerAnswers(t *testing.T) {
	now := time.Unix(1000, 0)
	tr := newFollowerTracker(func() time.Time { return now })
	entries := func(from, to uint64) []*raft.Log {
		var out []*raft.Log
		for i := from; i <= to; i++ {
			out = append(out, &raft.Log{Index: i})
		}
		return out
	}
	ok := &raft.AppendEntriesResponse{Term: 2, Success: true}
	tr.observe("n2", &raft.AppendEntriesRequest{Term: 2, PrevLogEntry: 4, Entries: entries(5, 9)}, ok)
	tr.observe("n2", &raft.AppendEntriesRequest{Term: 2}, ok)                  // a heartbeat
	tr.observe("n2", &raft.AppendEntriesRequest{Term: 2, PrevLogEntry: 7}, ok) // an older probe
	tr.observe("n2", &raft.AppendEntriesRequest{Term: 2, PrevLogEntry: 9, Entries: entries(10, 12)},
		&raft.AppendEntriesResponse{Term: 2}) // refused
	tr.observe("n2", &raft.AppendEntriesRequest{Term: 2, PrevLogEntry: 9, Entries: entries(10, 12)},
		&raft.AppendEntriesResponse{Term: 3, Success: true}) // from a newer term: this leader is stale
	now = now.Add(1500 * time.Millisecond)
	got := tr.view([]raft.ServerID{"n2", "n3"}, 2, 12)
	want := []FollowerStatus{{ID: "n2", MatchIndex: 9, LagEntries: 3, LastContactMs: 1500}, {ID: "n3", LagEntries: 12, LastContactMs: -1}}
	if len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
		t.Fatalf("view %+v, want %+v", got, want)
	}
	if got := tr.view([]raft.ServerID{"n2"}, 3, 12); got[0].MatchIndex != 0 || got[0].LastContactMs != -1 {
		t.Fatalf("in the next term, n2 is %+v, want nothing known", got[0])
	}
	tr.observe("n2", &raft.AppendEntriesRequest{Term: 3, PrevLogEntry: 12}, &raft.AppendEntriesResponse{Term: 3, Success: true})
	if got := tr.view([]raft.ServerID{"n2"}, 3, 12); got[0].MatchIndex != 12 || got[0].LagEntries != 0 {
		t.Fatalf("n2 in term 3: %+v", got[0])
	}
	tr.forget("n2")
	if got := tr.view([]raft.ServerID{"n2"}, 3, 12); got[0].LastContactMs != -1 {
		t.Fatalf("forgotten n2: %+v", got[0])
	}
}
