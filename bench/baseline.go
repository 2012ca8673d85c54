package bench

import (
	"fmt"
	"hash/crc32"
	"os"
	"time"

	"golang.org/x/sys/unix"

	"github.com/rocketstore/rocketstore/backend"
	"github.com/rocketstore/rocketstore/backend/mmap"
)

// memcpyBound copies n records of recSize bytes, back to back, into a fresh
// preallocated mapped file (mmap; page faults of first touch included) or a
// fresh heap buffer (memfs): the bound for an async put, which does that
// copy plus encoding, locking and bookkeeping. With prefaulted (mmap only)
// the file's pages are write-populated before the clock starts, so that
// only the copy is timed: the physical limit.
func (e env) memcpyBound(backendName string, recSize, n int, prefaulted bool) (Bound, error) {
	size := roundUp(int64(recSize)*int64(n), 4096)
	rec := make([]byte, recSize)
	for i := range rec {
		rec[i] = byte(i)
	}
	var elapsed time.Duration
	switch backendName {
	case Mmap:
		dir, err := e.tempDir("memcpy")
		if err != nil {
			return Bound{}, err
		}
		defer os.RemoveAll(dir)
		fs, err := mmap.New(dir)
		if err != nil {
			return Bound{}, err
		}
		seg, err := fs.Create("memcpy", size)
		if err != nil {
			return Bound{}, err
		}
		if prefaulted {
			if err := seg.(backend.WritePrefaulter).PrefaultWrite(0, size); err != nil {
				seg.Close()
				return Bound{}, err
			}
		}
		start := time.Now()
		off := int64(0)
		for i := 0; i < n; i++ {
			if _, err := seg.WriteAt(rec, off); err != nil {
				seg.Close()
				return Bound{}, err
			}
			off += int64(recSize)
		}
		elapsed = time.Since(start)
		if err := seg.Close(); err != nil {
			return Bound{}, err
		}
	default:
		buf := make([]byte, size) // untouched until the copy
		start := time.Now()
		for off := 0; off+recSize <= len(buf); off += recSize {
			copy(buf[off:], rec)
		}
		elapsed = time.Since(start)
	}
	name := "memcpy → fresh mapped file"
	if prefaulted {
		name = "memcpy → write-prefaulted mapping"
	}
	if backendName != Mmap {
		name = "memcpy → fresh heap buffer"
	}
	return boundOf(name, int64(n), int64(n)*int64(recSize), elapsed), nil
}

// mappedBound maps files read-only and, best of three passes, up to limit
// bytes in all, either copies them out in chunks of chunk bytes (the bound
// for catch-up reads, which copy records out of the store's mapping) or
// computes the CRC32 of every byte (the bound for recovery, which reads
// the files and CRC-checks every record). It maps the files afresh for
// every pass, inside the timed part: a mapping's page tables are filled on
// first touch (minor faults), which recovery pays (Open maps the files)
// and so does a catch-up read (the async flush drops the page-table
// entries of the pages it syncs, and the backlog is read after its flush),
// and which a pass over an already-touched mapping would not.
func (e env) mappedBound(paths []string, limit, msgs int64, chunk int, crc bool) (Bound, error) {
	var maps [][]byte
	unmap := func() {
		for _, m := range maps {
			_ = unix.Munmap(m[:cap(m)])
		}
		maps = maps[:0]
	}
	defer unmap()
	var total int64
	mapAll := func() error {
		total = 0
		for _, p := range paths {
			if total >= limit {
				break
			}
			f, err := os.Open(p)
			if err != nil {
				return err
			}
			fi, err := f.Stat()
			if err != nil || fi.Size() == 0 {
				f.Close()
				continue
			}
			m, err := unix.Mmap(int(f.Fd()), 0, int(fi.Size()), unix.PROT_READ, unix.MAP_SHARED)
			f.Close()
			if err != nil {
				return fmt.Errorf("mmap %s: %w", p, err)
			}
			n := min(int64(len(m)), limit-total)
			maps = append(maps, m[:n])
			total += n
		}
		return nil
	}
	buf := make([]byte, chunk)
	var sum uint32
	// The best of three passes: the first also reads the pages into the
	// page cache if they were not (the store's are).
	elapsed := time.Duration(1<<63 - 1)
	for range 3 {
		unmap()
		start := time.Now()
		if err := mapAll(); err != nil {
			return Bound{}, err
		}
		for _, m := range maps {
			if crc {
				sum = crc32.Update(sum, crc32.IEEETable, m)
				continue
			}
			for off := 0; off < len(m); off += chunk {
				copy(buf, m[off:])
			}
		}
		elapsed = min(elapsed, time.Since(start))
	}
	_ = sum
	if crc {
		return boundOf("mmap (fresh mapping) read+CRC32 of the same bytes", msgs, total, elapsed), nil
	}
	return boundOf(fmt.Sprintf("copy out of a fresh mapping, %s chunks", byteSize(chunk)), msgs, total, elapsed), nil
}

// preadBound reads up to limit bytes of paths with pread, chunk bytes at a
// time into one reused buffer, and computes the CRC32 of every byte, best
// of three passes: the bound for recovery as it reads the CommitLog (the
// parse helper preads it in chunks of that size). Unlike a fresh mapping it
// pays no fault per page, only the copy out of the page cache.
func (e env) preadBound(paths []string, limit, msgs int64, chunk int) (Bound, error) {
	buf := make([]byte, chunk)
	var sum uint32
	var total int64
	elapsed := time.Duration(1<<63 - 1)
	for range 3 {
		start := time.Now()
		total = 0
		for _, p := range paths {
			if total >= limit {
				break
			}
			f, err := os.Open(p)
			if err != nil {
				return Bound{}, err
			}
			fi, err := f.Stat()
			if err != nil {
				f.Close()
				return Bound{}, err
			}
			end := min(fi.Size(), limit-total)
			for off := int64(0); off < end; off += int64(chunk) {
				n, err := f.ReadAt(buf[:min(int64(chunk), end-off)], off)
				if err != nil {
					f.Close()
					return Bound{}, fmt.Errorf("pread %s at %d: %w", p, off, err)
				}
				sum = crc32.Update(sum, crc32.IEEETable, buf[:n])
			}
			f.Close()
			total += end
		}
		elapsed = min(elapsed, time.Since(start))
	}
	_ = sum
	return boundOf(fmt.Sprintf("pread (%s chunks)+CRC32 of the same bytes", byteSize(chunk)), msgs, total, elapsed), nil
}

func boundOf(name string, msgs, bytes int64, d time.Duration) Bound {
	s := d.Seconds()
	if s <= 0 {
		s = 1e-9
	}
	return Bound{Name: name, MsgsPerS: float64(msgs) / s, MBPerS: float64(bytes) / s / 1e6}
}

func roundUp(n, to int64) int64 { return (n + to - 1) / to * to }

func byteSize(n int) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}
