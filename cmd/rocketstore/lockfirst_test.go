package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rocketstore/rocketstore/backend/mmap"
	"github.com/rocketstore/rocketstore/broker"
	"github.com/rocketstore/rocketstore/broker/index"
	"github.com/rocketstore/rocketstore/engine"
	"github.com/rocketstore/rocketstore/internal/hooks"
	"github.com/rocketstore/rocketstore/record"
)

// fileState is what a file of a store looks like: its content and mtime.
type fileState struct {
	sum   [sha256.Size]byte
	mtime time.Time
	size  int64
}

// storeFiles hashes every file under dir (names relative to dir).
func storeFiles(t *testing.T, dir string) map[string]fileState {
	t.Helper()
	out := map[string]fileState{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			// A created directory is a change too (the state of a
			// directory is its existence).
			rel, _ := filepath.Rel(dir, p)
			out[rel+"/"] = fileState{}
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		out[rel] = fileState{sum: sha256.Sum256(b), mtime: fi.ModTime(), size: fi.Size()}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// lockTestBroker is the config of the brokers of TestHeldStoreUntouched:
// small CommitLog files, the index on with the size serve gives it.
func lockTestBroker(manual bool) broker.Config {
	return broker.Config{Store: hooks.WithManual(engine.Config{CommitLogFileSize: 64 << 10, FlushDiskType: engine.SyncFlush}, manual),
		Index: index.Config{MaxHashSlotNum: 16, MaxIndexNum: 1000}}
}

// TestHeldStoreUntouched: while a process holds a store, every command
// that opens a store directory fails with a clear "in use" error, and no
// file of the store changes (content and mtime), none is created or
// deleted. A second broker used to run the index's abnormal-exit recovery,
// deleting index files, before it failed to take the lock.
func TestHeldStoreUntouched(t *testing.T) {
	dir := t.TempDir()
	fsys, err := mmap.New(dir)
	if err != nil {
		t.Fatal(err)
	}
	b, err := broker.Open(fsys, lockTestBroker(false))
	if err != nil {
		t.Fatal(err)
	}
	send(t, b, 0, 200)
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	// The holder: a broker that runs no background work, so that only
	// the commands under test could change a file.
	holder, err := broker.Open(fsys, lockTestBroker(true))
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close()
	send(t, holder, 200, 400)
	// What the dispatcher and the broker's persist loop do: the index
	// file now says it holds entries newer than the checkpoint on disk.
	if err := holder.Store().WaitDispatched(context.Background(), holder.Store().CommitLog().MaxOffset()); err != nil {
		t.Fatal(err)
	}
	if err := holder.Index().Flush(); err != nil {
		t.Fatal(err)
	}
	before := storeFiles(t, dir)
	if _, ok := before["abort"]; !ok {
		t.Fatal("the holder left no abort marker: the test would not show a recovery")
	}
	if !hasIndexFile(before) {
		t.Fatalf("no index file in the held store: %v", keys(before))
	}
	// A stopped store, the other side of repair.
	other := t.TempDir()
	if err := os.MkdirAll(filepath.Join(other, "commitlog"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(other, "commitlog", "00000000000000000000"), make([]byte, 64<<10), 0o644); err != nil {
		t.Fatal(err)
	}
	// A replica's config: serve opens a cluster node, which must take the
	// lock before it creates its Raft directory.
	raftConf := filepath.Join(t.TempDir(), "raft.yaml")
	if err := os.WriteFile(raftConf, []byte("brokerName: broker-a\nraft:\n  nodeId: n1\n  bind: 127.0.0.1:0\n  peers: [n1@127.0.0.1:1]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"serve", "--dir", dir, "--listen", "127.0.0.1:0"},
		{"serve", "--dir", dir, "--listen", "127.0.0.1:0", "--config", raftConf},
		{"read", "--dir", dir, "--topic", "T", "--queue", "0"},
		{"stats", "--dir", dir},
		{"verify", "--dir", dir},
		{"repair", "--dir", dir, "--from", other},
		{"repair", "--dir", other, "--from", dir},
		{"demo", "--dir", dir},
	} {
		var out, errOut bytes.Buffer
		code := execute(args, &out, &errOut)
		msg := errOut.String()
		if code == exitOK {
			t.Errorf("%s on a held store succeeded:\n%s%s", args[0], out.String(), msg)
		}
		if !strings.Contains(msg, "in use") && !strings.Contains(msg, "locked") {
			t.Errorf("%s on a held store: exit %d, error does not say the store is in use or locked:\n%s", args[0], code, msg)
		}
		if diff := diffFiles(before, storeFiles(t, dir)); diff != "" {
			t.Fatalf("%s on a held store changed its files:\n%s", args[0], diff)
		}
	}
	// serve's index has RocketMQ's geometry, which the held store's
	// small files do not match; a broker with the held store's settings
	// goes as far as the index's recovery.
	second, err := mmap.New(dir)
	if err != nil {
		t.Fatal(err)
	}
	if b, err := broker.Open(second, lockTestBroker(false)); !errors.Is(err, engine.ErrStoreLocked) {
		if err == nil {
			b.Close()
		}
		t.Errorf("a second broker on a held store: %v, want ErrStoreLocked", err)
	}
	if diff := diffFiles(before, storeFiles(t, dir)); diff != "" {
		t.Fatalf("a second broker on a held store changed its files:\n%s", diff)
	}
}

// send sends messages from to to-1 to b, each with its key.
func send(t *testing.T, b *broker.Broker, from, to int) {
	t.Helper()
	for i := from; i < to; i++ {
		res := b.SendMessage(context.Background(), &broker.SendRequest{ProducerGroup: "pg", Topic: "T",
			DefaultTopic: "TBW102", DefaultTopicQueueNums: 4, QueueID: int32(i % 4),
			Properties: string(record.AppendProperties(nil, map[string]string{"KEYS": fmt.Sprint("k", i)})),
			Body:       []byte(strings.Repeat("x", 300))})
		if res.Code != broker.Success {
			t.Fatalf("send: %v %s", res.Code, res.Remark)
		}
	}
}

func hasIndexFile(files map[string]fileState) bool {
	for n := range files {
		if strings.HasPrefix(n, "index"+string(filepath.Separator)) {
			return true
		}
	}
	return false
}

func keys(m map[string]fileState) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// diffFiles names the files created, deleted or changed between a and b.
func diffFiles(a, b map[string]fileState) string {
	var sb strings.Builder
	for n, fa := range a {
		fb, ok := b[n]
		switch {
		case !ok:
			fmt.Fprintf(&sb, "deleted %s\n", n)
		case fa.sum != fb.sum || fa.size != fb.size:
			fmt.Fprintf(&sb, "content of %s changed\n", n)
		case !fa.mtime.Equal(fb.mtime):
			fmt.Fprintf(&sb, "mtime of %s changed\n", n)
		}
	}
	for n := range b {
		if _, ok := a[n]; !ok {
			fmt.Fprintf(&sb, "created %s\n", n)
		}
	}
	return sb.String()
}
