package engine

import (
	"context"
	"math"
	"testing"

	"github.com/rocketstore/rocketstore/backend/mmap"
	"github.com/rocketstore/rocketstore/internal/hooks"
)

// BenchmarkRecoveryCRCAhead times abnormal recovery of a 64 MiB CommitLog
// (1 KiB bodies) with the records parsed by a helper beside the walk, which
// checks the CRCs and dispatches (ahead), and by the walk alone (inline),
// alternately in one run:
//
//	go test ./engine -run '^$' -bench RecoveryCRCAhead -count 3
func BenchmarkRecoveryCRCAhead(b *testing.B) {
	dir := b.TempDir()
	cfg := hooks.Manual(Config{CommitLogFileSize: 64 << 20, ConsumeQueueUnits: 1 << 17})
	fs, err := mmap.New(dir)
	if err != nil {
		b.Fatal(err)
	}
	s, err := Open(fs, cfg)
	if err != nil {
		b.Fatal(err)
	}
	m := &Message{Topic: "bench", Body: make([]byte, 1024), Properties: map[string]string{"TAGS": "TagA"}}
	var logBytes int64
	for logBytes < 60<<20 {
		res, err := s.Put(context.Background(), m)
		if err != nil {
			b.Fatal(err)
		}
		logBytes = res.WroteOffset + int64(res.WroteBytes)
	}
	if err := s.Close(); err != nil {
		b.Fatal(err)
	}
	for _, mode := range []struct {
		name string
		min  int64
	}{{"ahead", 4 << 20}, {"inline", math.MaxInt64}} {
		b.Run(mode.name, func(b *testing.B) {
			old := minParseAheadBytes
			minParseAheadBytes = mode.min
			defer func() { minParseAheadBytes = old }()
			b.SetBytes(logBytes)
			for b.Loop() {
				b.StopTimer()
				MarkCrashedKeepingCommitLog(b, dir)
				fs, err := mmap.New(dir)
				if err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				s, err := Open(fs, cfg)
				if err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				if !s.Recovery().Abnormal {
					b.Fatalf("recovery %+v is not abnormal", s.Recovery())
				}
				if err := s.Close(); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
			}
		})
	}
}
