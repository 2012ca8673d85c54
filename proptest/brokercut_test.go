package proptest

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/rocketstore/rocketstore/broker/timer"
	"github.com/rocketstore/rocketstore/internal/brokerops"
	"github.com/rocketstore/rocketstore/internal/engineops"
	"github.com/rocketstore/rocketstore/record"

	"github.com/rocketstore/rocketstore/backend"
	"github.com/rocketstore/rocketstore/broker"
	"github.com/rocketstore/rocketstore/crashsim"
	"github.com/rocketstore/rocketstore/engine"
	"github.com/rocketstore/rocketstore/internal/hooks"
	"github.com/rocketstore/rocketstore/verify"
)

// brokerCutCases is how many power cuts TestBrokerOffsetsUnderPowerCuts
// makes in CI (each a fraction of a second); ROCKETSTORE_SOAK multiplies.
const brokerCutCases = 12

// brokerDelayLevels are short delays, so that delayed messages fall due
// (and their level offsets move) during a case.
var brokerDelayLevels = []time.Duration{2 * time.Millisecond, 5 * time.Millisecond, 15 * time.Millisecond}

// TestBrokerOffsetsUnderPowerCuts cuts the power under a broker running as
// in production (SyncFlush group commit, dispatch, the ConsumeQueue flush
// service, the delayed-delivery goroutine and the periodic persistence of
// consumerOffset.json and delayOffset.json), while producers put plain and
// delayed messages and consumers pull and commit their offsets. After the
// cut the broker is reopened on the recovered image and must hold:
//
//   - no consumer offset below the table that the last successful
//     PersistConsumerOffsets had (commits only move forward here), none
//     above the largest committed, none past its queue's max offset;
//   - no delay offset below what the last successful PersistDelayOffsets
//     had, none past the schedule queue's max;
//   - every acknowledged delayed message is delivered (before the cut or
//     once the reopened broker delivers what is due), and delivered twice
//     only if its schedule offset is at or past its level's reloaded delay
//     offset (RocketMQ's at-least-once: a delivery not yet covered by a
//     persisted offset is redone);
//   - verify finds the store consistent.
//
// As in TestPowerCutUnderConcurrentLoad the interleaving is the
// scheduler's; the seed is printed with every failure.
func TestBrokerOffsetsUnderPowerCuts(t *testing.T) {
	n := brokerCutCases
	if soak() {
		n *= 50
	}
	base := rand.Uint64()
	for i := range n {
		seed := base + uint64(i)
		if err := brokerCutCase(seed); err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
	}
}

// offsetKey names one consumer offset: "topic@group" and queue id.
type offsetKey struct {
	key string
	qid int32
}

func flatten(table map[string]map[int32]int64) map[offsetKey]int64 {
	out := map[offsetKey]int64{}
	for k, qs := range table {
		for q, off := range qs {
			out[offsetKey{k, q}] = off
		}
	}
	return out
}

// brokerRun is what the goroutines of one case share.
type brokerRun struct {
	b    *broker.Broker
	rfs  *crashsim.FS
	stop chan struct{}
	wg   sync.WaitGroup

	mu sync.Mutex
	// delayed are the acknowledged delayed puts, by body.
	delayed map[string]engine.PutResult
	// committed is the largest offset committed per queue.
	committed map[offsetKey]int64
	// persistedC and persistedD are the tables taken right before the
	// last successful persist of each file.
	persistedC map[offsetKey]int64
	persistedD map[int]int64
}

func brokerCutCase(seed uint64) error {
	rng := rand.New(rand.NewPCG(seed, seed^0x243f6a8885a308d3))
	fs, err := crashsim.New(nil, crashsim.Options{})
	if err != nil {
		return err
	}
	cfg := broker.Config{
		Store: engine.Config{CommitLogFileSize: 8192, ConsumeQueueUnits: 16, FlushDiskType: engine.SyncFlush, Logger: quiet,
			DelayLevels: brokerDelayLevels, FlushIntervalConsumeQueue: time.Millisecond, SyncFlushTimeout: time.Second,
			FlushConsumeQueueThoroughInterval: 5 * time.Millisecond},
		FlushConsumerOffsetInterval: time.Duration(1+rng.IntN(5)) * time.Millisecond,
		FlushDelayOffsetInterval:    time.Duration(1+rng.IntN(5)) * time.Millisecond,
		DisableMessageIndex:         rng.IntN(2) == 0,
		Timer:                       timer.Config{MaxDelay: time.Minute}, // a 120-slot wheel, not 16 MiB a run
	}
	b, err := broker.Open(fs, cfg)
	if err != nil {
		return err
	}
	run := &brokerRun{b: b, stop: make(chan struct{}), delayed: map[string]engine.PutResult{},
		committed: map[offsetKey]int64{}, persistedC: map[offsetKey]int64{}, persistedD: map[int]int64{}}
	for p := range 2 {
		run.start(func() { run.produce(p) })
	}
	run.start(run.produceDelayed)
	for qid := range int32(2) {
		run.start(func() { run.consume("T", qid) })
	}
	run.start(func() { run.consume("D", 0) })
	run.start(run.persist)
	// The power cut comes at a random moment of the concurrent workload:
	// the wait is the property's cut point, not a synchronisation.
	time.Sleep(time.Duration(5+rng.IntN(30)) * time.Millisecond)
	fs.Freeze() // the power cut
	close(run.stop)
	run.wg.Wait()
	brokerops.Abandon(b)
	img := fs.Crash(crashsim.NewRandomChooser(seed, 50, 20))
	rfs, err := crashsim.New(img, crashsim.Options{})
	if err != nil {
		return err
	}
	// Reopened in manual mode with a clock an hour ahead: everything
	// delayed is due, and the test delivers it in its own goroutine.
	rcfg := cfg
	rcfg.Store = hooks.Manual(cfg.Store)
	rcfg.Store.Clock = clockwork.NewFakeClockAt(time.Now().Add(time.Hour))
	run.rfs = rfs
	rb, err := broker.Open(rfs, rcfg)
	if err != nil {
		return fmt.Errorf("reopen: %w", err)
	}
	checkErr := run.checkReopened(rb)
	if cerr := rb.Close(); checkErr == nil {
		checkErr = cerr
	}
	if checkErr != nil {
		return checkErr
	}
	rep, err := verify.Run(rfs, verify.Options{DelayLevels: brokerDelayLevels})
	if err != nil {
		return fmt.Errorf("verify: %w", err)
	}
	if !rep.OK() {
		var vs []string
		for _, v := range rep.Violations {
			vs = append(vs, v.String())
		}
		return fmt.Errorf("verify after the reopened broker closed:\n%s\n%s", rep.Summary(), strings.Join(vs, "\n"))
	}
	return nil
}

func (r *brokerRun) start(f func()) {
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		f()
	}()
}

func (r *brokerRun) stopped() bool {
	select {
	case <-r.stop:
		return true
	default:
		return false
	}
}

// retryable reports whether a failed call may work later (not the frozen
// FS, which fails everything from the cut on).
func retryable(err error) bool {
	return errors.Is(err, engine.ErrFlushTimeout) || (errors.Is(err, engine.ErrReadOnly) && !errors.Is(err, crashsim.ErrCrash))
}

func (r *brokerRun) produce(p int) {
	for seq := 0; !r.stopped(); seq++ {
		_, err := r.b.Store().Put(context.Background(), &engine.Message{Topic: "T", QueueID: int32(p), Body: []byte(fmt.Sprintf("t%d-%d", p, seq))})
		if err != nil && !retryable(err) {
			return
		}
	}
}

func (r *brokerRun) produceDelayed() {
	for seq := 0; !r.stopped(); seq++ {
		body := fmt.Sprintf("d-%d", seq)
		level := 1 + seq%len(brokerDelayLevels)
		res, err := r.b.Store().Put(context.Background(), &engine.Message{Topic: "D", Body: []byte(body),
			Properties: map[string]string{"DELAY": fmt.Sprint(level)}})
		if err != nil {
			if !retryable(err) {
				return
			}
			continue
		}
		r.mu.Lock()
		r.delayed[body] = res
		r.mu.Unlock()
		time.Sleep(200 * time.Microsecond) // the workload's pace: delayed messages are a trickle
	}
}

// consume pulls a queue from its committed offset and commits after each
// batch, so that commits only move forward.
func (r *brokerRun) consume(topic string, qid int32) {
	const group = "G"
	k := offsetKey{topic + "@" + group, qid}
	off := int64(0)
	for !r.stopped() {
		res, err := r.b.Store().GetMessage(topic, qid, off, 8, nil)
		if err != nil {
			return
		}
		n, next := len(res.Messages), res.NextBeginOffset
		res.Release()
		if n == 0 || next <= off {
			time.Sleep(200 * time.Microsecond) // an idle consumer's pull interval (the workload's shape)
			continue
		}
		off = next
		r.mu.Lock()
		r.b.Offsets().Commit("test", group, topic, qid, off)
		r.committed[k] = off
		r.mu.Unlock()
	}
}

// persist saves both tables as the broker's periodic tasks do (which run
// too) and records what each successful save covered.
func (r *brokerRun) persist() {
	for !r.stopped() {
		r.mu.Lock()
		c := flatten(r.b.Offsets().Table())
		r.mu.Unlock()
		d := r.b.Schedule().Offsets()
		if r.b.PersistConsumerOffsets() == nil {
			r.mu.Lock()
			r.persistedC = c
			r.mu.Unlock()
		}
		if r.b.PersistDelayOffsets() == nil {
			r.mu.Lock()
			r.persistedD = d
			r.mu.Unlock()
		}
		time.Sleep(time.Millisecond) // the persist period (the workload's shape)
	}
}

// checkReopened checks the offsets the reopened broker loaded, then
// delivers everything due and checks every delayed message arrived.
func (r *brokerRun) checkReopened(rb *broker.Broker) error {
	st := rb.Store()
	got := flatten(rb.Offsets().Table())
	for k, low := range r.persistedC {
		if got[k] < low {
			root, _ := r.rfs.ListDirs(".")
			main, _ := backend.ReadFile(r.rfs, "config/consumerOffset.json")
			bak, _ := backend.ReadFile(r.rfs, "config/consumerOffset.json.bak")
			return fmt.Errorf("consumer offset %v went back to %d after the cut; %d was persisted (queue max %d; table %v; main %q; bak %q; dirs %v)", k, got[k], low,
				st.MaxOffsetInQueue("T", k.qid), got, main, bak, root)
		}
	}
	for k, off := range got {
		if hi := r.committed[k]; off > hi {
			return fmt.Errorf("consumer offset %v is %d after the cut; %d was the largest committed", k, off, hi)
		}
		topic := k.key[:strings.LastIndexByte(k.key, '@')]
		if hi := st.MaxOffsetInQueue(topic, k.qid); off > hi {
			return fmt.Errorf("consumer offset %v is %d, past its queue's max offset %d", k, off, hi)
		}
	}
	loaded := rb.Schedule().Offsets()
	for level, low := range r.persistedD {
		if loaded[level] < low {
			return fmt.Errorf("delay offset of level %d went back to %d after the cut; %d was persisted", level, loaded[level], low)
		}
	}
	for level, off := range loaded {
		if hi := st.MaxOffsetInQueue(record.ScheduleTopic, int32(level-1)); off > hi {
			return fmt.Errorf("delay offset of level %d is %d, past the schedule queue's max offset %d", level, off, hi)
		}
	}
	ctx := context.Background()
	for range 1000 {
		wait, err := rb.DeliverDelayed(ctx)
		if err != nil {
			return fmt.Errorf("deliver after reopening: %w", err)
		}
		// Manual mode: the deliveries are puts without WAIT, which a
		// SyncFlush store dispatches once they are flushed.
		if err := st.FlushCommitLog(0); err != nil {
			return err
		}
		if _, err := engineops.Of(st).Dispatch(); err != nil {
			return err
		}
		if wait < 0 {
			break
		}
	}
	deliveries := map[string]int{}
	for off := st.MinOffsetInQueue("D", 0); off < st.MaxOffsetInQueue("D", 0); off++ {
		phy, err := st.CommitLogOffsetInQueue("D", 0, off)
		if err != nil {
			return fmt.Errorf("D/0 unit %d: %w", off, err)
		}
		m, err := st.LookMessageByOffset(phy)
		if err != nil {
			return fmt.Errorf("D/0 unit %d at %d: %w", off, phy, err)
		}
		deliveries[string(m.Body)]++
	}
	for body, res := range r.delayed {
		level := int(res.QueueID) + 1
		switch n := deliveries[body]; {
		case n == 0:
			return fmt.Errorf("acknowledged delayed message %q (level %d, schedule offset %d) never delivered (delay offsets loaded %v, persisted %v, now %v; schedule queue %d..%d; %d deliveries; %v)",
				body, level, res.QueueOffset, maps.Clone(loaded), r.persistedD, rb.Schedule().Offsets(),
				st.MinOffsetInQueue(record.ScheduleTopic, res.QueueID), st.MaxOffsetInQueue(record.ScheduleTopic, res.QueueID), len(deliveries), deliveries)
		case n > 2:
			return fmt.Errorf("delayed message %q delivered %d times", body, n)
		case n == 2 && res.QueueOffset < loaded[level]:
			return fmt.Errorf("delayed message %q (level %d, schedule offset %d) delivered twice, though the delay offset %d persisted before the cut covered it",
				body, level, res.QueueOffset, loaded[level])
		}
	}
	return nil
}
