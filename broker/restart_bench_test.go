package broker_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/rocketstore/rocketstore/backend/mmap"
	"github.com/rocketstore/rocketstore/broker"
	"github.com/rocketstore/rocketstore/engine"
	"github.com/rocketstore/rocketstore/record"
)

// BenchmarkRestartAfterCrash times broker.Open of a store that a crash
// left before the checkpoint recorded the index: RocketMQ's default sizes
// (1 GiB CommitLog files, 20 million keys an index file), every message
// with a UNIQ_KEY, RESTART_GIB GiB of 4 KiB bodies (1). Each op marks the
// store crashed (the abort file, and the checkpoint's index timestamp put
// back to the first message's) and opens it; the engine's recovery work
// is the same each time (its own checkpoint is intact), the index's is
// what is measured: a rebuild from its file's first record, or the repair
// of the newest index file.
//
//	RESTART_GIB=4 go test ./broker -run '^$' -bench RestartAfterCrash -benchtime 3x
//
// RESTART_DIR keeps the store across runs (and binaries).
func BenchmarkRestartAfterCrash(b *testing.B) {
	gib := 1
	if v := os.Getenv("RESTART_GIB"); v != "" {
		var err error
		if gib, err = strconv.Atoi(v); err != nil {
			b.Fatal(err)
		}
	}
	dir := os.Getenv("RESTART_DIR")
	if dir == "" {
		dir = b.TempDir()
	}
	cfg := broker.Config{Store: engine.Config{Logger: quiet}}
	openFS := func() *mmap.FS {
		fs, err := mmap.New(dir)
		if err != nil {
			b.Fatal(err)
		}
		return fs
	}
	const bodySize = 4 << 10
	if _, err := os.Stat(filepath.Join(dir, "commitlog")); err != nil {
		br, err := broker.Open(openFS(), cfg)
		if err != nil {
			b.Fatal(err)
		}
		body := make([]byte, bodySize)
		n := gib << 30 / (bodySize + 200)
		for i := range n {
			props := string(record.AppendProperties(nil, map[string]string{"UNIQ_KEY": fmt.Sprintf("%032X", i)}))
			res := br.SendMessage(context.Background(), &broker.SendRequest{Topic: "RestartTopic", DefaultTopic: record.DefaultTopic,
				DefaultTopicQueueNums: 4, QueueID: int32(i % 4), BornTimestamp: time.Now().UnixMilli(), Properties: props, Body: body})
			if res.Code != broker.Success {
				b.Fatalf("send %d: %v %s", i, res.Code, res.Remark)
			}
		}
		if err := br.Close(); err != nil {
			b.Fatal(err)
		}
	}
	first := firstStoreTimestamp(b, filepath.Join(dir, "commitlog", "00000000000000000000"))
	for b.Loop() {
		b.StopTimer()
		markIndexCrashed(b, dir, first)
		b.StartTimer()
		br, err := broker.Open(openFS(), cfg)
		if err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		if err := br.Close(); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
}

// firstStoreTimestamp reads the STORETIMESTAMP of the first record of a
// CommitLog file.
func firstStoreTimestamp(b *testing.B, name string) int64 {
	f, err := os.Open(name)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 64<<10)
	if _, err := f.ReadAt(buf, 0); err != nil {
		b.Fatal(err)
	}
	info, err := record.Check(buf, 0, false)
	if err != nil {
		b.Fatal(err)
	}
	return info.StoreTimestamp
}

// markIndexCrashed makes the closed store look as a SIGKILL left it before
// the index timestamp reached the checkpoint: the abort file, and the
// checkpoint's indexMsgTimestamp (at 16) set to ts.
func markIndexCrashed(b *testing.B, dir string, ts int64) {
	if err := os.WriteFile(filepath.Join(dir, "abort"), nil, 0o644); err != nil {
		b.Fatal(err)
	}
	f, err := os.OpenFile(filepath.Join(dir, "checkpoint"), os.O_RDWR, 0)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	var v [8]byte
	binary.BigEndian.PutUint64(v[:], uint64(ts))
	if _, err := f.WriteAt(v[:], 16); err != nil {
		b.Fatal(err)
	}
}
