package cluster_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/rocketstore/rocketstore/broker"
	"github.com/rocketstore/rocketstore/cluster"
	"github.com/rocketstore/rocketstore/crashsim"
	"github.com/rocketstore/rocketstore/internal/engineops"
)

// logStores are the Raft log stores the store-specific tests run on.
var logStores = []string{cluster.LogStoreWAL, cluster.LogStoreRaftLog}

// allLogStores adds the store of records entries (the CommitLog as the
// Raft log's payload).
var allLogStores = []string{cluster.LogStoreWAL, cluster.LogStoreRaftLog, cluster.LogStoreRecords}

// TestUncommittedSuffixTruncated isolates the leader while sends reach
// it, so that its log gains entries no majority stores; the other two
// elect a leader and commit other sends at the same indexes. Healed, the
// old leader's uncommitted suffix is deleted (the log store's DeleteRange
// of the tail) and replaced by the new leader's entries: none of its
// sends was acknowledged, every replica ends with the same CommitLog, and
// the old leader's log, reopened, holds the new leader's entries.
func TestUncommittedSuffixTruncated(t *testing.T) {
	t.Parallel()
	for _, store := range allLogStores {
		t.Run(store, func(t *testing.T) {
			t.Parallel()
			g := newGroup(t, 3, func(nc *cluster.NodeConfig) { nc.Cluster.LogStore = store })
			for i := range 10 {
				g.send("T", int32(i%2), fmt.Sprint("before ", i), "")
			}
			g.converge()
			old := g.leader()
			last0 := g.nodes[old].Raft().LastIndex()
			g.isolate(old)

			// Sends to the isolated leader: appended to its log, never
			// committed.
			var wg sync.WaitGroup
			results := make([]broker.SendResult, 4)
			for i := range results {
				wg.Add(1)
				go func() {
					defer wg.Done()
					results[i] = g.nodes[old].Broker().SendMessage(context.Background(), &broker.SendRequest{ProducerGroup: "pg",
						Topic: "T", DefaultTopic: "TBW102", DefaultTopicQueueNums: 4, QueueID: 0,
						Body: []byte(fmt.Sprint("lost ", i)), BornTimestamp: 1700000000000})
				}()
			}
			waitFor(t, "the isolated leader to append the sends to its log", func() bool {
				return g.nodes[old].Raft().LastIndex() > last0
			})
			waitFor(t, "another leader", func() bool {
				for i, n := range g.nodes {
					if i != old && n.Writable() {
						return true
					}
				}
				return false
			})
			wg.Wait()
			for i, r := range results {
				if r.Code == broker.Success {
					t.Fatalf("send %d to the isolated leader was acknowledged: %+v", i, r)
				}
			}
			// The new leader commits entries over the old one's suffix.
			oldLast := g.nodes[old].Raft().LastIndex()
			var nl int
			for i := range 10 {
				nl = g.sendVia(old, "T", int32(i%2), fmt.Sprint("after ", i))
			}
			if got := g.nodes[nl].Raft().LastIndex(); got < oldLast {
				t.Fatalf("the new leader's log ends at %d, before the old leader's uncommitted suffix (to %d)", got, oldLast)
			}
			g.heal(old)
			end := g.converge()
			g.sameFiles("commitlog", end)
			checkNoLost(t, g)

			// Reopened, the old leader's log is the group's.
			g.stop(old)
			g.start(old)
			g.send("T", 0, "after the restart", "")
			end = g.converge()
			g.sameFiles("commitlog", end)
			checkNoLost(t, g)
		})
	}
}

// isolateWithLostSends cuts the leader of a group on the store of records
// entries off from the others and sends it four messages ("lost 0" to
// "lost 3") that no majority stores, waiting until its CommitLog holds
// records of theirs past the commit point. It returns the cut-off leader,
// and a wait for the sends, which end once the others elect a leader;
// none may be acknowledged.
func isolateWithLostSends(t *testing.T, g *group) (old int, wait func()) {
	t.Helper()
	old = g.leader()
	ops := engineops.Of(g.nodes[old].Broker().Store())
	rec0 := ops.RecordsEnd()
	g.isolate(old)
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Go(func() {
			res := g.nodes[old].Broker().SendMessage(context.Background(), &broker.SendRequest{ProducerGroup: "pg",
				Topic: "T", DefaultTopic: "TBW102", DefaultTopicQueueNums: 4, QueueID: 0,
				Body: []byte(fmt.Sprint("lost ", i)), BornTimestamp: 1700000000000})
			if res.Code == broker.Success {
				t.Errorf("send %d to the isolated leader was acknowledged", i)
			}
		})
	}
	// Its log also grows by state entries, which hold no records: wait
	// for the sends' records.
	waitFor(t, "the isolated leader to append the sends' records", func() bool {
		return ops.RecordsEnd() > rec0
	})
	return old, wg.Wait
}

// isolate cuts node i off from the others, both ways.
func (g *group) isolate(i int) {
	for j, o := range g.trans {
		if o != nil && j != i {
			o.Disconnect(raft.ServerAddress(g.peers[i].Addr))
			g.trans[i].Disconnect(raft.ServerAddress(g.peers[j].Addr))
		}
	}
}

// heal reconnects node i to the others.
func (g *group) heal(i int) {
	for j, o := range g.trans {
		if o != nil && j != i {
			o.Connect(raft.ServerAddress(g.peers[i].Addr), g.trans[i])
			g.trans[i].Connect(raft.ServerAddress(g.peers[j].Addr), o)
		}
	}
}

// sendVia sends through a leader other than node skip and returns it,
// waiting up to 20 s for one as g.leader does, and sending again when the
// node stopped leading before it proposed the send, as g.send does (a
// producer retries SERVICE_NOT_AVAILABLE).
func (g *group) sendVia(skip int, topic string, qid int32, body string) int {
	g.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		for i, n := range g.nodes {
			if i == skip || n == nil || !n.Writable() {
				continue
			}
			res := n.Broker().SendMessage(context.Background(), &broker.SendRequest{ProducerGroup: "pg", Topic: topic,
				DefaultTopic: "TBW102", DefaultTopicQueueNums: 4, QueueID: qid, Body: []byte(body), BornTimestamp: 1700000000000})
			if res.Code == broker.Success {
				return i
			}
			if res.Code != broker.ServiceNotAvailable || !notLeading(res.Remark) {
				g.t.Fatalf("send via %s: %v %s", g.peers[i].ID, res.Code, res.Remark)
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	g.t.Fatal("no leader but the isolated node within 20 s")
	return -1
}

// checkNoLost fails unless no replica's queue T/0 holds a "lost" send.
func checkNoLost(t *testing.T, g *group) {
	t.Helper()
	for i, n := range g.nodes {
		if n == nil {
			continue
		}
		res, err := n.Broker().Store().GetMessage("T", 0, 0, 64, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range res.Messages {
			if strings.Contains(string(m.Record), "lost ") {
				res.Release()
				t.Fatalf("%s stores a send that was never committed", g.peers[i].ID)
			}
		}
		res.Release()
	}
}

// TestLogStoreSwitchRefused: a node keeps the log store its log was
// created with; opening its directory with the other store is refused
// with the directory named, not started with an empty log.
func TestLogStoreSwitchRefused(t *testing.T) {
	t.Parallel()
	for _, store := range allLogStores {
		t.Run(store, func(t *testing.T) {
			t.Parallel()
			g := newGroup(t, 3, func(nc *cluster.NodeConfig) { nc.Cluster.LogStore = store })
			g.send("T", 0, "x", "")
			g.converge()
			f := (g.leader() + 1) % 3
			g.stop(f)
			other := cluster.LogStoreRaftLog
			if store != cluster.LogStoreWAL {
				other = cluster.LogStoreWAL
			}
			nc := g.nodeConfig(f)
			nc.Cluster.LogStore = other
			_, err := g.open(f, nc)
			if !errors.Is(err, cluster.ErrConfig) || !strings.Contains(err.Error(), "logStore "+store) {
				t.Fatalf("open with logStore %s over a %s log: %v", other, store, err)
			}
			_ = g.trans[f].Close()
			g.trans[f] = nil
			g.start(f)
			g.send("T", 0, "y", "")
			g.converge()
		})
	}
}

// TestRaftLogOnStoreFS: with the raftlog store, the Raft log lives on the
// store's file system (where the crash tests can cut its power), in
// DIR/raft/log, and raft-wal's directory is not created.
func TestRaftLogOnStoreFS(t *testing.T) {
	t.Parallel()
	g := newGroup(t, 1, func(nc *cluster.NodeConfig) { nc.Cluster.LogStore = cluster.LogStoreRaftLog })
	g.send("T", 0, "x", "")
	segs, _ := filepath.Glob(filepath.Join(g.dirs[0], "raft", "log", "*.seg"))
	if len(segs) == 0 {
		t.Fatal("no raftlog segment in DIR/raft/log")
	}
	if _, err := os.Stat(filepath.Join(g.dirs[0], "raft", "wal")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("raft-wal's directory with the raftlog store: %v", err)
	}
	if ls := g.nodes[0].LogStats(); ls.Appends == 0 || ls.Syncs == 0 || ls.Bytes < ls.EntryBytes {
		t.Fatalf("log stats %+v: want the appends, their syncs and their bytes counted", ls)
	}
}

// TestPowerCutAfterSnapshotInstall: a follower behind the leader's
// compacted log is caught up by a snapshot (its log store emptied and
// restarted at the snapshot's index), then the whole group loses power
// at once, its stores (and raftlog's frames) on crash file systems. From
// the crash images every replica comes back, applies the same prefix,
// and holds every acknowledged send, on each log store. The broken
// variant, snapshots that do not sync the CommitLog, must be caught. On
// the store of records entries, where the log store syncs the records
// before they commit and that variant is no bug, the cut hits the
// follower after its install: it opens with its commit point below the
// installed records (no snapshot of its own) and finishes the install
// again from the received snapshot, keeping the records of the log's
// entries after it; the broken variant drops them.
func TestPowerCutAfterSnapshotInstall(t *testing.T) {
	t.Parallel()
	for _, store := range allLogStores {
		t.Run(store, func(t *testing.T) {
			t.Parallel()
			for seed := uint64(1); seed <= 2; seed++ {
				if err := powerCutAfterInstall(t, store, seed, false); err != nil {
					t.Fatalf("seed %d: %v", seed, err)
				}
			}
			if err := powerCutAfterInstall(t, store, 1, true); err == nil {
				t.Fatalf("broken variant (%s): every acknowledged send survived; the test cannot tell", brokenInstall(store))
			} else {
				t.Logf("broken variant caught: %v", err)
			}
		})
	}
}

// brokenInstall names the broken variant TestPowerCutAfterSnapshotInstall
// runs on store.
func brokenInstall(store string) string {
	if store == cluster.LogStoreRecords {
		return "an install finished at start drops the records of the entries after the snapshot"
	}
	return "snapshots without a CommitLog sync"
}

func powerCutAfterInstall(t *testing.T, store string, seed uint64, broken bool) error {
	fss := map[string]*crashsim.FS{}
	var fsMu sync.Mutex
	g := newGroup(t, 3, func(nc *cluster.NodeConfig) {
		compact(nc)
		nc.Cluster.LogStore = store
		nc.Broker.Store.FlushIntervalCommitLog = time.Hour
		// Nor do the timer's checkpoints and the delay offsets' saves,
		// which sync the CommitLog before they count its deliveries: one
		// of them between the snapshot and the power cut (a second or
		// two apart on a loaded machine) would make the broken variant's
		// CommitLog durable after all.
		nc.Broker.Timer.CheckpointInterval = time.Hour
		nc.Broker.FlushDelayOffsetInterval = time.Hour
		switch {
		case broken && store == cluster.LogStoreRecords:
			cluster.ReinstallDropsTail(nc)
		case broken:
			cluster.SnapshotWithoutSync(nc)
		}
		fsMu.Lock()
		defer fsMu.Unlock()
		if fss[nc.Dir] == nil {
			fs, err := crashsim.New(nil, crashsim.Options{DurableMkdir: true})
			if err != nil {
				t.Fatal(err)
			}
			fss[nc.Dir] = fs
		}
		cluster.OnFS(nc, fss[nc.Dir])
	})
	var acked []ackedSend
	for i := range 20 {
		acked = append(acked, sendAcked(g, i))
	}
	g.converge()
	f := (g.leader() + 1) % 3
	g.stop(f)
	for i := 20; i < 120; i++ {
		acked = append(acked, sendAcked(g, i))
	}
	if err := g.nodes[g.leader()].Snapshot(); err != nil {
		return err
	}
	g.start(f)
	waitSnapshotInstalled(t, g.nodes[f], g.peers[f].ID)
	for i := 120; i < 140; i++ {
		acked = append(acked, sendAcked(g, i))
	}
	g.converge()
	for _, fs := range fss {
		fs.Freeze() // the power cut
	}
	for i := range g.nodes {
		g.crash(i)
	}
	// The broken variant meets the harshest cut (no unsynced write kept),
	// so that whether it is caught does not depend on the seed's draw.
	keep := 50
	if broken {
		keep = 0
	}
	ch := crashsim.NewRandomChooser(seed, keep, 20)
	for dir, fs := range fss {
		img, err := crashsim.New(fs.Crash(ch), crashsim.Options{DurableMkdir: true})
		if err != nil {
			t.Fatal(err)
		}
		fss[dir] = img
	}
	for i := range g.nodes {
		n, err := g.open(i, g.nodeConfig(i))
		if err != nil {
			return fmt.Errorf("%s does not open after the power cut: %w", g.peers[i].ID, err)
		}
		g.nodes[i] = n
	}
	g.leader()
	if err := waitApplied(g); err != nil {
		return err
	}
	for i, n := range g.nodes {
		for _, a := range acked {
			if err := holds(n.Broker().Store(), a); err != nil {
				return fmt.Errorf("%s: %w", g.peers[i].ID, err)
			}
		}
	}
	g.closeAll()
	return nil
}

// TestRecordsWrittenOncePerReplica measures what each replica writes for
// the same sends on the raftlog store (every entry whole in its frame, the
// state machine writing the records again) and on the store of records
// entries (the records are the entries' payload): the bytes a replica
// writes, Raft log and CommitLog together, over its CommitLog bytes. The
// records store must write each record once: its log store's records are
// the CommitLog, byte for byte, and the whole is within 10 % of it (the
// frames, the group, state and configuration entries); the raftlog store
// writes about twice.
func TestRecordsWrittenOncePerReplica(t *testing.T) {
	t.Parallel()
	body := strings.Repeat("b", 1024)
	ratios := map[string][]float64{}
	for _, store := range []string{cluster.LogStoreRaftLog, cluster.LogStoreRecords} {
		g := newGroup(t, 3, func(nc *cluster.NodeConfig) { nc.Cluster.LogStore = store })
		for i := range 200 {
			g.send("T", int32(i%4), body, "")
		}
		g.converge()
		for i, n := range g.nodes {
			ls := n.LogStats()
			cl := n.Broker().Store().CommitLog().MaxOffset()
			written := float64(ls.Bytes)
			if store == cluster.LogStoreRecords {
				if int64(ls.RecordBytes) != cl {
					t.Fatalf("%s on %s: the log store wrote %d bytes of records, the CommitLog holds %d", g.peers[i].ID, store, ls.RecordBytes, cl)
				}
			} else {
				written += float64(cl) // the state machine's puts
			}
			ratios[store] = append(ratios[store], written/float64(cl))
		}
		g.closeAll()
	}
	t.Logf("bytes a replica wrote ÷ its CommitLog bytes, 200 sends of 1 KiB: raftlog %.3f, records %.3f",
		ratios[cluster.LogStoreRaftLog], ratios[cluster.LogStoreRecords])
	for _, r := range ratios[cluster.LogStoreRecords] {
		if r < 1 || r > 1.1 {
			t.Errorf("records store: a replica wrote %.3f× its CommitLog bytes, want 1.0–1.1", r)
		}
	}
	for _, r := range ratios[cluster.LogStoreRaftLog] {
		if r < 1.9 {
			t.Errorf("raftlog store: a replica wrote %.3f× its CommitLog bytes, want about 2", r)
		}
	}
}
