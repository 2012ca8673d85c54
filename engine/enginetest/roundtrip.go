package enginetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"net/netip"
	"runtime"
	"strings"
	"testing"

	"github.com/rocketstore/rocketstore/engine"
	"github.com/rocketstore/rocketstore/record"
)

func engineDecode(rec []byte) (*engine.MessageExt, error) { return record.Decode(rec, -1, true) }

var roundTripTests = []test{
	{"SingleManyQueues", testRoundTripSingle},
	{"Batch", testRoundTripBatch},
	{"Hosts", testRoundTripHosts},
	{"Transactions", testTransactions},
	{"LookByOffsetAndMsgID", testLook},
	{"SizeLimits", testSizeLimits},
	{"Delayed", testDelayed},
	{"BackgroundServices", testBackground},
}

// sameMessage compares what was put with what was read.
func sameMessage(t *testing.T, want *engine.Message, got *engine.MessageExt) {
	t.Helper()
	if got.Topic != want.Topic || got.QueueID != want.QueueID || !bytes.Equal(got.Body, want.Body) ||
		got.Flag != want.Flag || got.ReconsumeTimes != want.ReconsumeTimes {
		t.Fatalf("read %s/%d %q flag %d, put %s/%d %q flag %d", got.Topic, got.QueueID, got.Body, got.Flag,
			want.Topic, want.QueueID, want.Body, want.Flag)
	}
	wp := map[string]string{}
	for k, v := range want.Properties {
		if v != "" {
			wp[k] = v
		}
	}
	if !maps.Equal(wp, got.Properties) {
		t.Fatalf("properties %v, want %v", got.Properties, wp)
	}
}

func testRoundTripSingle(t *testing.T, h *harness) {
	s := h.open(tinyConfig())
	type put1 struct {
		m   *engine.Message
		res engine.PutResult
	}
	var puts []put1
	next := map[string]int64{}
	for i := 0; i < 60; i++ {
		topic := []string{"orders", "payments", "t3"}[i%3]
		qid := int32(i % 4)
		m := msg(topic, qid, fmt.Sprintf("body %d %s", i, strings.Repeat("x", i)), []string{"A", "B", ""}[i%3], fmt.Sprintf("k%d k%d-b", i, i))
		m.Properties["UNIQ_KEY"] = fmt.Sprintf("UNIQ%05d", i)
		m.Properties["custom"] = "v\u00e9"
		m.Flag = int32(i)
		m.BornTimestamp = baseTime - int64(i)
		m.BornHost = v4Host
		res := put(t, s, m)
		key := fmt.Sprint(topic, "/", qid)
		if res.QueueOffset != next[key] || res.MsgNum != 1 || res.Topic != topic || res.QueueID != qid {
			t.Fatalf("put %d: %+v, want queue offset %d", i, res, next[key])
		}
		next[key]++
		puts = append(puts, put1{m, res})
	}
	dispatched(t, s)
	for _, p := range puts {
		g := get(t, s, p.m.Topic, p.m.QueueID, p.res.QueueOffset, 1, nil)
		wantStatus(t, g, engine.Found, p.res.QueueOffset+1)
		sameMessage(t, p.m, g.msgs[0])
		m := g.msgs[0]
		if m.CommitLogOffset != p.res.WroteOffset || m.StoreSize != p.res.WroteBytes || m.StoreTimestamp != p.res.StoreTimestamp ||
			m.BornTimestamp != p.m.BornTimestamp || m.BornHost != p.m.BornHost {
			t.Fatalf("stored %+v, put result %+v", m, p.res)
		}
	}
	for key, n := range next {
		var topic string
		var qid int32
		if _, err := fmt.Sscanf(strings.Replace(key, "/", " ", 1), "%s %d", &topic, &qid); err != nil {
			t.Fatalf("queue key %q: %v", key, err)
		}
		if got := s.MaxOffsetInQueue(topic, qid); got != n {
			t.Fatalf("max offset %s = %d, want %d", key, got, n)
		}
		g := get(t, s, topic, qid, 0, 64, nil)
		wantStatus(t, g, engine.Found, n)
	}
}

func testRoundTripBatch(t *testing.T, h *harness) {
	s := h.open(tinyConfig())
	put(t, s, msg("b", 1, "before", "T", ""))
	var batch []*engine.Message
	for i := 0; i < 5; i++ {
		batch = append(batch, msg("b", 1, fmt.Sprint("batch ", i), "T", fmt.Sprint("key", i)))
	}
	res, err := s.PutBatch(context.Background(), batch)
	if err != nil {
		t.Fatal(err)
	}
	if res.QueueOffset != 1 || res.MsgNum != 5 {
		t.Fatalf("batch result %+v", res)
	}
	dispatched(t, s)
	g := get(t, s, "b", 1, 1, 32, nil)
	wantStatus(t, g, engine.Found, 6)
	off := res.WroteOffset
	for i, m := range g.msgs {
		sameMessage(t, batch[i], m)
		if m.QueueOffset != int64(1+i) || m.CommitLogOffset != off || m.StoreTimestamp != res.StoreTimestamp {
			t.Fatalf("batch message %d at %d/%d ts %d", i, m.QueueOffset, m.CommitLogOffset, m.StoreTimestamp)
		}
		off += int64(m.StoreSize)
	}
	if off != res.WroteOffset+int64(res.WroteBytes) {
		t.Fatalf("batch records end at %d, result says %d", off, res.WroteOffset+int64(res.WroteBytes))
	}
	// Invalid batches.
	for name, b := range map[string][]*engine.Message{
		"empty":   nil,
		"mixed":   {msg("b", 1, "x", "", ""), msg("b", 2, "y", "", "")},
		"delayed": {{Topic: "b", Body: []byte("x"), Properties: map[string]string{"DELAY": "3"}}},
	} {
		if _, err := s.PutBatch(context.Background(), b); !errors.Is(err, engine.ErrBatch) {
			t.Fatalf("%s batch: %v, want ErrBatch", name, err)
		}
	}
	put(t, s, msg("b", 1, "after", "", "")) // still writable
}

func testRoundTripHosts(t *testing.T, h *harness) {
	for _, store := range []netip.AddrPort{v4Host, v6Host} {
		for _, born := range []netip.AddrPort{v4Host, v6Host} {
			t.Run(fmt.Sprintf("store=%v/born=%v", store, born), func(t *testing.T) {
				h := &harness{t: t, b: h.b, fs: h.b.NewFS(t)}
				cfg := tinyConfig()
				cfg.StoreHost = store
				s := h.open(cfg)
				m := msg("hosts", 0, "hello", "A", "k")
				m.BornHost = born
				res := put(t, s, m)
				dispatched(t, s)
				g := get(t, s, "hosts", 0, 0, 1, nil)
				wantStatus(t, g, engine.Found, 1)
				got := g.msgs[0]
				if got.BornHost != born || got.StoreHost != store {
					t.Fatalf("hosts %v %v, want %v %v", got.BornHost, got.StoreHost, born, store)
				}
				want := record.Length(0, 5, 5, len(record.AppendProperties(nil, m.Properties)))
				if store.Addr().Is6() {
					want += 12
				}
				if born.Addr().Is6() {
					want += 12
				}
				if int(res.WroteBytes) != want {
					t.Fatalf("record %d bytes, want %d", res.WroteBytes, want)
				}
				id := res.MsgID()
				wantLen := 32
				if store.Addr().Is6() {
					wantLen = 56
				}
				if len(id) != wantLen || strings.ToUpper(id) != id {
					t.Fatalf("msg id %q", id)
				}
				byID, err := s.LookMessageByMsgID(id)
				if err != nil || byID.CommitLogOffset != res.WroteOffset {
					t.Fatalf("look by id %s: %v %v", id, byID, err)
				}
			})
		}
	}
}

func testTransactions(t *testing.T, h *harness) {
	s := h.open(tinyConfig())
	kinds := []struct {
		sys   int32
		inCQ  bool
		qoffs int64
	}{
		{record.TransactionNotType, true, 0},
		{record.TransactionPrepared, false, 0},
		{record.TransactionCommit, true, 1},
		{record.TransactionRollback, false, 0},
		{record.TransactionPrepared, false, 0},
		{record.TransactionNotType, true, 2},
	}
	var results []engine.PutResult
	for i, k := range kinds {
		m := msg("tx", 0, fmt.Sprint("tx ", i), "T", "")
		m.SysFlag = k.sys
		if k.sys == record.TransactionCommit || k.sys == record.TransactionRollback {
			m.PreparedTransactionOffset = results[1].WroteOffset
		}
		res := put(t, s, m)
		if res.QueueOffset != k.qoffs {
			t.Fatalf("kind %d: queue offset %d, want %d", i, res.QueueOffset, k.qoffs)
		}
		results = append(results, res)
	}
	dispatched(t, s)
	if max := s.MaxOffsetInQueue("tx", 0); max != 3 {
		t.Fatalf("max offset %d, want 3 (prepared and rollback are not in the queue)", max)
	}
	g := get(t, s, "tx", 0, 0, 32, nil)
	wantStatus(t, g, engine.Found, 3)
	for i, want := range []int{0, 2, 5} {
		if g.msgs[i].CommitLogOffset != results[want].WroteOffset {
			t.Fatalf("queue message %d is at %d, want record %d", i, g.msgs[i].CommitLogOffset, want)
		}
	}
	for i, k := range kinds {
		m, err := s.LookMessageByOffset(results[i].WroteOffset)
		if err != nil {
			t.Fatal(err)
		}
		if m.QueueOffset != k.qoffs || record.TransactionType(m.SysFlag) != k.sys {
			t.Fatalf("record %d: queue offset %d sysflag %#x", i, m.QueueOffset, m.SysFlag)
		}
	}
	if m, _ := s.LookMessageByOffset(results[2].WroteOffset); m.PreparedTransactionOffset != results[1].WroteOffset {
		t.Fatalf("prepared offset %d", m.PreparedTransactionOffset)
	}
	// The queue offsets survive a restart: the table is rebuilt from the
	// ConsumeQueue, not from the prepared records.
	s = h.reopen(s, tinyConfig())
	if res := put(t, s, msg("tx", 0, "after", "", "")); res.QueueOffset != 3 {
		t.Fatalf("after restart: queue offset %d, want 3", res.QueueOffset)
	}
}

func testLook(t *testing.T, h *harness) {
	s := h.open(tinyConfig())
	m := msg("look", 2, "find me", "X", "a b")
	res := put(t, s, m)
	for _, look := range []func() (*engine.MessageExt, error){
		func() (*engine.MessageExt, error) { return s.LookMessageByOffset(res.WroteOffset) },
		func() (*engine.MessageExt, error) { return s.LookMessageByMsgID(res.MsgID()) },
	} {
		got, err := look()
		if err != nil {
			t.Fatal(err)
		}
		sameMessage(t, m, got)
		if got.MsgID() != res.MsgID() {
			t.Fatalf("msg id %s, want %s", got.MsgID(), res.MsgID())
		}
	}
	for _, off := range []int64{res.WroteOffset + 1, res.WroteOffset + int64(res.WroteBytes), 1 << 40, -1} {
		if _, err := s.LookMessageByOffset(off); err == nil {
			t.Fatalf("look at %d found something", off)
		}
	}
	if _, err := s.LookMessageByMsgID("nonsense"); err == nil {
		t.Fatal("bad msg id accepted")
	}
}

func testSizeLimits(t *testing.T, h *harness) {
	cfg := tinyConfig()
	cfg.CommitLogFileSize = 1 << 20
	cfg.MaxMessageSize = 64 << 10
	s := h.open(cfg)
	cases := []struct {
		name string
		m    *engine.Message
		want error
	}{
		{"body over MaxMessageSize", &engine.Message{Topic: "t", Body: make([]byte, 64<<10+1)}, engine.ErrMessageTooLarge},
		{"topic of 128 bytes", &engine.Message{Topic: strings.Repeat("t", 128), Body: []byte("x")}, engine.ErrTopicTooLong},
		{"empty topic", &engine.Message{Body: []byte("x")}, engine.ErrMessageIllegal},
		{"properties over 32767", &engine.Message{Topic: "t", Body: []byte("x"),
			Properties: map[string]string{"big": strings.Repeat("p", 32767)}}, engine.ErrPropertiesTooLarge},
	}
	for _, c := range cases {
		if _, err := s.Put(context.Background(), c.m); !errors.Is(err, c.want) {
			t.Fatalf("%s: %v, want %v", c.name, err, c.want)
		}
	}
	// A record that cannot fit one CommitLog file at all.
	small := tinyConfig()
	h2 := &harness{t: t, b: h.b, fs: h.b.NewFS(t)}
	s2 := h2.open(small)
	if _, err := s2.Put(context.Background(), &engine.Message{Topic: "t", Body: make([]byte, 4096)}); !errors.Is(err, engine.ErrMessageTooLarge) {
		t.Fatalf("record larger than a file: %v", err)
	}
	// The limits themselves are accepted, and the store stays writable.
	put(t, s, &engine.Message{Topic: strings.Repeat("t", 127), Body: make([]byte, 64<<10)})
	put(t, s, &engine.Message{Topic: "t", Body: []byte("x"), Properties: map[string]string{"big": strings.Repeat("p", 32767-4)}})
	put(t, s2, &engine.Message{Topic: "t", Body: []byte("x")})
}

// testBackground runs the real services (async flush, dispatch goroutine)
// with concurrent producers and consumers.
func testBackground(t *testing.T, h *harness) {
	for _, flush := range []engine.FlushDiskType{engine.AsyncFlush, engine.SyncFlush} {
		t.Run(flush.String(), func(t *testing.T) {
			h := &harness{t: t, b: h.b, fs: h.b.NewFS(t)}
			cfg := engine.Config{CommitLogFileSize: 64 << 10, ConsumeQueueUnits: 64, FlushDiskType: flush}
			s := h.open(cfg)
			const producers, each = 4, 200
			errs := make(chan error, producers)
			for p := 0; p < producers; p++ {
				go func() {
					var err error
					for i := 0; i < each && err == nil; i++ {
						_, err = s.Put(context.Background(), msg("bg", int32(p), fmt.Sprint(p, "-", i), "", ""))
					}
					errs <- err
				}()
			}
			done := make(chan struct{})
			go func() { // a consumer racing the producers
				defer close(done)
				for off := int64(0); off < each; {
					r, err := s.GetMessage("bg", 0, off, 32, nil)
					if err != nil {
						return
					}
					off = max(off, r.NextBeginOffset)
					r.Release()
					runtime.Gosched()
				}
			}()
			for p := 0; p < producers; p++ {
				if err := <-errs; err != nil {
					t.Fatal(err)
				}
			}
			dispatched(t, s)
			<-done
			for p := 0; p < producers; p++ {
				g := get(t, s, "bg", int32(p), 0, 1000, nil)
				if len(g.msgs) != 32 || g.max != each {
					t.Fatalf("queue %d: %v", p, g)
				}
			}
			s = h.reopen(s, cfg)
			if r := s.Recovery(); r.Abnormal || s.MaxOffsetInQueue("bg", 3) != each {
				t.Fatalf("after clean close: %+v, max %d", r, s.MaxOffsetInQueue("bg", 3))
			}
		})
	}
}

// testDelayed: a message with a DELAY level goes to the schedule topic's
// queue level-1, keeps its destination in REAL_TOPIC/REAL_QID, and its
// unit's tagsCode is the deliver time.
func testDelayed(t *testing.T, h *harness) {
	s := h.open(tinyConfig())
	m := msg("dest", 5, "later", "T", "")
	m.Properties["DELAY"] = "3"
	res := put(t, s, m)
	if res.Topic != record.ScheduleTopic || res.QueueID != 2 {
		t.Fatalf("delayed put went to %s/%d", res.Topic, res.QueueID)
	}
	if m.Topic != "dest" || m.Properties["REAL_TOPIC"] != "" {
		t.Fatal("Put modified the caller's message")
	}
	dispatched(t, s)
	r, err := s.GetMessage(record.ScheduleTopic, 2, 0, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Release()
	if r.Status != engine.Found || r.Messages[0].TagsCode != res.StoreTimestamp+10_000 {
		t.Fatalf("schedule queue: %v tagsCode %d, want %d", r.Status, r.Messages[0].TagsCode, res.StoreTimestamp+10_000)
	}
	got, _ := engineDecode(r.Messages[0].Record)
	if got.Properties["REAL_TOPIC"] != "dest" || got.Properties["REAL_QID"] != "5" || got.Properties["DELAY"] != "3" {
		t.Fatalf("delayed properties %v", got.Properties)
	}
	if s.MaxOffsetInQueue("dest", 5) != 0 {
		t.Fatal("the delayed message is already in its destination queue")
	}
	// The same with the properties pre-encoded, as the broker passes them.
	raw := []byte("TAGS\x01T\x02DELAY\x013")
	em := &engine.Message{Topic: "dest", QueueID: 5, Body: []byte("later"), EncodedProperties: raw}
	if res := put(t, s, em); res.Topic != record.ScheduleTopic || res.QueueID != 2 || res.QueueOffset != 1 {
		t.Fatalf("delayed encoded put went to %s/%d@%d", res.Topic, res.QueueID, res.QueueOffset)
	}
	if em.Topic != "dest" || string(em.EncodedProperties) != string(raw) {
		t.Fatal("Put modified the caller's encoded message")
	}
	dispatched(t, s)
	r2, err := s.GetMessage(record.ScheduleTopic, 2, 1, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer r2.Release()
	if r2.Status != engine.Found {
		t.Fatalf("schedule queue, encoded message: %v", r2.Status)
	}
	got, _ = engineDecode(r2.Messages[0].Record)
	if got.Properties["REAL_TOPIC"] != "dest" || got.Properties["REAL_QID"] != "5" || got.Properties["DELAY"] != "3" || got.Properties["TAGS"] != "T" {
		t.Fatalf("delayed encoded properties %v", got.Properties)
	}
}
