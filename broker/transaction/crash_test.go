package transaction

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/rocketstore/rocketstore/internal/engineops"

	"pgregory.net/rapid"

	"github.com/rocketstore/rocketstore/crashsim"
	"github.com/rocketstore/rocketstore/engine"
	"github.com/rocketstore/rocketstore/internal/hooks"
)

// txModel is what the producer knows of one transaction.
type txModel struct {
	half    *engine.MessageExt
	intent  int32 // 0 undecided, TypeCommit or TypeRollback
	ended   bool  // End answered SUCCESS
	checked int
}

// txMachine drives a service through prepares, END_TRANSACTIONs, check
// passes answered by the producer, power cuts (every put is synced, as
// with SYNC_FLUSH) and power cuts between a commit's two writes.
type txMachine struct {
	e    *env
	txs  map[string]*txModel
	keys []string
}

func (m *txMachine) prepare(t *rapid.T) {
	k := fmt.Sprintf("k%d", len(m.keys))
	_, half := m.e.prepare(k)
	m.txs[k] = &txModel{half: half}
	m.keys = append(m.keys, k)
}

func (m *txMachine) pick(t *rapid.T) *txModel {
	if len(m.keys) == 0 {
		t.Skip("no transaction")
	}
	return m.txs[rapid.SampledFrom(m.keys).Draw(t, "tx")]
}

func (m *txMachine) endTx(t *rapid.T, tm *txModel, half *engine.MessageExt, how int32) {
	if tm.intent == 0 {
		tm.intent = how
	}
	r := m.e.svc.End(context.Background(), endReq(half, tm.intent))
	if r.Code != CodeSuccess {
		t.Fatalf("End(%d) of %s: %+v", tm.intent, half.Properties["key"], r)
	}
	tm.ended = true
}

// decide is the producer's END_TRANSACTION after its local transaction,
// with the first send's offsets (possibly after check copies).
func (m *txMachine) decide(t *rapid.T) {
	tm := m.pick(t)
	how := rapid.SampledFrom([]int32{TypeCommit, TypeRollback}).Draw(t, "how")
	m.endTx(t, tm, tm.half, how)
}

// check advances the clock and runs a pass; the producer answers each
// check-back from its decision, or decides now, or stays unknown.
func (m *txMachine) check(t *rapid.T) {
	m.e.advance(time.Duration(rapid.IntRange(0, 10_000).Draw(t, "advance ms")) * time.Millisecond)
	if _, err := m.e.svc.Check(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, c := range m.e.chk.take() {
		tm := m.txs[c.Properties["key"]]
		if tm.ended {
			t.Fatalf("%s checked back after its END_TRANSACTION succeeded", c.Properties["key"])
		}
		tm.checked++
		if tm.intent == 0 {
			tm.intent = rapid.SampledFrom([]int32{0, TypeCommit, TypeRollback}).Draw(t, "answer")
		}
		if tm.intent != 0 {
			m.endTx(t, tm, c, tm.intent)
		}
	}
}

func (m *txMachine) powerCut(t *rapid.T) { m.e.powerCut() }

// commitCut commits with a power cut between the real message and the op
// record.
func (m *txMachine) commitCut(t *rapid.T) {
	tm := m.pick(t)
	if tm.ended {
		t.Skip("ended")
	}
	tm.intent = TypeCommit
	m.e.svc.afterFinalPut = func() { engineops.Of(m.e.store).Abandon() }
	m.e.svc.End(context.Background(), endReq(tm.half, TypeCommit))
	m.e.svc.Close()
	m.e.store = nil
	m.e.reboot()
	tm.ended = true // the real message is durable: it must count as committed
}

// invariant: nothing delivered twice, nothing rolled back delivered.
func (m *txMachine) invariant(t *rapid.T) {
	counts := map[string]int{}
	for _, k := range m.e.delivered() {
		counts[k]++
	}
	for k, n := range counts {
		if n > 1 {
			t.Fatalf("%s delivered %d times", k, n)
		}
		if tm := m.txs[k]; tm == nil || tm.intent == TypeRollback || (tm.intent == 0) {
			t.Fatalf("%s delivered without a commit (%+v)", k, tm)
		}
	}
}

// drain: the producer now commits every undecided transaction when it is
// checked back; afterwards each committed one is delivered exactly once,
// each rolled-back one never, and each undecided one was checked back.
func (m *txMachine) drain(t *rapid.T) {
	undecided := map[string]bool{}
	for k, tm := range m.txs {
		if tm.intent == 0 {
			undecided[k] = true
		}
	}
	for i := 0; m.e.svc.Pending() > 0; i++ {
		if i > 10 {
			t.Fatalf("%d transactions still open", m.e.svc.Pending())
		}
		m.e.advance(time.Minute)
		if _, err := m.e.svc.Check(context.Background()); err != nil {
			t.Fatal(err)
		}
		for _, c := range m.e.chk.take() {
			tm := m.txs[c.Properties["key"]]
			tm.checked++
			if tm.intent == 0 {
				tm.intent = TypeCommit
			}
			m.endTx(t, tm, c, tm.intent)
		}
	}
	counts := map[string]int{}
	for _, k := range m.e.delivered() {
		counts[k]++
	}
	for k, tm := range m.txs {
		want := 0
		if tm.intent == TypeCommit {
			want = 1
		}
		if counts[k] != want {
			t.Fatalf("%s (intent %d): delivered %d times, want %d", k, tm.intent, counts[k], want)
		}
		if undecided[k] && tm.checked == 0 {
			t.Fatalf("%s was never checked back", k)
		}
	}
}

// TestTransactionsAcrossPowerCuts: after any sequence of prepares, ends,
// check-backs and power cuts (including one between a commit's two
// writes), a committed transaction's message is delivered exactly once, a
// rolled-back one never, and an undecided one is checked back.
func TestTransactionsAcrossPowerCuts(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		e := &env{t: rt, fs: newCrashFS(rt, nil), chooser: crashsim.RapidChooser{T: rt}, chk: &recorder{}}
		e.clock = clockwork.NewFakeClockAt(time.UnixMilli(1_700_000_000_000))
		e.cfg = Config{Clock: e.clock, Logger: quiet, hooks: hooks.Service{Manual: true},
			CheckMax: 1000}
		e.open()
		defer e.close()
		m := &txMachine{e: e, txs: map[string]*txModel{}}
		rt.Repeat(map[string]func(*rapid.T){
			"prepare":   m.prepare,
			"decide":    m.decide,
			"check":     m.check,
			"powerCut":  m.powerCut,
			"commitCut": m.commitCut,
			"":          m.invariant,
		})
		m.drain(rt)
	})
}
