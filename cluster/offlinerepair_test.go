package cluster_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rocketstore/rocketstore/cluster"
	"github.com/rocketstore/rocketstore/record"
)

// copyDir copies a stopped replica's store directory.
func copyDir(t *testing.T, src string) string {
	t.Helper()
	dst := t.TempDir()
	if out, err := exec.Command("cp", "-a", src+"/.", dst).CombinedOutput(); err != nil {
		t.Fatalf("copy %s: %v %s", src, err, out)
	}
	return dst
}

// damage flips a body byte of the 10th record (a CRC violation), a
// header byte of the 50th (BORNTIMESTAMP: no check of the record's own
// sees it) and zeroes 512 bytes inside the 120th (a lost sector), and
// returns their offsets.
func damage(t *testing.T, dir string) []int64 {
	t.Helper()
	file := filepath.Join(dir, "commitlog", "00000000000000000000")
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var offs []int64
	for pos, i := int64(0), 0; i <= 120; i++ {
		info, err := record.Check(b[pos:], pos, true)
		if err != nil || info.Blank {
			t.Fatalf("record %d at %d: %v (the test needs 121 records in the first file)", i, pos, err)
		}
		switch i {
		case 10:
			flipByte(t, file, pos+int64(info.Size)-3)
			offs = append(offs, pos)
		case 50:
			flipByte(t, file, pos+60) // BORNTIMESTAMP
			offs = append(offs, pos)
		case 120:
			fh, err := os.OpenFile(file, os.O_RDWR, 0)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := fh.WriteAt(make([]byte, min(512, int(info.Size)-20)), pos+20); err != nil {
				t.Fatal(err)
			}
			_ = fh.Close()
			offs = append(offs, pos)
		}
		pos += int64(info.Size)
	}
	return offs
}

// TestOfflineRepairFromDir: a copy of a stopped replica's store with
// flipped bits and a zeroed sector is repaired from another stopped
// replica's directory: exactly the damaged records are rewritten, verify
// is clean, and the CommitLog is byte-identical to the source's. A store
// of another group is refused as a source, and a running store as a
// target.
func TestOfflineRepairFromDir(t *testing.T) {
	t.Parallel()
	g := newGroup(t, 3, nil)
	for i := range 400 {
		g.send("T", int32(i%4), strings.Repeat("r", 100+i%300)+fmt.Sprint(i), "KEYS\x01k"+fmt.Sprint(i))
	}
	end := g.converge()
	l := g.leader()
	src, dst := (l+1)%3, (l+2)%3
	if _, err := cluster.RepairStore(context.Background(), g.dirs[l], (cluster.Dialer{}).PeerSource("127.0.0.1:1"), false); err == nil ||
		!strings.Contains(err.Error(), "stop the node first") {
		t.Fatalf("repair of a running store: %v", err)
	}
	g.stop(src)
	g.stop(dst)
	target := copyDir(t, g.dirs[dst])
	damaged := damage(t, target)

	s, err := cluster.DirSource(g.dirs[src])
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	dry, err := cluster.RepairStore(context.Background(), target, s, true)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(dry.Repaired) != fmt.Sprint(damaged) {
		t.Fatalf("dry run found %v, damaged %v", dry.Repaired, damaged)
	}
	rep, err := cluster.RepairStore(context.Background(), target, s, false)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(rep.Repaired) != fmt.Sprint(damaged) || rep.To != end {
		t.Fatalf("repaired %v up to %d, damaged %v, end %d", rep.Repaired, rep.To, damaged, end)
	}
	verifyClean(t, "repaired", target)
	mine, theirs := readTree(t, filepath.Join(target, "commitlog"), end), readTree(t, filepath.Join(g.dirs[src], "commitlog"), end)
	for name, b := range theirs {
		if string(mine[name]) != string(b) {
			t.Fatalf("commitlog/%s differs from the source after the repair", name)
		}
	}
	again, err := cluster.RepairStore(context.Background(), target, s, false)
	if err != nil || len(again.Repaired) != 0 {
		t.Fatalf("second repair: %v %v", again.Repaired, err)
	}

	// A replica of another group is refused as the source.
	other := newGroup(t, 1, nil)
	other.send("T", 0, "x", "")
	other.stop(0)
	os2, err := cluster.DirSource(other.dirs[0])
	if err != nil {
		t.Fatal(err)
	}
	defer os2.Close()
	if _, err := cluster.RepairStore(context.Background(), target, os2, false); !errors.Is(err, cluster.ErrNotSameGroup) {
		t.Fatalf("repair from another group: %v", err)
	}
}

// TestOfflineRepairFromPeer repairs a stopped replica's damaged store
// from a running replica over its Raft port, after which the node
// rejoins and the group converges.
func TestOfflineRepairFromPeer(t *testing.T) {
	t.Parallel()
	g := newGroupOn(t, 3, true, nil)
	for i := range 300 {
		g.send("T", int32(i%4), strings.Repeat("p", 150)+fmt.Sprint(i), "")
	}
	end := g.converge()
	l := g.leader()
	f := (l + 1) % 3
	g.stop(f)
	damaged := damage(t, g.dirs[f])
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rep, err := cluster.RepairStore(ctx, g.dirs[f], (cluster.Dialer{}).PeerSource(g.peers[l].Addr), false)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(rep.Repaired) != fmt.Sprint(damaged) {
		t.Fatalf("repaired %v, damaged %v", rep.Repaired, damaged)
	}
	verifyClean(t, "repaired", g.dirs[f])
	g.start(f)
	g.send("T", 0, "after", "")
	if e := g.converge(); e <= end {
		t.Fatalf("no progress: %d", e)
	}
	g.sameFiles("commitlog", end)
}

// TestOfflineRepairFromRecordsTail: on the store of records entries a
// stopped replica's CommitLog ends with Raft's uncommitted entries — here
// those of a leader cut off from the others while sends reached it, whose
// offsets the new leader filled with other records. Used as the source of
// an offline repair, it serves only what it knows committed (the records
// its ConsumeQueues index, or up to its own snapshot): the target's
// damaged record below is repaired, its committed records past it are
// left as they are. The broken variant, which serves the source's whole
// CommitLog, writes the cut-off leader's records over them.
func TestOfflineRepairFromRecordsTail(t *testing.T) {
	t.Parallel()
	g := newGroup(t, 3, func(nc *cluster.NodeConfig) { nc.Cluster.LogStore = cluster.LogStoreRecords })
	for i := range 30 {
		g.send("T", int32(i%2), strings.Repeat("c", 100)+fmt.Sprint(i), "")
	}
	base := g.converge()
	for _, n := range g.nodes {
		if err := n.Snapshot(); err != nil {
			t.Fatal(err)
		}
	}
	old, lostSent := isolateWithLostSends(t, g)
	nl := -1
	waitFor(t, "another leader", func() bool {
		for i, n := range g.nodes {
			if i != old && n.Writable() {
				nl = i
				return true
			}
		}
		return false
	})
	lostSent()
	for i := range 10 {
		g.sendVia(old, "T", int32(i%2), fmt.Sprint("after ", i))
	}
	dst := 3 - old - nl
	waitFor(t, "the follower to apply the new leader's sends", func() bool {
		return g.nodes[dst].AppliedOffset() == g.nodes[nl].AppliedOffset() && g.nodes[dst].AppliedOffset() > base
	})
	for i := range g.nodes {
		g.stop(i)
	}

	// The cut-off leader's CommitLog holds whole records past base that
	// differ from the group's.
	file := "00000000000000000000"
	theirs, err := os.ReadFile(filepath.Join(g.dirs[old], "commitlog", file))
	if err != nil {
		t.Fatal(err)
	}
	info, err := record.Check(theirs[base:], base, true)
	if err != nil || info.Blank || !strings.Contains(string(theirs[base:base+int64(info.Size)]), "lost ") {
		t.Fatalf("the cut-off leader's record at %d: %+v %v (want an uncommitted send)", base, info, err)
	}
	group, err := os.ReadFile(filepath.Join(g.dirs[nl], "commitlog", file))
	if err != nil {
		t.Fatal(err)
	}

	repair := func(t *testing.T, src cluster.RepairSource) (cluster.OfflineRepairReport, []int64, []byte) {
		t.Helper()
		defer src.Close()
		target := copyDir(t, g.dirs[dst])
		damaged := damageRecord(t, filepath.Join(target, "commitlog", file), 5)
		rep, err := cluster.RepairStore(context.Background(), target, src, false)
		if err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(filepath.Join(target, "commitlog", file))
		if err != nil {
			t.Fatal(err)
		}
		return rep, []int64{damaged}, b
	}
	for _, c := range []struct {
		name   string
		remove []string // from a copy of the source's directory
	}{
		{"indexed by the ConsumeQueues", []string{"raft/snapshots"}},
		{"up to its own snapshot", []string{"consumequeue"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := copyDir(t, g.dirs[old])
			for _, r := range c.remove {
				if err := os.RemoveAll(filepath.Join(dir, r)); err != nil {
					t.Fatal(err)
				}
			}
			src, err := cluster.DirSource(dir)
			if err != nil {
				t.Fatal(err)
			}
			if gi, err := src.Group(context.Background()); err != nil || gi.Applied != base {
				t.Fatalf("the source's committed end %d (%v), want %d", gi.Applied, err, base)
			}
			rep, damaged, b := repair(t, src)
			if fmt.Sprint(rep.Repaired) != fmt.Sprint(damaged) || rep.To != base {
				t.Fatalf("repaired %v up to %d, damaged %v, committed end %d", rep.Repaired, rep.To, damaged, base)
			}
			if end := int64(len(group)); string(b[:end]) != string(group[:end]) {
				t.Fatal("the repaired CommitLog differs from the group's")
			}
		})
	}
	t.Run("nothing known committed", func(t *testing.T) {
		dir := copyDir(t, g.dirs[old])
		for _, r := range []string{"raft/snapshots", "consumequeue"} {
			if err := os.RemoveAll(filepath.Join(dir, r)); err != nil {
				t.Fatal(err)
			}
		}
		src, err := cluster.DirSource(dir)
		if err != nil {
			t.Fatal(err)
		}
		rep, _, _ := repair(t, src)
		if len(rep.Repaired) != 0 || rep.To != 0 {
			t.Fatalf("a source that knows nothing committed repaired %v up to %d", rep.Repaired, rep.To)
		}
	})
	t.Run("broken variant", func(t *testing.T) {
		src, err := cluster.WholeLogDirSource(g.dirs[old])
		if err != nil {
			t.Fatal(err)
		}
		rep, _, b := repair(t, src)
		over := slices.IndexFunc(rep.Repaired, func(off int64) bool { return off >= base })
		if over < 0 || string(b[base:base+int64(info.Size)]) == string(group[base:base+int64(info.Size)]) {
			t.Fatalf("the whole CommitLog served as committed repaired %v up to %d: the test cannot tell", rep.Repaired, rep.To)
		}
		t.Logf("broken variant caught: records %v written over the group's committed ones from %d", rep.Repaired[over:], base)
	})
}

// damageRecord flips a body byte of the i-th record of CommitLog file
// file and returns the record's offset.
func damageRecord(t *testing.T, file string, i int) int64 {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	pos := int64(0)
	for range i {
		info, err := record.Check(b[pos:], pos, true)
		if err != nil || info.Blank {
			t.Fatalf("record at %d: %v", pos, err)
		}
		pos += int64(info.Size)
	}
	info, err := record.Check(b[pos:], pos, true)
	if err != nil {
		t.Fatal(err)
	}
	flipByte(t, file, pos+int64(info.Size)-3)
	return pos
}
