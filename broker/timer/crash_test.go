package timer

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/rocketstore/rocketstore/crashsim"
	"github.com/rocketstore/rocketstore/internal/hooks"
	"github.com/rocketstore/rocketstore/record"
)

// errCut is what a delivery put answers when the process dies right
// after it.
var errCut = errors.New("power cut after the write")

// timerModel is what the producers know of one message.
type timerModel struct {
	due      int64 // the delivery time asked for, ms
	out      int64 // its slot (TIMER_OUT_MS); 0: stored in its topic at once
	uniq     string
	recalled bool  // a recall of it was acknowledged
	offset   int64 // its timer-topic record, for another leader's delivery
	byOther  bool  // delivered by the other leader
}

// timerMachine drives a service through sends, recalls, clock steps,
// service steps, flushes, checkpoints and power cuts (between any two
// steps, and inside a step: after a delivery put or any file operation).
type timerMachine struct {
	e    *env
	msgs map[string]*timerModel
	keys []string
	// standby makes the service a replica that follows another leader,
	// which the machine plays (otherDelivers).
	standby *atomic.Bool
}

func (m *timerMachine) send(t *rapid.T) {
	k := fmt.Sprintf("k%d", len(m.keys))
	due := m.e.ms() + int64(rapid.IntRange(-1500, 20_000).Draw(t, "deliver in ms"))
	res := m.e.sendAt(k, due)
	mm := &timerModel{due: due, uniq: "U" + k, offset: res.WroteOffset}
	if res.Topic == record.TimerTopic {
		mm.out = m.e.svc.Config().roundUp(due)
	}
	m.msgs[k], m.keys = mm, append(m.keys, k)
}

// recall cancels a pending message as Broker.Recall does: only while its
// slot is ahead of both the clock and the wheel.
func (m *timerMachine) recall(t *rapid.T) {
	var ks []string
	for _, k := range m.keys {
		if mm := m.msgs[k]; mm.out > m.e.ms() && mm.out >= m.e.svc.ReadTime() && !mm.recalled {
			ks = append(ks, k)
		}
	}
	if len(ks) == 0 {
		t.Skip("nothing to recall")
	}
	mm := m.msgs[rapid.SampledFrom(ks).Draw(t, "message")]
	if _, err := m.e.send("r-"+mm.uniq, map[string]string{record.PropertyTimerDeliverMS: strconv.FormatInt(mm.out, 10),
		record.PropertyTimerDelUniqKey: record.TimerDeleteKey(testTopic, mm.uniq)}); err != nil {
		t.Fatal(err)
	}
	mm.recalled = true
}

// toggleRole makes the service a replica on standby, or its group's
// leader again. A deposed node wakes its service (cluster), which steps
// on standby before another leader's delivery can reach the CommitLog:
// the machine runs that step.
func (m *timerMachine) toggleRole(t *rapid.T) {
	m.standby.Store(!m.standby.Load())
	if m.standby.Load() {
		m.run(t)
	}
}

// otherDelivers plays the leader while the service stands by: it
// delivers a due timer message that is neither delivered nor recalled,
// as that leader's replicated put would land in this replica's
// CommitLog.
func (m *timerMachine) otherDelivers(t *rapid.T) {
	if !m.standby.Load() {
		t.Skip("this service leads")
	}
	// The puts of this service when it led are in the other leader's
	// log too: replicated, so durable (and then dispatched).
	m.e.flush()
	done := map[string]bool{}
	for _, d := range m.e.delivered() {
		done[d.key] = true
	}
	var ks []string
	for _, k := range m.keys {
		if mm := m.msgs[k]; mm.out > 0 && mm.out <= m.e.ms() && !mm.recalled && !mm.byOther && !done[k] {
			ks = append(ks, k)
		}
	}
	if len(ks) == 0 {
		t.Skip("nothing due to deliver")
	}
	mm := m.msgs[rapid.SampledFrom(ks).Draw(t, "delivered by the other leader")]
	ext, err := m.e.store.LookMessageByOffset(mm.offset)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.e.store.Put(context.Background(), timeUp(ext, record.TimerUnit{OffsetPy: mm.offset})); err != nil {
		t.Fatal(err)
	}
	mm.byOther = true
}

func (m *timerMachine) advanceClock(t *rapid.T) {
	m.e.step(time.Duration(rapid.IntRange(0, 6000).Draw(t, "advance ms")) * time.Millisecond)
}

func (m *timerMachine) run(t *rapid.T) {
	m.e.dispatch()
	if _, err := m.e.svc.Advance(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// flush is the flush service's work: deliveries are put with WAIT false.
func (m *timerMachine) flush(t *rapid.T) { m.e.flush() }

func (m *timerMachine) checkpoint(t *rapid.T) {
	if err := m.e.svc.Checkpoint(); err != nil {
		t.Fatal(err)
	}
}

// checkpointAsync takes a checkpoint as the service goroutine does: its
// writer runs (here to its end, so that the run stays deterministic)
// while the service goes on; the service takes the result at its next
// step (or at finishCheckpoint), and a power cut may come before.
func (m *timerMachine) checkpointAsync(t *rapid.T) {
	svc := m.e.svc
	if svc.saving != nil {
		t.Skip("a checkpoint is in flight")
	}
	svc.startCheckpoint()
	err := <-svc.saving.done
	svc.saving.done <- err
}

func (m *timerMachine) finishCheckpoint(t *rapid.T) {
	if err := m.e.svc.finishCheckpoint(true); err != nil {
		t.Fatal(err)
	}
}

func (m *timerMachine) powerCut(t *rapid.T) { m.e.powerCut() }

// cutInCall makes the process die inside a service step or a
// checkpoint: right after its k-th delivery put, or at its k-th file
// operation that changes something (the TimerLog, the wheel, the
// checkpoint's files, the CommitLog).
func (m *timerMachine) cutInCall(t *rapid.T) {
	k := rapid.IntRange(1, 12).Draw(t, "cut at")
	m.e.dispatch()
	if rapid.Bool().Draw(t, "after a put") {
		m.e.cutAfterPut = func() error {
			if k--; k <= 0 {
				return errCut
			}
			return nil
		}
	} else {
		m.e.fs.SetInjector(crashsim.CrashWhen(crashsim.Nth(k, crashsim.Mutating())))
	}
	var err error
	if rapid.Bool().Draw(t, "in a checkpoint") {
		err = m.e.svc.Checkpoint()
	} else {
		_, err = m.e.svc.Advance(context.Background())
	}
	if err != nil && !errors.Is(err, errCut) && !errors.Is(err, crashsim.ErrCrash) && !errors.Is(err, crashsim.ErrFrozen) {
		t.Fatal(err)
	}
	m.e.cutAfterPut = nil
	m.e.fs.SetInjector(nil)
	m.e.powerCut()
}

// drain lets time run until nothing is pending, then checks every
// message: delivered exactly once, not before its time, unless recalled.
func (m *timerMachine) drain(t *rapid.T) {
	m.standby.Store(false)
	for round := 0; ; round++ {
		if round > 100 {
			t.Fatalf("timers still pending after %d rounds: %v", round, m.e.svc.Pending())
		}
		m.e.step(5 * time.Second)
		m.run(t)
		m.e.flush()
		if len(m.e.svc.Pending()) == 0 && m.e.ms() > m.maxDue() {
			break
		}
	}
	got := map[string][]deliveredMsg{}
	for _, d := range m.e.delivered() {
		got[d.key] = append(got[d.key], d)
	}
	for _, k := range m.keys {
		mm, ds := m.msgs[k], got[k]
		switch {
		case mm.recalled && len(ds) > 0:
			t.Fatalf("%s delivered after its recall was acknowledged", k)
		case !mm.recalled && len(ds) == 0:
			t.Fatalf("%s (due %d) never delivered", k, mm.due-startClock)
		case len(ds) > 1:
			t.Fatalf("%s delivered %d times", k, len(ds))
		case len(ds) == 1 && ds[0].storeMs < mm.due:
			t.Fatalf("%s delivered %d ms before its time", k, mm.due-ds[0].storeMs)
		}
		delete(got, k)
	}
	for k := range got {
		t.Fatalf("unknown message %q delivered", k)
	}
}

func (m *timerMachine) maxDue() int64 {
	var d int64
	for _, mm := range m.msgs {
		d = max(d, mm.due)
	}
	return d
}

// checkTimers runs the property with a broken variant (none: the real
// service).
func checkTimers(t *rapid.T, broken hooks.Timer) {
	e := &env{t: t, fs: newCrashFS(t, nil), chooser: crashsim.RapidChooser{T: t}}
	e.init(broken, rapid.SampledFrom([]int64{100, 1000}).Draw(t, "precision ms"), time.Minute)
	standby := &atomic.Bool{}
	e.cfg.Standby = standby.Load
	e.open()
	defer e.close()
	m := &timerMachine{e: e, msgs: map[string]*timerModel{}, standby: standby}
	t.Repeat(map[string]func(*rapid.T){
		"send":         m.send,
		"recall":       m.recall,
		"advanceClock": m.advanceClock,
		"run":          m.run,
		"flush":        m.flush,
		"checkpoint":   m.checkpoint,
		"ckptAsync":    m.checkpointAsync,
		"ckptFinish":   m.finishCheckpoint,
		"powerCut":     m.powerCut,
		"cutInCall":    m.cutInCall,
		"toggleRole":   m.toggleRole,
		"otherLeader":  m.otherDelivers,
	})
	m.drain(t)
}

// TestTimersUnderPowerCuts: across any sequence of sends, recalls, clock
// steps, service steps, flushes, checkpoints and power cuts (between
// steps, and inside a step after a delivery put or at any file
// operation), and of role changes of a replica (on standby it follows
// deliveries the machine makes as the other leader, in any order, whole
// slots or parts), every acknowledged timer message is delivered into its
// real queue exactly once and never before its time, and none whose
// recall was acknowledged is delivered. -rapid.checks sets the number of
// runs (100 by default, a few seconds).
func TestTimersUnderPowerCuts(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) { checkTimers(rt, hooks.Timer{}) })
}

// TestTimerBrokenVariantsCaught: with each safety step removed, the
// property fails, and by the check that the step is there for. The
// search runs one case per seed from a fixed seed, without shrinking
// (the machine runs no goroutine and takes its time from the test
// clock, so each variant fails at the same case in every run).
func TestTimerBrokenVariantsCaught(t *testing.T) {
	for _, v := range []struct {
		name   string
		broken hooks.Timer
		want   string // the failure message of the property it breaks
	}{
		{"NoDeliverySync", hooks.Timer{NoDeliverySync: true}, "never delivered"},
		{"NoDedup", hooks.Timer{NoDedup: true}, "times"},
		{"WheelInPlace", hooks.Timer{WheelInPlace: true}, "bad timer log unit"},
		{"ScanFromQueue", hooks.Timer{ScanFromQueue: true}, "times"},
		{"FollowUnseen", hooks.Timer{FollowUnseen: true}, "never delivered"},
	} {
		t.Run(v.name, func(t *testing.T) {
			setFlag(t, "rapid.nofailfile", "true")
			setFlag(t, "rapid.checks", "1")
			setFlag(t, "rapid.shrinktime", "1ns")
			others := map[string]int{}
			for i := range 300 {
				seed := 20261206 + i
				setFlag(t, "rapid.seed", strconv.Itoa(seed))
				rec := &recordingTB{TB: t}
				rapid.Check(rec, func(rt *rapid.T) { checkTimers(rt, v.broken) })
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
