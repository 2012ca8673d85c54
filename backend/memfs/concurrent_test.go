package memfs_test

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/rocketstore/rocketstore/backend/memfs"
)

// TestConcurrentWriteSyncView runs the engine's access pattern under -race:
// one appender publishing its write position atomically, a flusher syncing
// up to it, and a reader viewing below it. Records are written with several
// WriteAt calls each and straddle pages, so Sync copies pages that the
// appender is still writing.
func TestConcurrentWriteSyncView(t *testing.T) {
	const segSize = 64 * memfs.PageSize
	f := memfs.New(nil)
	seg := create(t, f, "commitlog", segSize)

	var wrote atomic.Int64 // published: every byte below it is in place
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(2)
	errs := make(chan error, 2)

	go func() { // flusher
		defer wg.Done()
		for {
			select {
			case <-done:
				return
			default:
			}
			if err := seg.Sync(0, wrote.Load()); err != nil {
				errs <- err
				return
			}
		}
	}()
	go func() { // reader
		defer wg.Done()
		for {
			select {
			case <-done:
				return
			default:
			}
			pos := wrote.Load()
			if err := checkRecords(seg.View(0, pos)); err != nil {
				errs <- err
				return
			}
		}
	}()

	var off int64
	for i := 0; ; i++ {
		body := bytes.Repeat([]byte{byte(i) | 1}, 100+i%300)
		if off+4+int64(len(body)) > segSize {
			break
		}
		var hdr [4]byte
		binary.BigEndian.PutUint32(hdr[:], uint32(len(body)))
		write(t, seg, hdr[:], off)
		write(t, seg, body, off+4)
		off += 4 + int64(len(body))
		wrote.Store(off)
	}
	close(done)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}

	must(t, seg.Sync(0, off))
	after := content(t, powerCut(f), "commitlog")
	if err := checkRecords(after[:off]); err != nil {
		t.Fatalf("after the cut: %v", err)
	}
	must(t, seg.Close())
}

// checkRecords verifies a run of records [len uint32][len bytes, all equal].
func checkRecords(b []byte) error {
	for off := 0; off < len(b); {
		n := int(binary.BigEndian.Uint32(b[off:]))
		body := b[off+4 : off+4+n]
		if len(bytes.Trim(body, string(body[:1]))) != 0 || body[0] == 0 {
			return fmt.Errorf("record at %d is torn", off)
		}
		off += 4 + n
	}
	return nil
}
