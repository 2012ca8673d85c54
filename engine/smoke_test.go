package engine_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/rocketstore/rocketstore/backend/memfs"
	"github.com/rocketstore/rocketstore/engine"
	"github.com/rocketstore/rocketstore/filter"
)

func TestSmoke(t *testing.T) {
	fs := memfs.New(nil)
	cfg := engine.Config{CommitLogFileSize: 4096, ConsumeQueueUnits: 10}
	s, err := engine.Open(fs, cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	var last engine.PutResult
	for i := 0; i < 100; i++ {
		tag := "A"
		if i%2 == 1 {
			tag = "B"
		}
		last, err = s.Put(ctx, &engine.Message{Topic: "t", QueueID: int32(i % 2), Body: []byte(fmt.Sprint("hello ", i)),
			Properties: map[string]string{"TAGS": tag, "KEYS": fmt.Sprint("k", i)}})
		if err != nil {
			t.Fatal(i, err)
		}
	}
	if err := s.WaitDispatched(ctx, last.WroteOffset+int64(last.WroteBytes)); err != nil {
		t.Fatal(err)
	}
	f, _ := filter.NewTagFilter("A")
	r, err := s.GetMessage("g", "t", 0, 0, 32, f)
	if err != nil {
		t.Fatal(err)
	}
	t.Log(r.Status, r.NextBeginOffset, len(r.Messages), r.MaxOffset)
	r.Release()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s, err = engine.Open(fs, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%+v", s.Recovery())
	r, _ = s.GetMessage("g", "t", 1, 0, 64, nil)
	t.Log(r.Status, r.NextBeginOffset, len(r.Messages), r.MaxOffset)
	r.Release()
	s.Close()
	// crash: new memfs on same afero without close
	s, _ = engine.Open(fs, cfg)
	for i := 0; i < 10; i++ {
		s.Put(ctx, &engine.Message{Topic: "t", QueueID: 0, Body: []byte("x")})
	}
	s2, err := engine.Open(memfs.New(fs.Afero()), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%+v", s2.Recovery())
	t.Log(s2.MaxOffsetInQueue("t", 0))
	s2.Close()
	s.Close()
}
