package broker_test

import (
	"context"
	"io"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/spf13/afero"
	"go.uber.org/goleak"

	"github.com/rocketstore/rocketstore/backend/memfs"
	"github.com/rocketstore/rocketstore/broker"
	"github.com/rocketstore/rocketstore/broker/config"
	"github.com/rocketstore/rocketstore/broker/index"
	"github.com/rocketstore/rocketstore/engine"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

func testConfig() broker.Config {
	return broker.Config{
		Store: engine.Config{CommitLogFileSize: 64 << 10, ConsumeQueueUnits: 64, Logger: quiet,
			DelayLevels: []time.Duration{50 * time.Millisecond, 100 * time.Millisecond, 150 * time.Millisecond,
				200 * time.Millisecond, 250 * time.Millisecond}},
		Index: index.Config{MaxHashSlotNum: 16, MaxIndexNum: 32},
	}
}

func open(t testing.TB, fs *memfs.FS, cfg broker.Config) *broker.Broker {
	t.Helper()
	b, err := broker.Open(fs, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// crashCopy returns a new FS holding only the durable image of fs: the
// state a power cut would leave. The old FS stays usable (and is closed by
// the caller) without touching the copy.
func crashCopy(t testing.TB, fs *memfs.FS) *memfs.FS {
	t.Helper()
	src, dst := fs.Afero(), afero.NewMemMapFs()
	err := afero.Walk(src, ".", func(p string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		if info.IsDir() {
			return dst.MkdirAll(p, 0o755)
		}
		data, err := afero.ReadFile(src, p)
		if os.IsNotExist(err) {
			return nil
		}
		if err != nil {
			return err
		}
		return afero.WriteFile(dst, p, data, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	return memfs.New(dst)
}

func createTopic(t testing.TB, b *broker.Broker, name string, queues int) {
	t.Helper()
	tc := config.NewTopicConfig(name)
	tc.ReadQueueNums, tc.WriteQueueNums = queues, queues
	if err := b.Topics().Update(tc); err != nil {
		t.Fatal(err)
	}
}

// put stores a message and waits until it is dispatched.
func put(t testing.TB, b *broker.Broker, m *engine.Message) engine.PutResult {
	t.Helper()
	ctx := context.Background()
	r, err := b.Store().Put(ctx, m)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Store().WaitDispatched(ctx, r.WroteOffset+int64(r.WroteBytes)); err != nil {
		t.Fatal(err)
	}
	return r
}

func msg(topic string, qid int32, tag, keys string) *engine.Message {
	p := map[string]string{}
	if tag != "" {
		p["TAGS"] = tag
	}
	if keys != "" {
		p["KEYS"] = keys
	}
	return &engine.Message{Topic: topic, QueueID: qid, Body: []byte("body-" + tag + "-" + keys), Properties: p}
}

func pullReq(group, topic string, qid int32, off int64) *broker.PullRequest {
	return &broker.PullRequest{ConsumerGroup: group, Topic: topic, QueueID: qid, QueueOffset: off, MaxMsgNums: 32,
		SysFlag: broker.FlagSubscription, Subscription: "*", ExpressionType: "TAG", SuspendTimeoutMillis: 15000}
}
