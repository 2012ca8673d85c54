package proptest

import (
	"context"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/rocketstore/rocketstore/internal/brokerops"
	"github.com/rocketstore/rocketstore/internal/engineops"

	"github.com/spf13/afero"
	"pgregory.net/rapid"

	"github.com/rocketstore/rocketstore/backend/memfs"
	"github.com/rocketstore/rocketstore/broker"
	"github.com/rocketstore/rocketstore/broker/config"
	"github.com/rocketstore/rocketstore/broker/index"
	"github.com/rocketstore/rocketstore/broker/timer"
	"github.com/rocketstore/rocketstore/engine"
	"github.com/rocketstore/rocketstore/internal/hooks"
	"github.com/rocketstore/rocketstore/record"
)

// p7 is the state machine of TestP7OffsetsAcrossPowerCuts: a Manual broker
// (no background goroutine; time is a fake clock) driven by random
// commits, persists, puts, delayed puts, deliveries and power cuts.
type p7 struct {
	afs   afero.Fs
	clock *clockwork.FakeClock
	b     *broker.Broker
	cfg   broker.Config

	// persisted is the consumer offset table as last persisted.
	persisted map[string]map[int32]int64
	// delayed are the keys of delayed puts, in put order; durable how
	// many of them were synced (a flush or a delay-offset persist).
	delayed []string
	durable int
	// lost are delayed keys a power cut lost; next names new keys.
	lost []string
	next int
}

const p7Queues = 2

func (m *p7) open(t *rapid.T) {
	b, err := broker.Open(memfs.New(m.afs), m.cfg)
	if err != nil {
		t.Fatal(err)
	}
	m.b = b
	if _, ok := b.Topics().Get("T"); !ok {
		tc := config.NewTopicConfig("T")
		tc.ReadQueueNums, tc.WriteQueueNums = p7Queues, p7Queues
		if err := b.Topics().Update(tc); err != nil {
			t.Fatal(err)
		}
	}
}

func (m *p7) init(t *rapid.T) {
	m.afs = afero.NewMemMapFs()
	m.clock = clockwork.NewFakeClockAt(time.UnixMilli(1_700_000_000_000))
	m.cfg = broker.Config{
		Store: engine.Config{CommitLogFileSize: 64 << 10, ConsumeQueueUnits: 64,
			Logger: slog.New(slog.NewTextHandler(io.Discard, nil))},
		Index: index.Config{MaxHashSlotNum: 16, MaxIndexNum: 32},
		// A small timer wheel: the default (3 days of 1 s slots, 16 MiB)
		// is read in whole at every open of the memory file system, and
		// P7 opens the broker at every power cut.
		Timer: timer.Config{MaxDelay: time.Minute},
	}
	hooks.EngineOf(&m.cfg.Store).Manual = true
	m.cfg.Store.Clock = m.clock
	m.cfg.Store.DelayLevels = []time.Duration{time.Second, 3 * time.Second}
	m.persisted = map[string]map[int32]int64{}
	m.open(t)
}

func (m *p7) put(t *rapid.T) {
	q := rapid.Int32Range(0, p7Queues-1).Draw(t, "queue")
	if _, err := m.b.Store().Put(context.Background(), p7Msg(q, "")); err != nil {
		t.Fatal(err)
	}
	engineops.Of(m.b.Store()).Dispatch()
}

func (m *p7) putDelayed(t *rapid.T) {
	key := "d" + strconv.Itoa(m.next)
	m.next++
	mm := p7Msg(0, key)
	mm.Properties[record.PropertyDelayTimeLevel] = strconv.Itoa(rapid.IntRange(1, 2).Draw(t, "level"))
	if _, err := m.b.Store().Put(context.Background(), mm); err != nil {
		t.Fatal(err)
	}
	engineops.Of(m.b.Store()).Dispatch()
	m.delayed = append(m.delayed, key)
}

func (m *p7) commit(t *rapid.T) {
	q := rapid.Int32Range(0, p7Queues-1).Draw(t, "queue")
	group := rapid.SampledFrom([]string{"g1", "g2"}).Draw(t, "group")
	hi := m.b.Store().MaxOffsetInQueue("T", q)
	off := rapid.Int64Range(0, hi+2).Draw(t, "offset") // may pass the max
	m.b.UpdateConsumerOffset("h", group, "T", q, off)
}

func (m *p7) persistConsumer(t *rapid.T) {
	if err := m.b.PersistConsumerOffsets(); err != nil {
		t.Fatal(err)
	}
	m.persisted = m.b.Offsets().Table()
}

func (m *p7) persistDelay(t *rapid.T) {
	if err := m.b.PersistDelayOffsets(); err != nil {
		t.Fatal(err)
	}
	// Persist syncs the CommitLog only when the offsets changed (a
	// delivery moved them), so the model does not count on it.
}

func (m *p7) flush(t *rapid.T) {
	if err := m.b.Store().FlushCommitLog(0); err != nil {
		t.Fatal(err)
	}
	m.durable = len(m.delayed)
}

func (m *p7) deliver(t *rapid.T) {
	m.clock.Advance(time.Duration(rapid.Int64Range(0, 4000).Draw(t, "advance ms")) * time.Millisecond)
	if _, err := m.b.DeliverDelayed(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// powerCut abandons the broker, reopens it on the durable image and
// checks P7.
func (m *p7) powerCut(t *rapid.T) {
	brokerops.Abandon(m.b)
	m.open(t)
	m.checkOffsets(t)
	m.persisted = m.b.Offsets().Table()
	m.checkDelivered(t)
}

// checkOffsets: consumer offsets are the persisted ones (clamped to their
// queue's max), and no offset is past its queue's max; delay offsets lie
// within their queues.
func (m *p7) checkOffsets(t *rapid.T) {
	got := m.b.Offsets().Table()
	for k, qs := range got {
		topic, _, _ := strings.Cut(k, "@")
		for q, off := range qs {
			if hi := m.b.Store().MaxOffsetInQueue(topic, q); off > hi {
				t.Fatalf("P7: %s/%d offset %d past the queue's max %d", k, q, off, hi)
			}
			want, ok := m.persisted[k][q]
			if !ok {
				t.Fatalf("P7: %s/%d offset %d was never persisted", k, q, off)
			}
			if want = min(want, m.b.Store().MaxOffsetInQueue(topic, q)); off != want {
				t.Fatalf("P7: %s/%d offset %d, persisted %d", k, q, off, want)
			}
		}
	}
	for k, qs := range m.persisted {
		for q := range qs {
			if _, ok := got[k][q]; !ok {
				t.Fatalf("P7: persisted offset %s/%d lost", k, q)
			}
		}
	}
	for level, off := range m.b.Schedule().Offsets() {
		lo := m.b.Store().MinOffsetInQueue(record.ScheduleTopic, int32(level-1))
		hi := m.b.Store().MaxOffsetInQueue(record.ScheduleTopic, int32(level-1))
		if off < lo || off > hi {
			t.Fatalf("P7: delay offset of level %d = %d outside [%d, %d]", level, off, lo, hi)
		}
	}
}

// checkDelivered: once everything is due, every delayed message that was
// durable before the cut is in T at least once.
func (m *p7) checkDelivered(t *rapid.T) {
	m.clock.Advance(10 * time.Second)
	if _, err := m.b.DeliverDelayed(context.Background()); err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	for off := range m.b.Store().MaxOffsetInQueue("T", 0) {
		phy, err := m.b.Store().CommitLogOffsetInQueue("T", 0, off)
		if err != nil {
			t.Fatal(err)
		}
		ext, err := m.b.Store().LookMessageByOffset(phy)
		if err != nil {
			t.Fatal(err)
		}
		seen[ext.Properties["KEYS"]]++
	}
	for _, key := range m.delayed[:m.durable] {
		if seen[key] == 0 {
			t.Fatalf("P7: durable delayed message %s never delivered (seen %v)", key, seen)
		}
	}
	// What was not durable may be gone (or may have survived: the cut
	// keeps no unsynced page, but a later flush may have synced it).
	// Forget it; new keys do not reuse its name.
	for _, key := range m.delayed[m.durable:] {
		if seen[key] == 0 {
			m.lost = append(m.lost, key)
		}
	}
	m.delayed = m.delayed[:0]
	for key := range seen {
		if key != "" {
			m.delayed = append(m.delayed, key)
		}
	}
	for _, key := range m.lost {
		if seen[key] > 0 {
			t.Fatalf("P7: %s was lost in an earlier cut and came back", key)
		}
	}
	m.durable = len(m.delayed)
}

// TestP7OffsetsAcrossPowerCuts (P7 of docs/design.md, on the broker
// layer): consumer offsets and delay offsets survive
// a power cut as last persisted (within their persist interval), are
// never past their queue's max offset after recovery, and delayed messages
// are delivered at least once.
func TestP7OffsetsAcrossPowerCuts(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		m := &p7{}
		m.init(t)
		defer func() { m.b.Close() }()
		t.Repeat(map[string]func(*rapid.T){
			"put":             m.put,
			"putDelayed":      m.putDelayed,
			"commit":          m.commit,
			"persistConsumer": m.persistConsumer,
			"persistDelay":    m.persistDelay,
			"flush":           m.flush,
			"deliver":         m.deliver,
			"powerCut":        m.powerCut,
		})
		m.powerCut(t)
	})
}

// p7Msg is a message to topic T, tag A, with keys when given.
func p7Msg(qid int32, keys string) *engine.Message {
	p := map[string]string{"TAGS": "A"}
	if keys != "" {
		p["KEYS"] = keys
	}
	return &engine.Message{Topic: "T", QueueID: qid, Body: []byte("body-A-" + keys), Properties: p}
}
