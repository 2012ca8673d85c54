package mmap

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/rocketstore/rocketstore/backend"
)

// BenchmarkFlushMappedWrites is one round of an async flush: 4 MiB (about
// 0.2 s of 128 B messages at 100 k/s; a ConsumeQueue's round is nearer
// the 64 KiB case) copied into the mapping, then synced,
// with the mapping dropped first (release) or not (msync). A goroutine of
// the process keeps the other cores busy meanwhile, as a server's do, so
// that write-protecting a page needs a TLB shootdown there. Reported per
// round: wall time (ns/op) and the flushing thread's CPU (cpu-ms/op), the
// copy excluded.
func BenchmarkFlushMappedWrites(b *testing.B) {
	for _, round := range []int64{64 << 10, 4 << 20} {
		for _, release := range []bool{false, true} {
			name := fmt.Sprintf("%dKiB/msync", round>>10)
			if release {
				name = fmt.Sprintf("%dKiB/release+msync", round>>10)
			}
			b.Run(name, func(b *testing.B) { benchFlushMappedWrites(b, round, release) })
		}
	}
}

func benchFlushMappedWrites(b *testing.B, round int64, release bool) {
	const size = 256 << 20
	fsys := newFS(b)
	src := make([]byte, round)
	for i := range src {
		src[i] = byte(i)
	}
	var stop atomic.Bool
	var wg sync.WaitGroup
	for range runtime.GOMAXPROCS(0) - 1 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() {
				runtime.Gosched()
			}
		}()
	}
	defer func() { stop.Store(true); wg.Wait() }()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var seg *segment
	var cur backend.Segment // seg as nextSegment takes it (nil at first)
	var off int64
	files := 0
	b.Cleanup(func() {
		if seg != nil {
			_ = seg.Close()
		}
	})
	var cpu int64
	for b.Loop() {
		b.StopTimer()
		if seg == nil || off+round > size {
			cur = nextSegment(b, fsys, cur, files, size)
			seg = cur.(*segment)
			files++
			off = 0
		}
		if err := seg.PrefaultWrite(off, round); err != nil {
			b.Skipf("no MADV_POPULATE_WRITE: %v", err)
		}
		copy(seg.data[off:], src)
		c0 := threadCPUNanos()
		b.StartTimer()
		if release {
			if err := seg.ReleasePages(off, round); err != nil {
				b.Fatal(err)
			}
		}
		if err := seg.Sync(off, round); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		cpu += threadCPUNanos() - c0
		off += round
		b.StartTimer()
	}
	b.ReportMetric(float64(cpu)/1e6/float64(b.N), "cpu-ms/op")
}

func threadCPUNanos() int64 {
	var ru unix.Rusage
	_ = unix.Getrusage(unix.RUSAGE_THREAD, &ru)
	return ru.Utime.Nano() + ru.Stime.Nano()
}
