//go:build linux

package main

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"log/slog"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rocketstore/rocketstore/engine"
	"github.com/rocketstore/rocketstore/server"
)

// footprintTolerance is how far (a fraction) a measured footprint may be
// from the documented one: file systems allocate metadata and directory
// blocks differently, preallocated files are the same everywhere.
const footprintTolerance = 0.01

// tmpfsMagic is tmpfs's statfs type (TMPFS_MAGIC in linux/magic.h).
const tmpfsMagic = 0x01021994

// TestDiskFootprint measures what docs/configuration.md#disk-footprint
// and the README state: the disk a store takes (allocated blocks, as du
// counts them) after serve and one `admin sendMessage -t Trial -p hello`,
// with the defaults, with the docs' small.yaml, without the message
// index, as a one-member replica and as cluster-demo's replicas. It prints
// the figures (go test -v -run TestDiskFootprint ./cmd/rocketstore) and
// fails when the docs drift from them by more than footprintTolerance.
func TestDiskFootprint(t *testing.T) {
	var sfs syscall.Statfs_t
	if err := syscall.Statfs(t.TempDir(), &sfs); err != nil {
		t.Fatal(err)
	}
	if sfs.Type == tmpfsMagic {
		t.Skip("the temporary directory is on tmpfs, where the 3 GB of preallocated files would take memory " +
			"(and measure nothing a store on disk takes): set TMPDIR to a directory on disk")
	}
	doc := readDoc(t, "../../docs/configuration.md")
	small := docSmallYAML(t, doc)
	if got, want := yamlPairs(small), yamlPairs(smallFootprint); got != want {
		t.Fatalf("the docs' small.yaml sets\n%s\ncluster-demo's smallFootprint sets\n%s", got, want)
	}
	measured := map[string]int64{}
	var defaults map[string]int64 // the parts of the defaults' store
	record := func(row string, total int64, parts map[string]int64) {
		measured[row] = total
		if row == "defaults" {
			defaults = parts
		}
		t.Logf("%-48s %15s B  %v", row, commas(total), parts)
	}
	record(measureServe(t, "", false))
	record(measureServe(t, small, false))
	record(measureServe(t, small+"messageIndexEnable: false\n", false))
	record(measureServe(t, "", true))
	one, all, parts := measureDemo(t)
	record("one replica of `cluster-demo` (small files)", one, parts)
	record("`cluster-demo`, three replicas", all, nil)

	for row, got := range measured {
		want := docTotal(t, doc, row)
		if d := float64(got - want); d > footprintTolerance*float64(want) || -d > footprintTolerance*float64(want) {
			t.Errorf("%s: measured %s B, docs/configuration.md states %s B", row, commas(got), commas(want))
		}
	}
	readme := readDoc(t, "../../README.md")
	checkRounded(t, "README.md", readme, `takes (\d+(?:\.\d+)?) GB of disk`, 1e9, measured["defaults"])
	checkRounded(t, "README.md", readme, `has an (\d+) MB setup for trials`, 1e6, measured["`small.yaml` below"])
	checkRounded(t, "README.md", readme, `(\d+) MB message index`, 1e6, defaults["index"])
	checkRounded(t, "README.md", readme, `(\d+) MB a ConsumeQueue`, 1e6, defaults["consumequeue"])
	checkRounded(t, "README.md", readme, `(\d+) MB timer wheel`, 1e6, defaults["timerwheel"])
	checkRounded(t, "docs/configuration.md", doc, `already\s+takes (\d+(?:\.\d+)?) GB`, 1e9, measured["defaults"])
	checkRounded(t, "docs/configuration.md", doc, `footprint to (\d+) MB`, 1e6, measured["`small.yaml` below"])
	// cluster-demo's help states its footprint too.
	help := strings.Join(strings.Fields(newClusterDemoCmd().Long), " ")
	checkAbout(t, "cluster-demo --help", help, `about (\d+) MB of disk a replica`, 1e6, one)
	checkAbout(t, "cluster-demo --help", help, `(\d+) MB for the three`, 1e6, all)
}

// checkAbout asserts that the figure pattern finds in text (in units of
// unit bytes) is within footprintTolerance of got, or within the half unit
// its rounding allows.
func checkAbout(t *testing.T, name, text, pattern string, unit float64, got int64) {
	t.Helper()
	m := regexp.MustCompile(pattern).FindStringSubmatch(text)
	if m == nil {
		t.Fatalf("%s: no figure matching %q", name, pattern)
	}
	stated, err := strconv.ParseFloat(m[1], 64)
	if err != nil {
		t.Fatal(err)
	}
	if d, g := stated*unit-float64(got), float64(got); d > max(footprintTolerance*g, unit/2) || -d > max(footprintTolerance*g, unit/2) {
		t.Errorf("%s states %q, measured %s B (%.1f)", name, m[0], commas(got), g/unit)
	}
}

// measureServe starts serve's node on a new directory with config (the
// defaults when empty; a one-member group when replica), sends one
// message and returns the docs' row name and the directory's footprint.
func measureServe(t *testing.T, config string, replica bool) (string, int64, map[string]int64) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "store")
	nc := server.NodeConfig{Dir: dir, Listen: "127.0.0.1:0"}
	if config != "" {
		name := filepath.Join(t.TempDir(), "small.yaml")
		if err := os.WriteFile(name, []byte(config), 0o644); err != nil {
			t.Fatal(err)
		}
		fc, _, err := loadServeConfig(name)
		if err != nil {
			t.Fatal(err)
		}
		if err := fc.Apply(&nc); err != nil {
			t.Fatal(err)
		}
	}
	log := slog.New(slog.DiscardHandler)
	nc.Server.Logger, nc.Broker.Store.Logger = log, log
	var addr string
	var stop func() error
	var store *engine.Store
	if replica {
		raftAddr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
		cn, err := startClusterNode(nc, &raftFileConfig{NodeID: "n1", Bind: raftAddr, Peers: []string{"n1@" + raftAddr}}, log)
		if err != nil {
			t.Fatal(err)
		}
		addr, stop, store = cn.addr, func() error { return cn.shutdown(context.Background()) }, cn.node.Broker().Store()
	} else {
		n, err := server.StartNode(nc)
		if err != nil {
			t.Fatal(err)
		}
		addr, stop, store = n.Addr, n.Close, n.Broker.Store()
	}
	sendTrial(t, addr)
	waitDispatched(t, store)
	total, parts := allocated(t, dir)
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	// Each default store preallocates 1.5 GB: free it before the next
	// row, so the test needs the disk of one store, not of four.
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	switch {
	case replica:
		return "one replica (a `raft:` section), defaults", total, parts
	case config == "":
		return "defaults", total, parts
	case strings.Contains(config, "messageIndexEnable: false"):
		return "`small.yaml` with `messageIndexEnable: false`", total, parts
	}
	return "`small.yaml` below", total, parts
}

// measureDemo starts cluster-demo's three replicas from its config files
// (with free ports), sends one message and returns one replica's
// footprint and the demo directory's.
func measureDemo(t *testing.T) (one, all int64, parts map[string]int64) {
	t.Helper()
	dir := t.TempDir()
	port := demoBasePort(t)
	log := slog.New(slog.DiscardHandler)
	var nodes []*clusterNode
	defer func() {
		for _, cn := range nodes {
			if err := cn.shutdown(context.Background()); err != nil {
				t.Error(err)
			}
		}
	}()
	var ns []string
	for i := 1; i <= 3; i++ {
		name := filepath.Join(dir, fmt.Sprintf("n%d.yaml", i))
		if err := os.WriteFile(name, []byte(demoConfig(i, port)), 0o644); err != nil {
			t.Fatal(err)
		}
		fc, rc, err := loadServeConfig(name)
		if err != nil {
			t.Fatal(err)
		}
		nc := server.NodeConfig{Dir: filepath.Join(dir, fmt.Sprintf("n%d", i))}
		if err := fc.Apply(&nc); err != nil {
			t.Fatal(err)
		}
		nc.Server.Logger, nc.Broker.Store.Logger = log, log
		ln, err := net.Listen("tcp", nc.Listen)
		if err != nil {
			t.Fatal(err)
		}
		cn, err := startClusterNodeOn(ln, nc, rc, log)
		if err != nil {
			t.Fatal(err)
		}
		nodes = append(nodes, cn)
		ns = append(ns, cn.addr)
	}
	sendTrial(t, strings.Join(ns, ";"))
	for _, cn := range nodes {
		waitDispatched(t, cn.node.Broker().Store())
	}
	one, parts = allocated(t, filepath.Join(dir, "n1"))
	all, _ = allocated(t, dir)
	return one, all, parts
}

// sendTrial runs the docs' `rocketstore admin sendMessage -t Trial -p
// hello`, again while the name servers know no leader's route yet (a
// producer retries so too).
func sendTrial(t *testing.T, namesrv string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		var out, errOut bytes.Buffer
		if execute([]string{"admin", "-n", namesrv, "sendMessage", "-t", "Trial", "-p", "hello"}, &out, &errOut) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("sendMessage: %s%s", out.String(), errOut.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// waitDispatched waits for store to hold the message and to have
// dispatched it (a ConsumeQueue file and an index file are created by
// the dispatch that follows the write; a follower writes once it applies).
func waitDispatched(t *testing.T, store *engine.Store) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for store.CommitLog().MaxOffset() == 0 {
		if ctx.Err() != nil {
			t.Fatal("the message never reached the store")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := store.WaitDispatched(ctx, store.CommitLog().MaxOffset()); err != nil {
		t.Fatal(err)
	}
}

// allocated is `du -s --block-size=1 root` (the bytes allocated to root
// and everything under it) and the same for each entry of root.
func allocated(t *testing.T, root string) (int64, map[string]int64) {
	t.Helper()
	parts := map[string]int64{}
	var total int64
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		st, ok := info.Sys().(*syscall.Stat_t)
		if !ok {
			return fmt.Errorf("%s: no stat blocks", path)
		}
		n := st.Blocks * 512
		total += n
		if rel, _ := filepath.Rel(root, path); rel != "." {
			parts[strings.Split(rel, string(filepath.Separator))[0]] += n
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return total, parts
}

func readDoc(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// docSmallYAML is the small.yaml block of docs/configuration.md.
func docSmallYAML(t *testing.T, doc string) string {
	t.Helper()
	m := regexp.MustCompile("(?s)this `small.yaml`.*?```yaml\n(.*?)```").FindStringSubmatch(doc)
	if m == nil {
		t.Fatal("docs/configuration.md has no small.yaml block")
	}
	return m[1]
}

// yamlPairs is a flat YAML's "key: value" lines without comments.
func yamlPairs(y string) string {
	var out []string
	for _, l := range strings.Split(y, "\n") {
		l, _, _ = strings.Cut(l, "#")
		if l = strings.TrimSpace(l); l != "" {
			out = append(out, strings.Join(strings.Fields(l), " "))
		}
	}
	return strings.Join(out, "\n")
}

// docTotal is the total of row in the measured table of
// docs/configuration.md ("| row | 1,508,925,440 B (1.5 GB) | ...").
func docTotal(t *testing.T, doc, row string) int64 {
	t.Helper()
	m := regexp.MustCompile(`(?m)^\| ` + regexp.QuoteMeta(row) + ` \| ([\d,]+) B`).FindStringSubmatch(doc)
	if m == nil {
		t.Fatalf("docs/configuration.md has no footprint row %q", row)
	}
	v, err := strconv.ParseInt(strings.ReplaceAll(m[1], ",", ""), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// checkRounded asserts that the rounded figure pattern finds in text (in
// units of unit bytes) is got rounded the same way.
func checkRounded(t *testing.T, name, text, pattern string, unit float64, got int64) {
	t.Helper()
	m := regexp.MustCompile(pattern).FindStringSubmatch(text)
	if m == nil {
		t.Fatalf("%s: no figure matching %q", name, pattern)
	}
	decimals := 0
	if _, frac, ok := strings.Cut(m[1], "."); ok {
		decimals = len(frac)
	}
	if want := strconv.FormatFloat(float64(got)/unit, 'f', decimals, 64); want != m[1] {
		t.Errorf("%s states %q, measured %s B (%s)", name, m[0], commas(got), want)
	}
}

// commas formats n with thousands separators, as the docs do.
func commas(n int64) string {
	s := strconv.FormatInt(n, 10)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// demoBasePort returns a base port for demoConfig whose derived ports
// (name servers at base+0..2, Raft at base+1000..1002, gRPC at
// base+2000..2002, brokers at demoBrokerPort) are all free now.
// The base is drawn below the kernel's ephemeral range (32768 and up by
// default), so that no connection of a test running beside this one is
// handed one of them between this check and the bind; a port free from
// the ephemeral range alone would not say that of base+1000.
func demoBasePort(t *testing.T) int {
	t.Helper()
	for range 50 {
		base := 20000 + rand.IntN(8000)
		if portsFree(base, base+1, base+2, base+1000, base+1001, base+1002, base+2000, base+2001, base+2002,
			demoBrokerPort(base, 1), demoBrokerPort(base, 2), demoBrokerPort(base, 3)) {
			return base
		}
	}
	t.Fatal("no free run of demo ports in 20000-31002")
	return 0
}

// portsFree reports whether every port can be bound on 127.0.0.1.
func portsFree(ports ...int) bool {
	var lns []net.Listener
	defer func() {
		for _, ln := range lns {
			ln.Close()
		}
	}()
	for _, p := range ports {
		ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", p))
		if err != nil {
			return false
		}
		lns = append(lns, ln)
	}
	return true
}
