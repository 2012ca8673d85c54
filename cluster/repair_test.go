package cluster_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rocketstore/rocketstore/cluster"
	"github.com/rocketstore/rocketstore/engine"
	"github.com/rocketstore/rocketstore/record"
)

// TestRepairFromReplica flips bits in a follower's CommitLog file (a body
// byte, which the record's CRC catches, and a header byte, which only the
// comparison with the other replicas catches); a scrub rewrites both
// records from a replica and the follower serves every message intact.
func TestRepairFromReplica(t *testing.T) {
	t.Parallel()
	g := newGroupOn(t, 3, true, nil)
	for i := range 60 {
		g.send("T", 0, fmt.Sprintf("body-%03d-%s", i, strings.Repeat("r", 100)), "KEYS\x01k")
	}
	end := g.converge()
	f := (g.leader() + 1) % 3
	st := g.nodes[f].Broker().Store()
	offAt := func(q int64) int64 {
		off, err := st.CommitLogOffsetInQueue("T", 0, q)
		if err != nil {
			t.Fatal(err)
		}
		return off
	}
	bodyFlip, headerFlip := offAt(10)+record.FixedOverhead+5, offAt(40)+44 // BORNTIMESTAMP
	file := filepath.Join(g.dirs[f], "commitlog", "00000000000000000000")
	fh, err := os.OpenFile(file, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, off := range []int64{bodyFlip, headerFlip} {
		b := make([]byte, 1)
		if _, err := fh.ReadAt(b, off); err != nil {
			t.Fatal(err)
		}
		b[0] ^= 0x10
		if _, err := fh.WriteAt(b, off); err != nil {
			t.Fatal(err)
		}
	}
	_ = fh.Close()
	// The damage is visible: the follower's record 10 fails its CRC.
	if _, err := readAll(st, 10); err == nil {
		t.Fatal("the flipped body bit went unnoticed: the test damaged nothing")
	}

	rep, err := g.nodes[f].Scrub(context.Background(), 0, 0, 4096)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Repaired) != 2 || rep.To != end {
		t.Fatalf("scrub: %+v (want 2 records repaired up to %d)", rep, end)
	}
	g.sameFiles("commitlog", end)
	for q := int64(0); q < 60; q++ {
		m, err := readAll(st, q)
		if err != nil {
			t.Fatalf("message %d after repair: %v", q, err)
		}
		if want := fmt.Sprintf("body-%03d-", q); !strings.HasPrefix(string(m.Body), want) {
			t.Fatalf("message %d: body %q", q, m.Body)
		}
	}
}

// readAll reads message q of T/0 through the ConsumeQueue and checks its
// CRC.
func readAll(st *engine.Store, q int64) (*record.MessageExt, error) {
	res, err := st.GetMessage("T", 0, q, 1, nil)
	if err != nil {
		return nil, err
	}
	defer res.Release()
	if len(res.Messages) != 1 {
		return nil, fmt.Errorf("status %v", res.Status)
	}
	return record.Decode(res.Messages[0].Record, -1, true)
}

// TestBackgroundScrub: with ScrubInterval set, a follower finds and
// repairs a flipped bit by itself.
func TestBackgroundScrub(t *testing.T) {
	t.Parallel()
	g := newGroupOn(t, 3, true, func(nc *cluster.NodeConfig) {
		nc.Cluster.ScrubInterval = 20 * time.Millisecond
		nc.Cluster.ScrubBytes = 2048
	})
	for i := range 30 {
		g.send("T", 0, fmt.Sprintf("body-%03d", i), "")
	}
	end := g.converge()
	f := (g.leader() + 1) % 3
	off, err := g.nodes[f].Broker().Store().CommitLogOffsetInQueue("T", 0, 20)
	if err != nil {
		t.Fatal(err)
	}
	flipByte(t, filepath.Join(g.dirs[f], "commitlog", "00000000000000000000"), off+record.FixedOverhead+2)
	waitFor(t, "the background scrub to repair the record", func() bool { return g.nodes[f].Repaired() >= 1 })
	g.sameFiles("commitlog", end)
}

func flipByte(t *testing.T, file string, off int64) {
	t.Helper()
	fh, err := os.OpenFile(file, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	b := make([]byte, 1)
	if _, err := fh.ReadAt(b, off); err != nil {
		t.Fatal(err)
	}
	b[0] ^= 0x10
	if _, err := fh.WriteAt(b, off); err != nil {
		t.Fatal(err)
	}
}
