package proptest

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/rocketstore/rocketstore/internal/clocks/clockstest"
	"github.com/rocketstore/rocketstore/internal/engineops"

	"pgregory.net/rapid"

	"github.com/rocketstore/rocketstore/backend"
	"github.com/rocketstore/rocketstore/backend/memfs"
	"github.com/rocketstore/rocketstore/backend/mmap"
	"github.com/rocketstore/rocketstore/crashsim"
	"github.com/rocketstore/rocketstore/engine"
	"github.com/rocketstore/rocketstore/internal/hooks"
	"github.com/rocketstore/rocketstore/record"
)

// op is one step of a metamorphic operation log.
type op struct {
	kind    string // put, batch, flush, dispatch, restart
	q       queueKey
	n, size int
}

func (o op) String() string { return fmt.Sprintf("%s(%v,%d,%d)", o.kind, o.q, o.n, o.size) }

func drawOps(t *rapid.T) []op {
	kinds := []string{"put", "put", "put", "batch", "flush", "dispatch", "restart"}
	n := rapid.IntRange(1, 60).Draw(t, "ops")
	ops := make([]op, n)
	for i := range ops {
		ops[i] = op{
			kind: rapid.SampledFrom(kinds).Draw(t, "op"),
			q:    rapid.SampledFrom(queueKeys).Draw(t, "queue"),
			n:    rapid.IntRange(2, 4).Draw(t, "batchSize"),
			size: rapid.SampledFrom([]int{0, 1, 17, 100, 400, 1500, 3000}).Draw(t, "bodyLen"),
		}
	}
	return ops
}

// variantCfg is one point of P6's grid.
type variantCfg struct {
	backend  string // memfs, crashsim or mmap (files in a temporary directory)
	fileSize int64
	flush    engine.FlushDiskType
}

// historyEntry is what a consumer sees of one message.
type historyEntry struct {
	qoff       int64
	topic      string
	body, tags string
}

// runLog runs ops on a fresh store of cfg and returns every queue's
// messages as GetMessage returns them.
func runLog(t *rapid.T, ops []op, cfg variantCfg) map[queueKey][]historyEntry {
	var fs backend.FS
	var reopen func() backend.FS
	switch cfg.backend {
	case "mmap":
		dir, err := os.MkdirTemp(tempRoot(), "proptest-p6-")
		if err != nil {
			t.Fatal(err)
		}
		defer os.RemoveAll(dir) // after the deferred Close below
		m, err := mmap.New(dir)
		if err != nil {
			t.Fatal(err)
		}
		fs, reopen = m, func() backend.FS { return m }
	case "memfs":
		m := memfs.New(nil)
		fs, reopen = m, func() backend.FS { return m }
	default:
		c, err := crashsim.New(nil, crashsim.Options{})
		if err != nil {
			t.Fatal(err)
		}
		fs, reopen = c, func() backend.FS { return c }
	}
	ecfg := hooks.Manual(engine.Config{CommitLogFileSize: cfg.fileSize, ConsumeQueueUnits: 16, FlushDiskType: cfg.flush,
		Logger: quiet, Clock: clockstest.NewStepping(time.UnixMilli(1_700_000_000_000), time.Millisecond)})
	s, err := engine.Open(fs, ecfg)
	if err != nil {
		t.Fatal(err)
	}
	seq := 0
	body := func(n int) []byte {
		seq++
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(seq*31 + i)
		}
		return b
	}
	msgFor := func(q queueKey, n int) *engine.Message {
		tags := []string{"", "tagA", "tagB"}[seq%3]
		p := map[string]string{"KEYS": fmt.Sprintf("k%d", seq)}
		if tags != "" {
			p["TAGS"] = tags
		}
		return &engine.Message{Topic: q.topic, QueueID: q.qid, Body: body(n), Properties: p}
	}
	ctx := context.Background()
	for _, o := range ops {
		var err error
		switch o.kind {
		case "put":
			_, err = s.Put(ctx, msgFor(o.q, o.size))
		case "batch":
			batch := make([]*engine.Message, o.n)
			for i := range batch {
				batch[i] = msgFor(o.q, o.size/4)
			}
			_, err = s.PutBatch(ctx, batch)
		case "flush":
			err = s.FlushCommitLog(0)
		case "dispatch":
			_, err = engineops.Of(s).Dispatch()
		case "restart":
			if err = s.Close(); err == nil {
				s, err = engine.Open(reopen(), ecfg)
			}
		}
		if err != nil {
			t.Fatalf("%v on %+v: %v", o, cfg, err)
		}
	}
	if _, err := engineops.Of(s).Dispatch(); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	out := make(map[queueKey][]historyEntry)
	for _, k := range queueKeys {
		for off := int64(0); off < s.MaxOffsetInQueue(k.topic, k.qid); {
			res, err := s.GetMessage(k.topic, k.qid, off, 32, nil)
			if err != nil || len(res.Messages) == 0 {
				t.Fatalf("GetMessage %v@%d on %+v: %v", k, off, cfg, err)
			}
			for _, v := range res.Messages {
				ext, err := record.Decode(v.Record, v.CommitLogOffset, true)
				if err != nil {
					t.Fatal(err)
				}
				out[k] = append(out[k], historyEntry{v.QueueOffset, ext.Topic, string(ext.Body), ext.Tags()})
			}
			off = res.NextBeginOffset
			res.Release()
		}
	}
	return out
}

// TestMetamorphicHistory is P6: one operation log, run without crashes on
// every backend (memfs, crashsim, and mmap on real files in a temporary
// directory), two CommitLog file sizes and both flush types, gives the
// same history: the same messages per queue, with the same queue offsets,
// bodies and tags.
func TestMetamorphicHistory(t *testing.T) {
	var grid []variantCfg
	for _, b := range []string{"memfs", "crashsim", "mmap"} {
		for _, size := range []int64{4096, 65536} {
			for _, fl := range []engine.FlushDiskType{engine.AsyncFlush, engine.SyncFlush} {
				grid = append(grid, variantCfg{b, size, fl})
			}
		}
	}
	checkShare(t, 0.02, func(t *rapid.T) {
		ops := drawOps(t)
		ref := runLog(t, ops, grid[0])
		for _, cfg := range grid[1:] {
			if got := runLog(t, ops, cfg); !sameHistory(ref, got) {
				t.Fatalf("P6: history on %+v differs from %+v:\n%s", cfg, grid[0], diffHistory(ref, got))
			}
		}
	})
}

func sameHistory(a, b map[queueKey][]historyEntry) bool { return diffHistory(a, b) == "" }

func diffHistory(a, b map[queueKey][]historyEntry) string {
	var sb strings.Builder
	for _, k := range queueKeys {
		x, y := a[k], b[k]
		if len(x) != len(y) {
			fmt.Fprintf(&sb, "  %v: %d messages / %d\n", k, len(x), len(y))
			continue
		}
		for i := range x {
			if x[i].qoff != y[i].qoff || x[i].topic != y[i].topic || x[i].tags != y[i].tags ||
				!bytes.Equal([]byte(x[i].body), []byte(y[i].body)) {
				fmt.Fprintf(&sb, "  %v #%d: %v / %v\n", k, i, x[i].qoff, y[i].qoff)
				break
			}
		}
	}
	return sb.String()
}

// tempRoot returns where P6's mmap stores go: /dev/shm when it is there
// (tmpfs: the mapping and msync paths are the real ones, but a sync costs
// no disk flush, which keeps the grid to seconds), else the temp dir.
func tempRoot() string {
	if st, err := os.Stat("/dev/shm"); err == nil && st.IsDir() {
		if f, err := os.CreateTemp("/dev/shm", "proptest-probe-"); err == nil {
			f.Close()
			os.Remove(f.Name())
			return "/dev/shm"
		}
	}
	return os.TempDir()
}
