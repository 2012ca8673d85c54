package cluster_test

import (
	"fmt"
	"strings"
	"testing"
)

// TestRestartReplaysAcrossFileEnds: a follower restarted without a
// snapshot replays the whole log against its CommitLog, which spans
// several files: the BLANK records at their ends are read whole and
// checked (they used to stop the replica with "blank record of N bytes
// with 8 left").
func TestRestartReplaysAcrossFileEnds(t *testing.T) {
	t.Parallel()
	g := newGroup(t, 3, nil)
	for i := range 300 {
		g.send("T", int32(i%4), strings.Repeat("b", 200+i%500)+fmt.Sprint(i), "")
	}
	end := g.converge()
	if end < 2*testFileSize {
		t.Fatalf("only %d bytes written; the test should roll files", end)
	}
	f := (g.leader() + 1) % 3
	g.stop(f)
	g.start(f)
	g.send("T", 0, "after the restart", "")
	if e := g.converge(); e <= end {
		t.Fatalf("no progress after the restart: %d", e)
	}
	if err := g.nodes[f].Err(); err != nil {
		t.Fatal(err)
	}
	g.sameFiles("commitlog", end)
}
