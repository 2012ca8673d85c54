package bench

import (
	"context"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rocketstore/rocketstore/backend"
	"github.com/rocketstore/rocketstore/backend/mmap"
	"github.com/rocketstore/rocketstore/engine"
)

// The benchmarks here run on the mmap backend with async flush and
// RocketMQ's 1 GiB CommitLog files. Each workload's bound sits beside it
// and sets the same bytes per op, so the MB/s columns compare directly:
//
//	go test ./bench/ -run '^$' -bench . -benchtime 2s

var sizes = []int{128, 1024, 4096}

func benchEnv(b *testing.B) env {
	return env{spec: Spec{CommitLogFileSize: 1 << 30}, dir: b.TempDir()}
}

func openBench(b *testing.B, flush engine.FlushDiskType) *benchStore {
	b.Helper()
	e := benchEnv(b)
	bs, err := e.openStore(Mmap, e.storeConfig(flush))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		if err := bs.remove(); err != nil {
			b.Error(err)
		}
	})
	return bs
}

// recordSize returns the CommitLog record size of a benchmark message with
// a body of n bytes, storing it in bs.
func recordSize(b *testing.B, bs *benchStore, queue, n int) int {
	res, err := bs.Put(context.Background(), newMessage(queue, n))
	if err != nil {
		b.Fatal(err)
	}
	return int(res.WroteBytes)
}

// BenchmarkPut stores messages from 1 or 4 goroutines, each on its own
// queue.
func BenchmarkPut(b *testing.B) {
	for _, n := range sizes {
		for _, g := range []int{1, 4} {
			b.Run(fmt.Sprintf("%s/%d", SizeName(n), g), func(b *testing.B) {
				bs := openBench(b, engine.AsyncFlush)
				var queue atomic.Int32
				for q := 0; q < g; q++ {
					b.SetBytes(int64(recordSize(b, bs, q, n)))
				}
				b.ReportAllocs()
				b.ResetTimer()
				if g == 1 {
					m := newMessage(0, n)
					for b.Loop() {
						if _, err := bs.Put(context.Background(), m); err != nil {
							b.Fatal(err)
						}
					}
					return
				}
				b.SetParallelism((g + 1) / 2) // GOMAXPROCS × this goroutines
				b.RunParallel(func(pb *testing.PB) {
					m := newMessage(int(queue.Add(1)-1)%g, n)
					for pb.Next() {
						if _, err := bs.Put(context.Background(), m); err != nil {
							b.Error(err)
							return
						}
					}
				})
			})
		}
	}
}

// BenchmarkPutMapProperties is Put/128B/1 with the properties in a map, as a
// library user may set them (the store encodes them sorted on every put).
func BenchmarkPutMapProperties(b *testing.B) {
	bs := openBench(b, engine.AsyncFlush)
	m := newMessage(0, 128)
	m.EncodedProperties, m.Properties = nil, props
	b.SetBytes(int64(recordSize(b, bs, 0, 128)))
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if _, err := bs.Put(context.Background(), m); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkMemcpyBaseline copies records of the same size as BenchmarkPut's
// into fresh preallocated mapped files (page faults included): the bound
// for an async put. No store is open meanwhile.
func BenchmarkMemcpyBaseline(b *testing.B) { benchMemcpy(b, false) }

// BenchmarkMemcpyPrefaultedBaseline is BenchmarkMemcpyBaseline into files
// whose pages were write-populated before the clock runs: the physical
// limit of an async put.
func BenchmarkMemcpyPrefaultedBaseline(b *testing.B) { benchMemcpy(b, true) }

func benchMemcpy(b *testing.B, prefaulted bool) {
	for _, n := range sizes {
		b.Run(SizeName(n), func(b *testing.B) {
			rec := make([]byte, RecordSize(n))
			fs, err := mmap.New(b.TempDir())
			if err != nil {
				b.Fatal(err)
			}
			const size = 256 << 20
			var seg backend.Segment
			var off int64
			files := 0
			b.Cleanup(func() {
				if seg != nil {
					seg.Close()
				}
			})
			b.SetBytes(int64(len(rec)))
			b.ResetTimer()
			for b.Loop() {
				if seg == nil || off+int64(len(rec)) > size {
					b.StopTimer()
					if seg != nil {
						seg.Close()
						fs.Remove(seg.Name())
					}
					if seg, err = fs.Create(fmt.Sprintf("%020d", files), size); err != nil {
						b.Fatal(err)
					}
					if prefaulted {
						if err := seg.(backend.WritePrefaulter).PrefaultWrite(0, size); err != nil {
							b.Fatal(err)
						}
					}
					files++
					off = 0
					b.StartTimer()
				}
				seg.WriteAt(rec, off)
				off += int64(len(rec))
			}
		})
	}
}

// BenchmarkGet reads a 1 KiB-body backlog with GetMessage, 32 messages a
// call, touching every record (CRC32 of it, as a consumer checking it
// would); BenchmarkReadCRCBaseline is its bound.
func BenchmarkGet(b *testing.B) {
	const backlog = 100_000
	bs := openBench(b, engine.AsyncFlush)
	rec := recordSize(b, bs, 0, 1024)
	m := newMessage(0, 1024)
	var end int64
	for i := 1; i < backlog; i++ {
		res, err := bs.Put(context.Background(), m)
		if err != nil {
			b.Fatal(err)
		}
		end = res.WroteOffset + int64(res.WroteBytes)
	}
	if err := bs.WaitDispatched(context.Background(), end); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(32 * rec))
	b.ReportAllocs()
	b.ResetTimer()
	var off int64
	var crc uint32
	for b.Loop() {
		r, err := bs.GetMessage(Topic, 0, off, 32, nil)
		if err != nil || r.Status != engine.Found {
			b.Fatal(err, r.Status)
		}
		for _, v := range r.Messages {
			crc = crc32.Update(crc, crc32.IEEETable, v.Record)
		}
		off = r.NextBeginOffset
		if off+32 > backlog {
			off = 0
		}
		r.Release()
	}
}

// BenchmarkReadCRCBaseline is the bound of BenchmarkGet: sequential
// pread(2) of the same bytes per op (32 records of a 1 KiB body) from a
// file in the page cache, and their CRC32. No store is open meanwhile.
func BenchmarkReadCRCBaseline(b *testing.B) {
	const fileSize = 128 << 20
	chunk := make([]byte, 32*RecordSize(1024))
	f, err := os.Create(filepath.Join(b.TempDir(), "data"))
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteAt(make([]byte, fileSize), 0); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(chunk)))
	b.ResetTimer()
	var off int64
	var crc uint32
	for b.Loop() {
		if off+int64(len(chunk)) > fileSize {
			off = 0
		}
		n, err := f.ReadAt(chunk, off)
		if err != nil {
			b.Fatal(err)
		}
		crc = crc32.Update(crc, crc32.IEEETable, chunk[:n])
		off += int64(n)
	}
}

// BenchmarkDispatchLag measures put returned → ConsumeQueue-visible, one
// message at a time, and reports its p99.
func BenchmarkDispatchLag(b *testing.B) {
	bs := openBench(b, engine.AsyncFlush)
	recordSize(b, bs, 0, 1024)
	m := newMessage(0, 1024)
	h := NewHistogram()
	ctx := context.Background()
	for b.Loop() {
		res, err := bs.Put(ctx, m)
		if err != nil {
			b.Fatal(err)
		}
		t0 := time.Now()
		if err := bs.WaitDispatched(ctx, res.WroteOffset+int64(res.WroteBytes)); err != nil {
			b.Fatal(err)
		}
		h.Record(time.Since(t0))
	}
	l := h.Latency()
	b.ReportMetric(l.P99, "p99-µs")
	b.ReportMetric(l.P50, "p50-µs")
}
