package broker_test

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/rocketstore/rocketstore/backend/mmap"
	"github.com/rocketstore/rocketstore/broker"
	"github.com/rocketstore/rocketstore/engine"
)

// A pull with Views gets the same records as a copying pull, as views of
// the store. On the mmap backend they stay readable after retention
// deletes their CommitLog file, until Release (which a server calls once
// the answer is written); Release is safe to call twice.
func TestPullViewsOutliveRetention(t *testing.T) {
	fs, err := mmap.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	b, err := broker.Open(fs, testConfig()) // 64 KiB CommitLog files
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	createTopic(t, b, "T", 1)
	for range 150 { // about 58 records a file: three files
		m := msg("T", 0, "A", "")
		m.Body = bytes.Repeat([]byte("v"), 1000)
		put(t, b, m)
	}
	ctx := context.Background()
	copied, err := b.Pull(ctx, pullReq("g", "T", 0, 0))
	if err != nil || copied.Code != broker.Success || copied.Records != nil || len(copied.Body) == 0 {
		t.Fatalf("copying pull: %+v %v", copied, err)
	}
	r := pullReq("g", "T", 0, 0)
	r.Views = true
	viewed, err := b.Pull(ctx, r)
	if err != nil || viewed.Code != broker.Success || viewed.Body != nil || len(viewed.Records) != copied.MsgCount {
		t.Fatalf("pull with views: %+v %v", viewed, err)
	}
	records := viewed.Records
	if got := bytes.Join(records, nil); !bytes.Equal(got, copied.Body) {
		t.Fatal("views differ from the copied body")
	}
	rep, err := b.Store().DeleteExpiredFiles(time.Now(), engine.RetentionPolicy{}, true)
	if err != nil || rep.MinOffset == 0 {
		t.Fatalf("retention: %+v %v", rep, err)
	}
	if got := bytes.Join(records, nil); !bytes.Equal(got, copied.Body) {
		t.Fatal("views changed after their file was deleted")
	}
	viewed.Release()
	viewed.Release()
	if viewed.Records != nil {
		t.Fatal("Records kept after Release")
	}
}
