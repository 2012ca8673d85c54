package rocketstore_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/spf13/afero"

	"github.com/rocketstore/rocketstore"
	"github.com/rocketstore/rocketstore/backend/memfs"
)

// TestStoreAPI drives the root API through a batch, the offsets, a
// filtered read, a reopen and the closed store.
func TestStoreAPI(t *testing.T) {
	disk := afero.NewMemMapFs()
	cfg := rocketstore.Config{CommitLogFileSize: 64 << 10, ConsumeQueueUnits: 64}
	s, err := rocketstore.OpenFS(memfs.New(disk), cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	var batch []*rocketstore.Message
	for i := range 4 {
		batch = append(batch, &rocketstore.Message{Topic: "t", QueueID: 1, Body: []byte(fmt.Sprint(i)),
			Properties: map[string]string{"TAGS": []string{"a", "b"}[i%2]}})
	}
	res, err := s.PutBatch(ctx, batch)
	if err != nil {
		t.Fatal(err)
	}
	if res.MsgNum != 4 || res.QueueOffset != 0 || res.Topic != "t" || res.QueueID != 1 {
		t.Fatalf("PutBatch = %+v", res)
	}
	end := res.WroteOffset + int64(res.WroteBytes)
	if err := s.WaitDispatched(ctx, end); err != nil {
		t.Fatal(err)
	}
	if got := s.MaxCommitLogOffset(); got != end {
		t.Errorf("MaxCommitLogOffset = %d, want %d", got, end)
	}
	if minQ, maxQ := s.MinOffsetInQueue("t", 1), s.MaxOffsetInQueue("t", 1); minQ != 0 || maxQ != 4 {
		t.Errorf("queue offsets [%d, %d), want [0, 4)", minQ, maxQ)
	}
	if off, err := s.CommitLogOffsetInQueue("t", 1, 0); err != nil || off != res.WroteOffset {
		t.Errorf("CommitLogOffsetInQueue = %d, %v; want %d", off, err, res.WroteOffset)
	}
	if _, err := s.CommitLogOffsetInQueue("t", 1, 4); !errors.Is(err, rocketstore.ErrNotFound) {
		t.Errorf("CommitLogOffsetInQueue past the end: %v, want ErrNotFound", err)
	}
	f, err := rocketstore.NewTagFilter("b")
	if err != nil {
		t.Fatal(err)
	}
	got, err := s.GetMessage("t", 1, 0, 32, rocketstore.WithFilter(f))
	if err != nil {
		t.Fatal(err)
	}
	var bodies []string
	for _, v := range got.Messages {
		m, err := rocketstore.DecodeMessage(v.Record)
		if err != nil {
			t.Fatal(err)
		}
		bodies = append(bodies, string(m.Body))
	}
	if got.Status != rocketstore.Found || got.NextBeginOffset != 4 || fmt.Sprint(bodies) != "[1 3]" {
		t.Errorf("filtered read: %s next %d bodies %v; want FOUND next 4 [1 3]", got.Status, got.NextBeginOffset, bodies)
	}
	got.Release()
	all, err := s.GetMessage("t", 1, 0, 32, rocketstore.WithFilter((*rocketstore.TagFilter)(nil)))
	if err != nil || len(all.Messages) != 4 {
		t.Errorf("read with a nil *TagFilter: %v; want the 4 messages", err)
	} else {
		all.Release()
	}
	if got, err := s.GetMessage("t", 1, 4, 32); err != nil || got.Status != rocketstore.OffsetOverflowOne {
		t.Errorf("read at the end: %v, %v; want OFFSET_OVERFLOW_ONE", got.Status, err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Put(ctx, batch[0]); !errors.Is(err, rocketstore.ErrClosed) {
		t.Errorf("Put after Close: %v, want ErrClosed", err)
	}

	s, err = rocketstore.OpenFS(memfs.New(disk), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if rec := s.Recovery(); rec.Abnormal || rec.CommitLogEnd != end {
		t.Errorf("recovery after a clean close: %+v, want normal up to %d", rec, end)
	}
	if h := s.Health(); !h.Writable {
		t.Errorf("Health after reopen: %+v", h)
	}
	if got := s.FlushedCommitLogOffset(); got != end {
		t.Errorf("FlushedCommitLogOffset after a clean close = %d, want %d", got, end)
	}
	if got := s.MinCommitLogOffset(); got != 0 {
		t.Errorf("MinCommitLogOffset = %d, want 0", got)
	}
	if rep, err := s.DeleteExpiredFiles(time.Now().Add(100*24*time.Hour), rocketstore.RetentionPolicy{}, true); err != nil || rep.CommitLogFiles != 0 {
		t.Errorf("DeleteExpiredFiles on one file: %+v, %v; want nothing deleted (never the last file)", rep, err)
	}
	if got := fmt.Sprint(s.Topics()); got != "map[t:[1]]" {
		t.Errorf("Topics = %s", got)
	}
	if err := s.DeleteTopic("t"); err != nil {
		t.Fatal(err)
	}
	if got := s.MaxOffsetInQueue("t", 1); got != 0 {
		t.Errorf("MaxOffsetInQueue after DeleteTopic = %d, want 0", got)
	}
	if c := s.Config(); c.CommitLogFileSize != 64<<10 || c.FlushDiskType != rocketstore.AsyncFlush {
		t.Errorf("Config: file size %d, %s", c.CommitLogFileSize, c.FlushDiskType)
	}
	if m, err := s.LookMessageByOffset(res.WroteOffset); err != nil || string(m.Body) != "0" || m.Tags() != "a" {
		t.Errorf("LookMessageByOffset: %v, %v", m, err)
	}
}
