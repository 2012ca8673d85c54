package pop

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/rocketstore/rocketstore/crashsim"
	"github.com/rocketstore/rocketstore/internal/hooks"
)

// errCut is what a put answers when the process dies right after it.
var errCut = errors.New("power cut after the write")

// msgModel is what the consumers know of one message.
type msgModel struct {
	poison bool // its consumer never acks it
	acked  bool // an Ack of it returned nil
	// maybeAcked: an Ack of it was cut short after its write.
	maybeAcked bool
	// deadline of the latest delivery a consumer saw (ms; 0: none), and
	// its handle.
	deadline int64
	handle   string
	// queue and msgGroup are where it was sent (msgGroup: FIFO runs).
	queue    int32
	msgGroup string
}

// popMachine drives a service through sends, receives, acks, changes
// of invisible time, revive passes, clock steps and power cuts (between
// any two steps, and right after a record's write, before the call
// returns).
type popMachine struct {
	e    *env
	msgs map[string]*msgModel
	keys []string
	// fifo: every receive is a FIFO receive and every message has a
	// message group.
	fifo bool
}

const (
	propQueues      = 2
	propMaxAttempts = 3
)

func (m *popMachine) send(t *rapid.T) {
	k := fmt.Sprintf("k%d", len(m.keys))
	mm := &msgModel{poison: rapid.IntRange(0, 4).Draw(t, "poison") == 0,
		queue: int32(rapid.IntRange(0, propQueues-1).Draw(t, "queue"))}
	if m.fifo {
		mm.msgGroup = rapid.SampledFrom([]string{"A", "B", "C"}).Draw(t, "message group")
	}
	m.msgs[k] = mm
	m.keys = append(m.keys, k)
	m.e.send(mm.queue, k, mm.msgGroup)
}

// checkOrder: in a FIFO run, a message is delivered only when every
// earlier message of its queue and message group is finished (acked, or
// in the DLQ; an ack cut short may have finished it).
func (m *popMachine) checkOrder(t *rapid.T, k string) {
	mm := m.msgs[k]
	var dlq map[string]bool
	for _, j := range m.keys {
		if j == k {
			return
		}
		e := m.msgs[j]
		if e.queue != mm.queue || e.msgGroup != mm.msgGroup || e.acked || e.maybeAcked {
			continue
		}
		if dlq == nil {
			dlq = map[string]bool{}
			for _, d := range m.e.dlqKeys() {
				dlq[d] = true
			}
		}
		if !dlq[j] {
			t.Fatalf("%s of message group %s delivered while %s, sent before it, is not finished", k, mm.msgGroup, j)
		}
	}
}

// seen checks the deliveries of a receive against the properties and
// records them.
func (m *popMachine) seen(t *rapid.T, ms []Message) {
	now := m.e.ms()
	for _, d := range ms {
		k := d.Properties["key"]
		mm := m.msgs[k]
		switch {
		case mm == nil:
			t.Fatalf("unknown message %q delivered", k)
		case mm.acked:
			t.Fatalf("%s delivered again (attempt %d) after its ack returned", k, d.Attempt)
		case mm.deadline > now:
			t.Fatalf("%s delivered again at %d, before its invisible time ends at %d", k, now, mm.deadline)
		}
		if m.fifo {
			m.checkOrder(t, k)
		}
		if d.ReceiptHandle() != d.Handle.String() {
			t.Fatalf("%s: receipt handle %q, its Handle's text %q", k, d.ReceiptHandle(), d.Handle.String())
		}
		mm.deadline, mm.handle = d.Handle.Deadline(), d.ReceiptHandle()
	}
}

func (m *popMachine) receive(t *rapid.T) {
	qid := int32(rapid.IntRange(-1, propQueues-1).Draw(t, "queue"))
	inv := time.Duration(rapid.IntRange(1, 20).Draw(t, "invisible s")) * time.Second
	ms := m.e.receive(qid, rapid.IntRange(1, 4).Draw(t, "max"), inv, m.fifo)
	m.seen(t, ms)
}

// pickDelivered draws a message a consumer holds a handle of.
func (m *popMachine) pickDelivered(t *rapid.T) (string, *msgModel) {
	var ks []string
	for _, k := range m.keys {
		if mm := m.msgs[k]; mm.handle != "" && !mm.acked {
			ks = append(ks, k)
		}
	}
	if len(ks) == 0 {
		t.Skip("nothing delivered")
	}
	k := rapid.SampledFrom(ks).Draw(t, "message")
	return k, m.msgs[k]
}

func (m *popMachine) ack(t *rapid.T) {
	_, mm := m.pickDelivered(t)
	if mm.poison {
		t.Skip("poison")
	}
	err := m.e.svc.Ack(context.Background(), testGroup, testTopic, mm.handle)
	m.e.dispatch()
	switch {
	case err == nil:
		mm.acked = true
	case !errors.Is(err, ErrStaleHandle):
		t.Fatal(err)
	}
}

func (m *popMachine) change(t *rapid.T) {
	_, mm := m.pickDelivered(t)
	d := time.Duration(rapid.IntRange(0, 20).Draw(t, "invisible s")) * time.Second
	h, err := m.e.svc.ChangeInvisibleDuration(context.Background(), testGroup, testTopic, mm.handle, d)
	m.e.dispatch()
	switch {
	case err == nil:
		mm.deadline, mm.handle = h.Deadline(), h.String()
	case !errors.Is(err, ErrStaleHandle):
		t.Fatal(err)
	}
}

func (m *popMachine) advance(t *rapid.T) {
	m.e.advance(time.Duration(rapid.IntRange(0, 25_000).Draw(t, "advance ms")) * time.Millisecond)
}

func (m *popMachine) revive(t *rapid.T) {
	if _, err := m.e.svc.Revive(context.Background()); err != nil {
		t.Fatal(err)
	}
	m.e.dispatch()
}

func (m *popMachine) powerCut(t *rapid.T) { m.e.powerCut() }

// compact writes a snapshot: the next recovery replays from it.
func (m *popMachine) compact(t *rapid.T) {
	if err := m.e.svc.Compact(context.Background()); err != nil {
		t.Fatal(err)
	}
	m.e.dispatch()
}

// cutInCall makes the process die right after the next revive-log write
// of a receive, an ack or a change: the call fails, its record may or
// may not survive. The consumer learns nothing from it (an ack that did
// not return may still have taken effect).
func (m *popMachine) cutInCall(t *rapid.T) {
	// The process dies after the k-th write of the call (a receive that
	// dead-letters first, and a compaction, write several records).
	k := rapid.IntRange(1, 3).Draw(t, "cut after write")
	m.e.cutAfterPut = func() error {
		if k--; k <= 0 {
			return errCut
		}
		return nil
	}
	defer func() { m.e.cutAfterPut = nil }()
	ctx := context.Background()
	var err error
	switch rapid.IntRange(0, 3).Draw(t, "call") {
	case 3:
		err = m.e.svc.Compact(ctx)
	case 0:
		_, err = m.e.svc.Receive(ctx, ReceiveRequest{Group: testGroup, Topic: testTopic, QueueID: AllQueues, Max: 4,
			InvisibleTime: 5 * time.Second, FIFO: m.fifo})
	case 1:
		_, mm := m.pickDelivered(t)
		if mm.poison {
			t.Skip("poison")
		}
		mm.maybeAcked = true
		err = m.e.svc.Ack(ctx, testGroup, testTopic, mm.handle)
	default:
		_, mm := m.pickDelivered(t)
		// The change may survive: the message may be visible from then.
		mm.deadline = min(mm.deadline, m.e.ms()+time.Second.Milliseconds())
		_, err = m.e.svc.ChangeInvisibleDuration(ctx, testGroup, testTopic, mm.handle, time.Second)
	}
	if err != nil && !errors.Is(err, errCut) && !errors.Is(err, ErrStaleHandle) {
		t.Fatal(err)
	}
	m.e.cutAfterPut = nil
	m.e.powerCut()
}

// drain: the consumers keep receiving and acking every message but the
// poison ones; the clock moves on. Afterwards every message is acked or
// in the DLQ.
func (m *popMachine) drain(t *rapid.T) {
	for round := 0; ; round++ {
		if round > 4*propMaxAttempts+4+len(m.keys) {
			t.Fatalf("messages still in flight after %d rounds", round)
		}
		m.e.advance(time.Minute)
		m.revive(t)
		ms := m.e.receive(AllQueues, 1000, 30*time.Second, m.fifo)
		m.seen(t, ms)
		for _, d := range ms {
			mm := m.msgs[d.Properties["key"]]
			if mm.poison {
				continue
			}
			if err := m.e.ack(d); err != nil {
				t.Fatalf("ack in drain: %v", err)
			}
			mm.acked = true
		}
		if len(ms) == 0 && m.inFlight() == 0 {
			break
		}
	}
	dlq := map[string]int{}
	for _, k := range m.e.dlqKeys() {
		dlq[k]++
	}
	for _, k := range m.keys {
		if mm := m.msgs[k]; !mm.acked && !mm.maybeAcked && dlq[k] == 0 {
			t.Fatalf("%s (poison %v) lost: neither acked nor in the DLQ", k, mm.poison)
		}
	}
}

func (m *popMachine) inFlight() int {
	n := 0
	m.e.svc.mu.Lock()
	defer m.e.svc.mu.Unlock()
	for _, q := range m.e.svc.queues {
		n += q.entries.len()
	}
	return n
}

// checkPop runs the property with a broken variant (none: the real
// service).
func checkPop(t *rapid.T, broken hooks.Pop) {
	e := &env{t: t, fs: newCrashFS(t, nil), chooser: crashsim.RapidChooser{T: t}}
	e.init(broken, propMaxAttempts)
	e.open()
	defer e.close()
	m := &popMachine{e: e, msgs: map[string]*msgModel{}, fifo: rapid.Bool().Draw(t, "fifo")}
	t.Repeat(map[string]func(*rapid.T){
		"send":      m.send,
		"receive":   m.receive,
		"ack":       m.ack,
		"change":    m.change,
		"advance":   m.advance,
		"revive":    m.revive,
		"powerCut":  m.powerCut,
		"cutInCall": m.cutInCall,
		"compact":   m.compact,
	})
	m.drain(t)
}

// TestPopUnderPowerCuts: across any sequence of sends, receives, acks,
// changes of invisible time, revive passes and power cuts (between
// steps and inside a call after its write), a message is never lost to
// the group (acked or in the DLQ at the end), an acked message is never
// delivered again, and a delivered message is not delivered again before
// its invisible time ends.
func TestPopUnderPowerCuts(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) { checkPop(rt, hooks.Pop{}) })
}

// TestPopBrokenVariantsCaught: with each safety step removed, the
// property fails, and by the check that the step is there for. The
// search runs one case per seed from a fixed seed, without shrinking
// (the machine runs no goroutine and takes its time from the test
// clock, so each variant fails at the same case in every run).
func TestPopBrokenVariantsCaught(t *testing.T) {
	for _, v := range []struct {
		name   string
		broken hooks.Pop
		want   string // the failure message of the property it breaks
	}{
		{"AckBeforeDurable", hooks.Pop{AckBeforeDurable: true}, "after its ack returned"},
		{"ForgetDeadlines", hooks.Pop{ForgetDeadlines: true}, "before its invisible time ends"},
		{"NoAttemptCount", hooks.Pop{NoAttemptCount: true}, "still in flight"},
		{"NoOrderLock", hooks.Pop{NoOrderLock: true}, "is not finished"},
		{"NoHeldRecord", hooks.Pop{NoHeldRecord: true}, "neither acked nor in the DLQ"},
		{"SnapshotFileFirst", hooks.Pop{SnapshotFileFirst: true}, "delivered again"},
	} {
		t.Run(v.name, func(t *testing.T) {
			setFlag(t, "rapid.nofailfile", "true")
			setFlag(t, "rapid.checks", "1")
			setFlag(t, "rapid.shrinktime", "1ns")
			setFlag(t, "rapid.seed", "0")
			others := map[string]int{}
			for i := range 300 {
				seed := 20261206 + i
				setFlag(t, "rapid.seed", strconv.Itoa(seed))
				rec := &recordingTB{TB: t}
				rapid.Check(rec, func(rt *rapid.T) { checkPop(rt, v.broken) })
				switch {
				case !rec.failed:
					continue
				case strings.Contains(rec.msg, v.want):
					t.Logf("caught at seed %d: %s", seed, firstLine(rec.msg))
					return
				default:
					others[firstLine(rec.msg)]++
				}
			}
			t.Fatalf("no %q failure in 300 cases (other failures: %v)", v.want, others)
		})
	}
}

// setFlag sets a flag for the rest of the test.
func setFlag(t *testing.T, name, value string) {
	f := flag.Lookup(name)
	old := f.Value.String()
	if err := flag.Set(name, value); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = flag.Set(name, old) })
}

// recordingTB records the failure of a rapid.Check instead of failing
// the test.
type recordingTB struct {
	testing.TB
	failed bool
	msg    string
}

func (r *recordingTB) Errorf(format string, args ...any) {
	r.failed = true
	r.msg = fmt.Sprintf(format, args...)
}
func (r *recordingTB) Error(args ...any)                 { r.failed, r.msg = true, fmt.Sprint(args...) }
func (r *recordingTB) Fatalf(format string, args ...any) { r.Errorf(format, args...) }
func (r *recordingTB) Fatal(args ...any)                 { r.Error(args...) }
func (r *recordingTB) Fail()                             { r.failed = true }
func (r *recordingTB) FailNow()                          { r.failed = true }
func (r *recordingTB) Failed() bool                      { return r.failed }
func (r *recordingTB) Log(args ...any)                   {}
func (r *recordingTB) Logf(format string, args ...any)   {}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}
