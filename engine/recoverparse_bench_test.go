package engine

import (
	"context"
	"testing"

	"github.com/rocketstore/rocketstore/backend/mmap"
)

// BenchmarkRecoveryParseRegion times the parsers' per-record work apart
// from memory: the records of a 4 MiB CommitLog region (1 KiB bodies, the
// bench's properties) checked again and again while they stay in the
// cache, with and without the CRC; and the scan's dispatch of them
// (ConsumeQueue units staged, as in recovery).
//
//	go test ./engine -run '^$' -bench RecoveryParseRegion
func BenchmarkRecoveryParseRegion(b *testing.B) {
	fs, err := mmap.New(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	cfg := Config{CommitLogFileSize: 8 << 20, ConsumeQueueUnits: 1 << 16}
	cfg.hooks.Manual = true
	s, err := Open(fs, cfg)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	m := &Message{Topic: "bench", Body: make([]byte, 1024), Properties: map[string]string{"TAGS": "TagA", "KEYS": "k1", "UNIQ_KEY": "0A0B0C0D0E0F10111213141516171819"}}
	var end int64
	for end < 4<<20 {
		res, err := s.Put(context.Background(), m)
		if err != nil {
			b.Fatal(err)
		}
		end = res.WroteOffset + int64(res.WroteBytes)
	}
	mf := s.commitLog.q.snapshot()[0]
	v := regionView{b: mf.seg.View(0, mf.fileSize)}
	batch := &parsedBatch{end: end, reqs: make([]dispatchRequest, 0, 8192)}
	for _, crc := range []bool{false, true} {
		name := map[bool]string{false: "nocrc", true: "crc"}[crc]
		b.Run(name, func(b *testing.B) {
			n := 0
			for b.Loop() {
				batch.reqs, batch.same, batch.stopped = batch.reqs[:0], batch.same[:0], false
				s.parseRegion(nil, mf, v, batch, crc)
				if batch.stopped {
					b.Fatal("stopped")
				}
				n += len(batch.reqs)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(n), "ns/record")
		})
	}
	b.Run("dispatch", func(b *testing.B) {
		// The same records again and again, moved along the log and
		// their queue each time, into staged queues as in recovery.
		batch.reqs, batch.same = batch.reqs[:0], batch.same[:0]
		s.parseRegion(nil, mf, v, batch, false)
		reqs := batch.reqs
		units := int64(len(reqs))
		s.beginUnitStaging()
		defer s.endUnitStaging()
		n := 0
		for k := int64(1); b.Loop(); k++ {
			for i := range reqs {
				reqs[i].CommitLogOffset += end
				reqs[i].ConsumeQueueOffset += units
			}
			if _, err := s.dispatchRecovered(reqs, batch.same); err != nil {
				b.Fatal(err)
			}
			n += len(reqs)
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(n), "ns/record")
	})
}
