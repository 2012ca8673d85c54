package engine_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/rocketstore/rocketstore/backend/mmap"
	"github.com/rocketstore/rocketstore/engine"
	"github.com/rocketstore/rocketstore/internal/hooks"
)

// With the CRC checked beside the scan (files large enough for the helper
// to run), a flipped body byte deep in a file is still found: the damaged
// record is skipped and reported, every other record re-dispatched.
func TestRecoveryFindsBodyDamageWithCRCAhead(t *testing.T) {
	engine.ForEachRegionRead(t, func(t *testing.T) {
		const n = 40_000 // ~12 MiB of records: the CRC helper runs
		dir := t.TempDir()
		open := openManualMmap(t, dir, 16<<20, 1<<16)
		s, err := open(engine.Config{})
		if err != nil {
			t.Fatal(err)
		}
		m := &engine.Message{Topic: "crc", QueueID: 0, Body: make([]byte, 128), Properties: map[string]string{"TAGS": "T"}}
		var damaged engine.PutResult
		for i := range n {
			res, err := s.Put(context.Background(), m)
			if err != nil {
				t.Fatal(err)
			}
			if i == n*3/4 {
				damaged = res
			}
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		// Flip the last body byte of one record (its CRC no longer matches).
		flipCommitLogByte(t, dir, damaged.WroteOffset+int64(damaged.WroteBytes)-1-2-1-int64(len("crc"))-int64(len("TAGS\x01T")))
		engine.MarkCrashedKeepingCommitLog(t, dir)
		s, err = open(engine.Config{OnUndecidableDamage: engine.DamageSkip})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		rep := s.Recovery()
		if len(rep.Damaged) != 1 || rep.Damaged[0].Offset != damaged.WroteOffset {
			t.Fatalf("damaged ranges %+v, want the record at %d", rep.Damaged, damaged.WroteOffset)
		}
		if rep.Redispatched != n-1 {
			t.Fatalf("re-dispatched %d records, want %d (all but the damaged one)", rep.Redispatched, n-1)
		}
	})
}

// The parsers split the CommitLog into 512 KiB regions, read each through
// the mapping or with a pread of 64 KiB more (each forced in turn, and as
// they choose), and guess where each region's first record starts:
// records crossing the end of a region, records larger than the read (read
// whole) and than a region (so that regions hold no record start), and a
// flipped body byte in one of those are handled as the scan alone would:
// every intact record is re-dispatched at its own queue offset, the
// damaged one is reported and skipped.
func TestRecoveryReadAheadLargeRecords(t *testing.T) {
	engine.ForEachRegionRead(t, func(t *testing.T) {
		dir := t.TempDir()
		open := openManualMmap(t, dir, 32<<20, 1<<10)
		s, err := open(engine.Config{})
		if err != nil {
			t.Fatal(err)
		}
		sizes := []int{1000, 300 << 10, 77, 2 << 20, 5000, 256 << 10}
		var puts []engine.PutResult
		var logEnd int64
		for i := 0; logEnd < 24<<20; i++ {
			body := make([]byte, sizes[i%len(sizes)])
			for j := range body {
				body[j] = byte(i + j)
			}
			res, err := s.Put(context.Background(), &engine.Message{Topic: "big", QueueID: int32(i % 3), Body: body})
			if err != nil {
				t.Fatal(err)
			}
			puts = append(puts, res)
			logEnd = res.WroteOffset + int64(res.WroteBytes)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		// Flip a byte in the middle of the body of the 2 MiB record nearest
		// the middle of the log.
		var damaged engine.PutResult
		for _, p := range puts[len(puts)/2:] {
			if p.WroteBytes > 1<<20 {
				damaged = p
				break
			}
		}
		flipCommitLogByte(t, dir, damaged.WroteOffset+int64(damaged.WroteBytes)/2)
		engine.MarkCrashedKeepingCommitLog(t, dir)
		s, err = open(engine.Config{OnUndecidableDamage: engine.DamageSkip})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		rep := s.Recovery()
		if len(rep.Damaged) != 1 || rep.Damaged[0].Offset != damaged.WroteOffset {
			t.Fatalf("damaged ranges %+v, want the record at %d", rep.Damaged, damaged.WroteOffset)
		}
		if rep.Redispatched != len(puts)-1 || rep.CommitLogEnd != logEnd {
			t.Fatalf("re-dispatched %d records to %d, want %d to %d", rep.Redispatched, rep.CommitLogEnd, len(puts)-1, logEnd)
		}
		for i, p := range puts {
			if p == damaged {
				continue
			}
			r, err := s.GetMessage("big", int32(i%3), p.QueueOffset, 1, nil)
			if err != nil {
				t.Fatal(err)
			}
			if len(r.Messages) != 1 || r.Messages[0].CommitLogOffset != p.WroteOffset {
				t.Fatalf("queue %d offset %d: %+v, want the record at %d", i%3, p.QueueOffset, r.Messages, p.WroteOffset)
			}
			r.Release()
		}
	})
}

// flipCommitLogByte inverts the byte at offset at of the first CommitLog
// file of the closed store in dir.
func flipCommitLogByte(t *testing.T, dir string, at int64) {
	t.Helper()
	f, err := os.OpenFile(filepath.Join(dir, "commitlog", "00000000000000000000"), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var one [1]byte
	if _, err := f.ReadAt(one[:], at); err != nil {
		t.Fatal(err)
	}
	one[0] ^= 0xFF
	if _, err := f.WriteAt(one[:], at); err != nil {
		t.Fatal(err)
	}
}

// openManualMmap returns a function that opens the store in dir on the mmap
// backend with cfg, CommitLog files of fileSize bytes, ConsumeQueue files
// of units units and the background services off (hooks.Manual).
func openManualMmap(t *testing.T, dir string, fileSize, units int64) func(engine.Config) (*engine.Store, error) {
	return func(cfg engine.Config) (*engine.Store, error) {
		fs, err := mmap.New(dir)
		if err != nil {
			t.Fatal(err)
		}
		cfg.CommitLogFileSize, cfg.ConsumeQueueUnits = fileSize, units
		return engine.Open(fs, hooks.Manual(cfg))
	}
}
