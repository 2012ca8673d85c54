package e2e

import (
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"
)

// TestClusterPowerCut is TestClusterJepsen's group with every replica's
// store (CommitLog, queues, Raft log and snapshots) on its own LazyFS:
// under load it cuts the power of a follower, of the leader, of all three
// at once (a minority of three is one node: the follower and the leader
// cases), and tears the leader's next Raft log write (LazyFS persists
// some thirds of it and dies), each cut dropping what the replica had not
// synced (LazyFS SIGKILLed, then serve, then LazyFS mounted again and
// serve restarted).
// The replicas do not sync the CommitLog per batch: what the cut takes
// back comes back from the Raft log, which raft-wal fsyncs before an entry
// commits. The Jepsen checker then demands that every acknowledged
// message is consumed at its acknowledged position, nothing is invented,
// no offset holds two messages, the replicas converge to byte-identical
// CommitLogs and each verifies clean.
//
// ROCKETSTORE_CLUSTER_POWERCUTS sets the number of cuts (4: one of each);
// the soak runs more. It needs ROCKETSTORE_LAZYFS (see lazyfs_test.go).
func TestClusterPowerCut(t *testing.T) {
	lazy := requireLazyFS(t)
	cuts := 4
	if v := envInt(t, "ROCKETSTORE_CLUSTER_POWERCUTS"); v > 0 {
		cuts = v
	}
	bin := buildRocketstore(t)
	base := t.TempDir()
	var fss []*lazyFS
	var dirs []string
	for i := range 3 {
		l := newLazyFS(lazy, filepath.Join(base, fmt.Sprintf("lz%d", i+1)))
		if err := l.mount(); err != nil {
			t.Fatalf("LazyFS n%d: %v", i+1, err)
		}
		fss = append(fss, l)
		dirs = append(dirs, filepath.Join(l.mnt, "store"))
	}
	// Registered before the group's cleanup, so it runs after it: the
	// replicas stop before their file systems go.
	t.Cleanup(func() {
		for _, l := range fss {
			_ = l.cut()
		}
	})
	began := time.Now()
	g := startJepsenGroup(t, bin, dirs)
	g.waitLeader(t, 60*time.Second)

	h := &history{sent: map[string]*sendRec{}, consumed: map[string]map[[2]int64]bool{}}
	stop := make(chan struct{})
	var pwg sync.WaitGroup
	for p := range 2 {
		pwg.Add(1)
		go func() {
			defer pwg.Done()
			runProducer(t, g.nsList, p, h, stop)
		}()
	}
	if start := time.Now(); h.firstSuccessAfter(start.Add(-time.Hour), 100*time.Second) >= 100*time.Second+time.Hour {
		t.Fatal("no send acknowledged within 100 s")
	}
	c := startJepsenConsumer(t, g.nsList, h)
	time.Sleep(3 * time.Second)

	// cut takes the power of the replicas in nodes at once.
	cut := func(nodes ...int) {
		for _, i := range nodes {
			// Between its disk's death and the SIGKILL a replica may
			// die of an I/O error by itself (Raft panics on one):
			// expected, not a failure to report.
			g.expectExit(i)
		}
		for _, i := range nodes {
			if err := fss[i].cut(); err != nil {
				t.Fatal(err)
			}
		}
		for _, i := range nodes {
			g.kill(i)
		}
		for _, i := range nodes {
			if err := fss[i].mount(); err != nil {
				t.Fatalf("remount n%d: %v", i+1, err)
			}
			g.start(t, i)
		}
	}
	var recovered []time.Duration
	for k := range cuts {
		l := g.waitLeader(t, 60*time.Second)
		switch k % 4 {
		case 0:
			f := (l + 1) % 3
			t.Logf("%v cut %d: power of follower n%d", since(began), k+1, f+1)
			cut(f)
		case 1:
			t.Logf("%v cut %d: power of leader n%d", since(began), k+1, l+1)
			cut(l)
		case 2:
			t.Logf("%v cut %d: power of all three nodes", since(began), k+1)
			cut(0, 1, 2)
		case 3:
			t.Logf("%v cut %d: torn write on leader n%d's Raft log, then its power", since(began), k+1, l+1)
			tornRaftLog(t, fss[l])
			cut(l)
		}
		// Time from the restart to the first send acknowledged.
		recovered = append(recovered, h.firstSuccessAfter(time.Now(), 120*time.Second).Round(time.Millisecond))
		time.Sleep(2 * time.Second)
	}
	close(stop)
	pwg.Wait()
	g.waitLeader(t, 60*time.Second)
	acked := h.ackedIDs()
	deadline := time.Now().Add(90 * time.Second)
	for len(h.missing(acked)) > 0 && time.Now().Before(deadline) {
		time.Sleep(200 * time.Millisecond)
	}
	_ = c.Shutdown()
	h.check(t, acked)

	g.converge(t, 60*time.Second)
	ends := g.stopAll(t)
	if slices.Min(ends) != slices.Max(ends) {
		t.Errorf("replicas that converged end at different CommitLog offsets: %v", ends)
	}
	g.compareCommitLogs(t, ends)
	for i := range g.reps {
		if out, err := exec.Command(bin, "verify", "--dir", g.reps[i].dir).CombinedOutput(); err != nil {
			t.Errorf("verify n%d: %v\n%s", i+1, err, out)
		}
	}
	t.Logf("%d cuts (follower, leader, all three, torn leader Raft log in turn) in %v; first send acknowledged after each restart: %v",
		cuts, since(began), recovered)
	t.Logf("history: %d sends attempted, %d acknowledged, %d consumed distinct", h.attempted(), len(acked), h.consumedCount())
}

// tornRaftLog tears the next write to the newest segment of a replica's
// Raft log (raft-wal) and waits until LazyFS has died of it; under load
// the leader appends at once. A log that is not written within 10 s fails
// the test.
func tornRaftLog(t *testing.T, l *lazyFS) {
	t.Helper()
	segs, _ := filepath.Glob(filepath.Join(l.root, "store", "raft", "wal", "*.wal"))
	if len(segs) == 0 {
		t.Fatalf("no Raft log segment under %s", l.root)
	}
	slices.Sort(segs)
	err := l.command(fmt.Sprintf("lazyfs::torn-op::file=%s::persist=1::parts=3", segs[len(segs)-1]))
	if err != nil && !errors.Is(err, errLazyFSDead) {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); !l.dead(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the torn write on %s did not fire within 10 s", segs[len(segs)-1])
		}
	}
}
