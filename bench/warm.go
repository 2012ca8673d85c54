package bench

import (
	"os"

	"github.com/rocketstore/rocketstore/backend"
	"github.com/rocketstore/rocketstore/backend/mmap"
)

// maxWarmBytes caps the page cache warmPageCache cycles.
const maxWarmBytes = 1 << 30

// warmPageCache fills size bytes of page cache (a scratch file,
// write-populated through a mapping) and frees it again, so that the put
// that follows takes page-cache pages that were just in use, as its memcpy
// bound does (each bound pass follows the put's store or a previous pass,
// freed a moment before) and as a broker whose page cache is full does
// (new pages come from reclaimed ones).
//
// Without it the first put of a run took whatever the kernel had free. On
// a 2-core VM, page cache populated a second after other page cache
// was freed fills at 4-7 GB/s, and 8 s later at 0.3-0.7 GB/s (the free
// memory had been handed back to the host in the meantime; anonymous
// memory touched and freed does not help). 128 B puts write 456 MB/s at
// 2 M/s, so the same build swung from 0.6 to 2.5 M/s with how long the
// machine had been idle (BENCHMARKS.md, "The machine").
// The cost is paid before the clock starts and only matters for the
// first put of a run. Errors are ignored: the put then measures as
// before.
func (e env) warmPageCache(size int64) {
	size = min(roundUp(size, 4096), maxWarmBytes)
	if size <= 0 {
		return
	}
	dir, err := e.tempDir("warm")
	if err != nil {
		return
	}
	defer os.RemoveAll(dir)
	fs, err := mmap.New(dir)
	if err != nil {
		return
	}
	seg, err := fs.Create("warm", size)
	if err != nil {
		return
	}
	if p, ok := seg.(backend.WritePrefaulter); ok {
		_ = p.PrefaultWrite(0, size)
	}
	_ = seg.Close()
}
