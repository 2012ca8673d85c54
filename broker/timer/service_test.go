package timer

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rocketstore/rocketstore/engine"
	"github.com/rocketstore/rocketstore/internal/hooks"
	"github.com/rocketstore/rocketstore/record"
)

func keys(ms []deliveredMsg) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.key
	}
	return out
}

// TestDeliveryAtItsTime: messages wait in the timer topic and reach
// their real queue at the first step at or after their time, never
// before, in time order; one whose time has passed is stored in its
// topic at once.
func TestDeliveryAtItsTime(t *testing.T) {
	e := newEnv(t, hooks.Timer{})
	r := e.sendAt("b", startClock+2500)
	if r.Topic != record.TimerTopic {
		t.Fatalf("stored in %s", r.Topic)
	}
	e.sendAt("a", startClock+1200)
	if r := e.sendAt("past", startClock-5); r.Topic != testTopic {
		t.Fatalf("a past time stored in %s", r.Topic)
	}
	e.advance()
	if got := keys(e.delivered()); len(got) != 1 || got[0] != "past" {
		t.Fatalf("delivered %v", got)
	}
	if p := e.svc.Pending(); p[testTopic] != 2 {
		t.Fatalf("pending %v", p)
	}
	e.step(1999 * time.Millisecond) // a (rounded up to +2000) is due at +2000
	e.advance()
	if got := keys(e.delivered()); len(got) != 1 {
		t.Fatalf("delivered early: %v", got)
	}
	e.step(time.Millisecond)
	if wait := e.advance(); wait != time.Second {
		t.Fatalf("next wait %v", wait)
	}
	got := e.delivered()
	if len(got) != 2 || got[1].key != "a" || got[1].storeMs != startClock+2000 {
		t.Fatalf("delivered %+v", got)
	}
	m := got[1].props
	if m[record.PropertyRealTopic] != testTopic || m[record.PropertyTimerOutMS] != strconv.Itoa(startClock+2000) ||
		m[record.PropertyTimerSourceOffset] == "" || m[record.PropertyWaitStoreMsgOK] != "false" {
		t.Fatalf("properties %v", m)
	}
	e.step(time.Second)
	if wait := e.advance(); wait != -1 {
		t.Fatalf("wait %v with nothing pending", wait)
	}
	if got := keys(e.delivered()); len(got) != 3 || got[2] != "b" {
		t.Fatalf("delivered %v", got)
	}
	if p := e.svc.Pending(); len(p) != 0 {
		t.Fatalf("pending %v", p)
	}
}

func TestTransformForms(t *testing.T) {
	c := Config{PrecisionMs: 100, MaxDelay: time.Hour}
	now := int64(startClock)
	for _, tc := range []struct {
		name  string
		props map[string]string
		out   int64 // 0: not moved
		err   error
	}{
		{"deliver ms", map[string]string{record.PropertyTimerDeliverMS: strconv.FormatInt(now+1001, 10)}, now + 1100, nil},
		{"delay sec", map[string]string{record.PropertyTimerDelaySec: "3"}, now + 3000, nil},
		{"delay ms", map[string]string{record.PropertyTimerDelayMS: "250"}, now + 300, nil},
		{"ONS", map[string]string{record.PropertyStartDeliverTime: strconv.FormatInt(now+100, 10)}, now + 100, nil},
		{"past", map[string]string{record.PropertyTimerDeliverMS: "5"}, 0, nil},
		{"level wins", map[string]string{record.PropertyTimerDelaySec: "3", record.PropertyDelayTimeLevel: "2"}, 0, nil},
		{"too far", map[string]string{record.PropertyTimerDelaySec: "3601"}, 0, ErrIllegal},
		{"bad", map[string]string{record.PropertyTimerDelayMS: "soon"}, 0, ErrIllegal},
		{"late recall", map[string]string{record.PropertyTimerDeliverMS: "5", record.PropertyTimerDelUniqKey: "T+x"}, 0, ErrIllegal},
		{"plain", map[string]string{"KEYS": "k"}, 0, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := &record.Message{Topic: "T", QueueID: 3, Properties: tc.props}
			got, err := c.Transform(m, now)
			if !errors.Is(err, tc.err) || (err == nil) != (tc.err == nil) {
				t.Fatalf("err %v, want %v", err, tc.err)
			}
			if err != nil {
				return
			}
			enc := string(record.AppendProperties(nil, tc.props))
			if IsTimer(enc) != (tc.name != "plain") {
				t.Errorf("IsTimer(%q) wrong", enc)
			}
			if tc.out == 0 {
				if got.Topic != "T" || got.Properties[record.PropertyTimerDelaySec] != "" && tc.name == "level wins" {
					t.Fatalf("moved: %+v", got)
				}
				return
			}
			if got.Topic != record.TimerTopic || got.QueueID != 0 || got.Properties[record.PropertyRealTopic] != "T" ||
				got.Properties[record.PropertyRealQueueID] != "3" || got.Properties[record.PropertyTimerOutMS] != strconv.FormatInt(tc.out, 10) {
				t.Fatalf("%+v", got)
			}
			if m.Topic != "T" || m.Properties[record.PropertyTimerOutMS] != "" {
				t.Fatal("the input was modified")
			}
		})
	}
	if _, err := (Config{Disabled: true}).Transform(&record.Message{Topic: "T", Properties: map[string]string{record.PropertyTimerDelaySec: "1"}}, now); !errors.Is(err, ErrDisabled) {
		t.Fatal(err)
	}
}

// TestRecall: a recall in the slot of its message cancels it; the
// others of the slot are delivered.
func TestRecall(t *testing.T) {
	e := newEnv(t, hooks.Timer{})
	due := int64(startClock + 3000)
	e.sendAt("x", due)
	e.sendAt("y", due)
	e.advance()
	if _, err := e.send("r", map[string]string{record.PropertyTimerDeliverMS: strconv.FormatInt(due, 10),
		record.PropertyTimerDelUniqKey: record.TimerDeleteKey(testTopic, "Ux")}); err != nil {
		t.Fatal(err)
	}
	e.step(3 * time.Second)
	e.advance()
	if got := keys(e.delivered()); len(got) != 1 || got[0] != "y" {
		t.Fatalf("delivered %v", got)
	}
	if p := e.svc.Pending(); len(p) != 0 {
		t.Fatalf("pending %v", p)
	}
}

// TestRestartKeepsPending: a clean restart keeps the pending messages
// (wheel and TimerLog on disk) and delivers each once.
func TestRestartKeepsPending(t *testing.T) {
	e := newEnv(t, hooks.Timer{})
	for i := range 20 {
		e.sendAt("k"+strconv.Itoa(i), startClock+int64(i)*700)
	}
	e.step(5 * time.Second)
	e.advance()
	n := len(e.delivered())
	e.close()
	e.open()
	if p := e.svc.Pending(); p[testTopic] != int64(20-n) {
		t.Fatalf("pending %v after restart, %d delivered", p, n)
	}
	e.step(time.Minute)
	e.advance()
	seen := map[string]int{}
	for _, m := range e.delivered() {
		seen[m.key]++
	}
	if len(seen) != 20 {
		t.Fatalf("delivered %v", seen)
	}
	for k, c := range seen {
		if c != 1 {
			t.Fatalf("%s delivered %d times", k, c)
		}
	}
	if st := e.svc.Stats(); st.LogBytes > 3*52*8 {
		t.Fatalf("delivered TimerLog files kept: %+v", st)
	}
}

func TestConfigValidate(t *testing.T) {
	for _, c := range []Config{
		{PrecisionMs: 5}, {PrecisionMs: 100, MaxDelay: time.Millisecond}, {LogFileSize: 100}, {CheckpointInterval: -1},
		{PrecisionMs: 10, MaxDelay: 30 * 24 * time.Hour},
	} {
		if err := c.Validate(); !errors.Is(err, ErrBadConfig) {
			t.Errorf("%+v: %v", c, err)
		}
	}
	if err := (Config{}).Validate(); err != nil {
		t.Fatal(err)
	}
	if err := (Config{PrecisionMs: 100}).Validate(); err != nil {
		t.Fatal(err)
	}
}

// TestElectionSkipsDeliveriesOfTheFormerLeader: a replica on standby
// enqueues (its pending count is the leader's) and delivers nothing;
// elected, it does not deliver again what the CommitLog shows delivered
// (by the former leader) since its last step.
func TestElectionSkipsDeliveriesOfTheFormerLeader(t *testing.T) {
	e, standby := openStandby(t, hooks.Timer{}, 1000)
	a := e.sendAt("a", startClock+1000)
	e.sendAt("b", startClock+1000)
	e.step(2 * time.Second)
	if wait := e.advance(); wait != time.Second || len(e.delivered()) != 0 || e.svc.Pending()[testTopic] != 2 {
		t.Fatalf("standby: wait %v, delivered %v, pending %v", wait, e.delivered(), e.svc.Pending())
	}
	// The former leader delivered a.
	ext, err := e.store.LookMessageByOffset(a.WroteOffset)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.store.Put(context.Background(), timeUp(ext, record.TimerUnit{OffsetPy: a.WroteOffset})); err != nil {
		t.Fatal(err)
	}
	standby.Store(false)
	e.advance()
	got := map[string]int{}
	for _, m := range e.delivered() {
		got[m.key]++
	}
	if got["a"] != 1 || got["b"] != 1 || len(got) != 2 {
		t.Fatalf("delivered %v", got)
	}
}

// TestStandbyRestartSkipsDeliveriesOfTheFormerLeader: a replica on
// standby is stopped cleanly (its Close takes a checkpoint) after the
// former leader delivered a; restarted and then elected, it does not
// deliver a again. Its checkpoints must start the CommitLog scan no later
// than what its last step read (seenTo): a standby service has not
// accounted for the deliveries the CommitLog gained since, whether or
// not a step of its own found it on standby.
func TestStandbyRestartSkipsDeliveriesOfTheFormerLeader(t *testing.T) {
	for _, stepped := range []bool{false, true} {
		t.Run(fmt.Sprintf("stepped=%v", stepped), func(t *testing.T) {
			e, standby := openStandby(t, hooks.Timer{}, 1000)
			a := e.sendAt("a", startClock+1000)
			e.sendAt("b", startClock+1000)
			e.step(2 * time.Second)
			if stepped {
				e.advance()
			}
			// The former leader delivered a.
			ext, err := e.store.LookMessageByOffset(a.WroteOffset)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := e.store.Put(context.Background(), timeUp(ext, record.TimerUnit{OffsetPy: a.WroteOffset})); err != nil {
				t.Fatal(err)
			}
			e.flush()
			e.close()
			e.open()
			standby.Store(false)
			e.advance()
			got := map[string]int{}
			for _, m := range e.delivered() {
				got[m.key]++
			}
			if got["a"] != 1 || got["b"] != 1 || len(got) != 2 {
				t.Fatalf("delivered %v, want a and b once each", got)
			}
		})
	}
}

// followThenElect runs a replica on standby behind a leader that
// delivered a and b (due at +1 s) but not c (due at +1.5 s) before it
// stopped; the replica steps at +2 s, is restarted, and is elected at
// +3 s. It returns the replica's read time and pending count after its
// step, its remembered deliveries after the restart, and what the real
// queue holds in the end.
func followThenElect(t *testing.T, broken hooks.Timer) (readTime, pending int64, remembered int, got map[string]int) {
	e, standby := openStandby(t, broken, 500)
	a := e.sendAt("a", startClock+1000)
	b := e.sendAt("b", startClock+1000)
	e.sendAt("c", startClock+1500)
	e.step(2 * time.Second)
	// The leader delivers a and b.
	for _, r := range []engine.PutResult{a, b} {
		ext, err := e.store.LookMessageByOffset(r.WroteOffset)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.store.Put(context.Background(), timeUp(ext, record.TimerUnit{OffsetPy: r.WroteOffset})); err != nil {
			t.Fatal(err)
		}
	}
	if wait := e.advance(); wait != time.Second || len(e.delivered()) != 2 {
		t.Fatalf("standby: wait %v, delivered %v", wait, e.delivered())
	}
	readTime, pending = e.svc.ReadTime(), e.svc.Pending()[testTopic]
	e.close()
	e.open()
	remembered = e.svc.Stats().Delivered
	e.step(time.Second)
	standby.Store(false)
	e.advance()
	got = map[string]int{}
	for _, m := range e.delivered() {
		got[m.key]++
		if due := map[string]int64{"a": 1000, "b": 1000, "c": 1500}[m.key]; m.storeMs < startClock+due {
			t.Errorf("%s delivered at +%d ms, due at +%d ms", m.key, m.storeMs-startClock, due)
		}
	}
	return readTime, pending, remembered, got
}

// TestStandbyFollowsTheLeader: a replica on standby moves its read time
// past the slot the leader delivered and stops at the due slot it did
// not deliver, with the pending count of the leader; its checkpoint
// starts the next CommitLog scan after the deliveries it accounted for,
// so that its restart remembers none; elected, it delivers c only. In
// the broken variant (FollowUnseen) the replica passes c's slot as well
// and c is never delivered.
func TestStandbyFollowsTheLeader(t *testing.T) {
	readTime, pending, remembered, got := followThenElect(t, hooks.Timer{})
	if readTime != startClock+1500 || pending != 1 || remembered != 0 {
		t.Fatalf("after the standby step: read time +%d ms, %d pending, %d deliveries remembered after a restart; "+
			"want +1500 ms, 1 and 0", readTime-startClock, pending, remembered)
	}
	if got["a"] != 1 || got["b"] != 1 || got["c"] != 1 || len(got) != 3 {
		t.Fatalf("delivered %v, want a, b and c once each", got)
	}
	t.Run("broken variant: FollowUnseen", func(t *testing.T) {
		readTime, _, _, got := followThenElect(t, hooks.Timer{FollowUnseen: true})
		if got["c"] != 0 {
			t.Fatalf("the broken variant delivered c (%v, read time +%d ms): the test cannot tell", got, readTime-startClock)
		}
		t.Logf("broken variant caught: c never delivered (read time +%d ms after the standby step)", readTime-startClock)
	})
}

// TestStandbyIdleReadsWhatIsNotDispatched: a replica on standby with
// nothing pending skips reading the dispatched CommitLog for deliveries,
// but not what is not dispatched yet: there a timer message and its
// delivery by the leader may both be. Elected, it does not deliver the
// message again; in the broken variant (IdleSkipsToEnd) it does.
func TestStandbyIdleReadsWhatIsNotDispatched(t *testing.T) {
	if got := idleThenElect(t, hooks.Timer{}); len(got) != 1 {
		t.Fatalf("delivered %v, want a once", got)
	}
	t.Run("broken variant: IdleSkipsToEnd", func(t *testing.T) {
		got := idleThenElect(t, hooks.Timer{IdleSkipsToEnd: true})
		if len(got) == 1 {
			t.Fatal("the broken variant delivered a once: the test cannot tell")
		}
		t.Logf("broken variant caught: delivered %v", got)
	})
}

// idleThenElect returns what the real queue holds in the end.
func idleThenElect(t *testing.T, broken hooks.Timer) []string {
	e, standby := openStandby(t, broken, 1000)
	e.advance()
	// Stored and delivered by the leader, neither dispatched here when
	// the replica steps.
	m, err := e.svc.Config().Transform(&record.Message{Topic: testTopic, QueueID: 1, Body: []byte("body-a"),
		Properties: map[string]string{"key": "a", record.PropertyUniqClientMsgID: "Ua",
			record.PropertyTimerDeliverMS: strconv.FormatInt(startClock+1000, 10)}}, e.ms())
	if err != nil {
		t.Fatal(err)
	}
	e.step(2 * time.Second)
	a, err := e.store.Put(context.Background(), m)
	if err != nil {
		t.Fatal(err)
	}
	ext, err := e.store.LookMessageByOffset(a.WroteOffset)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.store.Put(context.Background(), timeUp(ext, record.TimerUnit{OffsetPy: a.WroteOffset})); err != nil {
		t.Fatal(err)
	}
	if _, err := e.svc.Advance(context.Background()); err != nil {
		t.Fatal(err)
	}
	e.advance() // dispatched now: a is enqueued
	e.step(2 * time.Second)
	standby.Store(false)
	e.advance()
	return keys(e.delivered())
}

// TestFailedPutThatStoredIsNotRepeated: a delivery put fails after it
// stored its message (a replicated put whose leader lost its lease and
// kept it); the slot's retry reads the CommitLog from before that put and
// does not deliver the message again, with one put in flight or several.
// Without that read (the broken variant NoDedup) it does.
func TestFailedPutThatStoredIsNotRepeated(t *testing.T) {
	for _, inFlight := range []int{1, 4} {
		t.Run(fmt.Sprintf("in flight %d", inFlight), func(t *testing.T) {
			if got := failedPutThenRetry(t, hooks.Timer{}, inFlight); len(got) != 10 || !uniq(got) {
				t.Fatalf("delivered %v, want 10 once each", got)
			}
			t.Run("broken variant: NoDedup", func(t *testing.T) {
				got := failedPutThenRetry(t, hooks.Timer{NoDedup: true}, inFlight)
				if len(got) == 10 {
					t.Fatal("the broken variant delivered each once: the test cannot tell")
				}
				t.Logf("broken variant caught: delivered %v", got)
			})
		})
	}
}

func uniq(keys []string) bool {
	seen := map[string]bool{}
	for _, k := range keys {
		if seen[k] {
			return false
		}
		seen[k] = true
	}
	return true
}

// failedPutThenRetry delivers ten timers of one slot whose third put
// fails after it stored its message, then steps again.
func failedPutThenRetry(t *testing.T, broken hooks.Timer, inFlight int) []string {
	e := &env{t: t, fs: newCrashFS(t, nil), chooser: loseAll{}}
	e.init(broken, 1000, time.Hour)
	e.cfg.PutsInFlight = inFlight
	e.open()
	t.Cleanup(e.close)
	for i := range 10 {
		e.sendAt(strconv.Itoa(i), startClock+1000)
	}
	e.step(2 * time.Second)
	var puts atomic.Int32
	e.cutAfterPut = func() error {
		if puts.Add(1) == 3 {
			return errors.New("leadership lost")
		}
		return nil
	}
	e.dispatch()
	if _, err := e.svc.Advance(context.Background()); err == nil {
		t.Fatal("the step with the failed put succeeded")
	}
	e.cutAfterPut = nil
	e.advance()
	return keys(e.delivered())
}

// TestIdleServiceSavesItsLastDelivery: a service that delivers its last
// pending timer less than a checkpoint interval after its checkpoint
// steps once more to save that (the pending counts a tool reads from
// the checkpoint are then current), and only then idles.
func TestIdleServiceSavesItsLastDelivery(t *testing.T) {
	e := &env{t: t, fs: newCrashFS(t, nil), chooser: loseAll{}}
	e.init(hooks.Timer{}, 100, time.Hour)
	e.open()
	t.Cleanup(e.close)
	e.svc.cfg.svc.Manual = false // the automatic checkpoints, stepped from here
	onDisk := func() map[string]int64 {
		t.Helper()
		if err := e.svc.finishCheckpoint(true); err != nil {
			t.Fatal(err)
		}
		p, err := PendingOnDisk(e.fs)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	e.sendAt("a", startClock+1500)
	e.step(time.Second)
	e.advance()
	if p := onDisk(); p[testTopic] != 1 {
		t.Fatalf("checkpoint at +1 s: pending %v, want a", p)
	}
	e.step(500 * time.Millisecond)
	if wait := e.advance(); wait != DefaultCheckpointInterval || len(e.delivered()) != 1 {
		t.Fatalf("after the last delivery: wait %v (want %v), delivered %v", wait, DefaultCheckpointInterval, e.delivered())
	}
	e.step(time.Second)
	e.advance()
	if p := onDisk(); len(p) != 0 {
		t.Fatalf("checkpoint after the last delivery: pending %v, want none", p)
	}
	if wait := e.advance(); wait != -1 {
		t.Fatalf("idle and saved: wait %v, want -1", wait)
	}
}

// openStandby opens a service on a crash file system that loses all
// unsynced data, with the given broken variants and precision, as a
// replica on standby until the returned flag is cleared.
func openStandby(t *testing.T, broken hooks.Timer, precisionMs int64) (*env, *atomic.Bool) {
	e := &env{t: t, fs: newCrashFS(t, nil), chooser: loseAll{}}
	e.init(broken, precisionMs, time.Hour)
	standby := &atomic.Bool{}
	standby.Store(true)
	e.cfg.Standby = standby.Load
	e.open()
	t.Cleanup(e.close)
	return e, standby
}
