package bench

import (
	"context"
	"os"
	"path/filepath"
	"sort"
	"syscall"
	"testing"
	"time"

	"github.com/rocketstore/rocketstore/backend/mmap"
	"github.com/rocketstore/rocketstore/engine"
)

// BenchmarkRecoveryBacklog is the recovery row of `rocketstore bench` alone:
// the same backlog (1 GiB of 1 KiB bodies in one 1 GiB CommitLog file,
// written once), made to look crashed before each op, and Open timed; after
// the ops, its two bounds on the same bytes (a fresh mapping read+CRC32, and
// pread+CRC32 in 256 KiB chunks). It reports records/s for all three, the
// ratios, and the process CPU (user+sys) per recovery and per pass of the
// mapping bound, which a shared machine disturbs less than the wall time:
//
//	go test ./bench -run '^$' -bench RecoveryBacklog -benchtime 3x
//
// BACKLOG_DIR keeps the backlog in a directory across runs (and binaries).
// A kept backlog need not be in the state `rocketstore bench` measures (a
// file just written through a mapping): on a VM whose kernel
// runs DAMON with a pageout scheme for pages cold for a minute, a CRC of a
// kept 1 GiB backlog through a fresh mapping cost 1.0-1.25 s of CPU while
// a file just written that way took 0.11-0.16 s, side by side; in a
// second run, 0.95-1.02 s against 0.60-0.68 s, when pread+CRC32
// of either took 0.21-0.31 s. The mapping
// bound of a kept backlog, and the ratio to it, then say more about the
// page cache than about recovery: compare such runs with each other and
// with the pread bound.
func BenchmarkRecoveryBacklog(b *testing.B) {
	e := env{spec: DefaultSpec(false)}
	cfg := e.storeConfig(engine.AsyncFlush)
	dir := os.Getenv("BACKLOG_DIR")
	if dir == "" {
		dir = b.TempDir()
	}
	n := e.spec.BacklogMsgs()
	bs := &benchStore{syncs: &syncCounter{}, arrived: make(chan struct{}, 1), dir: dir, cfg: cfg}
	remap := func() {
		fs, err := mmap.New(dir)
		if err != nil {
			b.Fatal(err)
		}
		bs.fs = fs
	}
	if _, err := os.Stat(filepath.Join(dir, "commitlog")); err != nil {
		remap()
		if err := bs.reopen(cfg); err != nil {
			b.Fatal(err)
		}
		m := newMessage(0, e.spec.BacklogBody)
		for range n {
			if _, err := bs.Put(context.Background(), m); err != nil {
				b.Fatal(err)
			}
		}
		if err := bs.Close(); err != nil {
			b.Fatal(err)
		}
	}
	var logEnd int64
	var cpu time.Duration
	for b.Loop() {
		b.StopTimer()
		if err := markCrashed(dir); err != nil {
			b.Fatal(err)
		}
		remap()
		before := processCPU()
		b.StartTimer()
		if err := bs.reopen(cfg); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		cpu += processCPU() - before
		rep := bs.Recovery()
		if !rep.Abnormal || int64(rep.Redispatched) != n {
			b.Fatalf("recovery did not replay the backlog: %+v, want %d records", rep, n)
		}
		logEnd = rep.CommitLogEnd
		if err := bs.Close(); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
	b.StopTimer()
	ops := float64(b.N)
	perS := float64(n) * ops / b.Elapsed().Seconds()
	files, err := filepath.Glob(filepath.Join(dir, "commitlog", "*"))
	if err != nil {
		b.Fatal(err)
	}
	sort.Strings(files)
	before := processCPU()
	mapped, err := e.mappedBound(files, logEnd, n, 0, true)
	if err != nil {
		b.Fatal(err)
	}
	mappedCPU := (processCPU() - before) / 3 // mappedBound makes three passes
	pread, err := e.preadBound(files, logEnd, n, 256<<10)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(perS, "records/s")
	b.ReportMetric(cpu.Seconds()/ops, "cpu-s/op")
	b.ReportMetric(mapped.MsgsPerS, "mmap-bound-records/s")
	b.ReportMetric(mappedCPU.Seconds(), "mmap-bound-cpu-s/pass")
	b.ReportMetric(100*perS/mapped.MsgsPerS, "%-of-mmap-bound")
	b.ReportMetric(pread.MsgsPerS, "pread-bound-records/s")
	b.ReportMetric(100*perS/pread.MsgsPerS, "%-of-pread-bound")
}

// processCPU returns the user+system CPU time the process has used.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
