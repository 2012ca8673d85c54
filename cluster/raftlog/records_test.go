package raftlog

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"

	"github.com/rocketstore/rocketstore/backend"
)

// fileRecords is a Records for the tests: one preallocated file of
// self-checking records (LENGTH uint32 | CRC uint32 | payload), whose end
// Open finds by scanning as the CommitLog's recovery does.
type fileRecords struct {
	f    backend.Segment
	end  int64
	gone int64 // bytes before gone are no longer kept
}

const testRecordsName = "records"

func openFileRecords(fsys backend.FS, size int64) (*fileRecords, error) {
	f, err := fsys.Open(testRecordsName)
	if errors.Is(err, backend.ErrNotExist) {
		if f, err = fsys.Create(testRecordsName, size); err == nil {
			err = fsys.SyncDir(".")
		}
	}
	if err != nil {
		return nil, err
	}
	r := &fileRecords{f: f}
	for {
		b := f.View(r.end, 8)
		if b == nil {
			break
		}
		n := int64(binary.BigEndian.Uint32(b))
		p := f.View(r.end+8, n)
		if n == 0 || p == nil || crc32.ChecksumIEEE(p) != binary.BigEndian.Uint32(b[4:]) {
			break
		}
		r.end += 8 + n
	}
	return r, nil
}

// testRecord encodes one record with payload p.
func testRecord(p []byte) []byte {
	b := binary.BigEndian.AppendUint32(nil, uint32(len(p)))
	b = binary.BigEndian.AppendUint32(b, crc32.ChecksumIEEE(p))
	return append(b, p...)
}

func (r *fileRecords) End() int64 { return r.end }

func (r *fileRecords) Append(b []byte, off int64) error {
	if off != r.end {
		return fmt.Errorf("records: append at %d, end %d", off, r.end)
	}
	if _, err := r.f.WriteAt(b, off); err != nil {
		return err
	}
	r.end += int64(len(b))
	return nil
}

func (r *fileRecords) ReadAt(b []byte, off int64) error {
	if off < r.gone {
		return fmt.Errorf("records at %d: %w", off, ErrGone)
	}
	if off+int64(len(b)) > r.end {
		return fmt.Errorf("records: read of %d at %d past the end %d", len(b), off, r.end)
	}
	copy(b, r.f.View(off, int64(len(b))))
	return nil
}

func (r *fileRecords) Sync() error { return r.f.Sync(0, r.end) }

func (r *fileRecords) Truncate(end int64) error {
	if n := r.end - end; n > 0 {
		if _, err := r.f.WriteAt(make([]byte, n), end); err != nil {
			return err
		}
		if err := r.f.Sync(end, n); err != nil {
			return err
		}
	}
	r.end = end
	return nil
}

func (r *fileRecords) Close() error { return r.f.Close() }
