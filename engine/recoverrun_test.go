package engine

import (
	"errors"
	"slices"
	"testing"

	"pgregory.net/rapid"

	"github.com/rocketstore/rocketstore/backend/memfs"
	"github.com/rocketstore/rocketstore/dispatch"
	"github.com/rocketstore/rocketstore/record"
)

// dispatchRecovered's staged runs (putStagedRun) leave exactly what
// dispatching the same records one at a time leaves: the same count and
// error, the same units in every queue, the same maxPhysicOffset and
// checkpoint logics time, and the same records seen by the other
// dispatchers. The records are runs of two queues with, now and then, a
// queue index that skips one (a gap: an error), a record at or below the
// queue's maxPhysicOffset (a replay: skipped), a prepared transaction (not
// dispatched), a same-queue hint left unset, queue files of 64 units, runs
// past the stage's buffer, and another dispatcher that sees every record
// and may fail at any one.
func TestStagedRunsMatchUnitByUnit(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		type queue struct {
			topic string
			id    int32
		}
		queues := []queue{{"ta", 0}, {"tb", 0}}
		n := rapid.IntRange(1, 2500).Draw(t, "records")
		// Frequent switches make the queues' next indexes meet: a record
		// of the other queue then looks like the run's next one but for
		// the hint.
		switchEvery := rapid.IntRange(1, 20).Draw(t, "switch every")
		reqs := make([]dispatchRequest, 0, n)
		same := make([]bool, 0, n)
		next := map[queue]int64{}
		maxPhy := map[queue]int64{}
		off := int64(0)
		q := 0
		for i := range n {
			if i > 0 && rapid.IntRange(0, switchEvery).Draw(t, "switch") == 0 {
				q = 1 - q
			}
			qq := queues[q]
			size := int32(rapid.IntRange(100, 300).Draw(t, "size"))
			r := dispatchRequest{Topic: []byte(qq.topic), QueueID: qq.id, CommitLogOffset: off, MsgSize: size,
				TagsCode: int64(i), StoreTimestamp: int64(1000 + i), ConsumeQueueOffset: next[qq]}
			switch rapid.IntRange(0, 200).Draw(t, "oddity") {
			case 0:
				r.ConsumeQueueOffset++ // a gap
			case 1:
				if maxPhy[qq] > 0 { // a replay of an earlier record of the queue
					r.CommitLogOffset, r.MsgSize = maxPhy[qq]-int64(size), size
				}
			case 2:
				r.SysFlag = record.TransactionPrepared
			}
			if r.CommitLogOffset == off {
				off += int64(size)
			}
			if r.Dispatchable() && r.CommitLogOffset+int64(r.MsgSize) > maxPhy[qq] {
				next[qq] = r.ConsumeQueueOffset + 1
				maxPhy[qq] = r.CommitLogOffset + int64(r.MsgSize)
			}
			s := i > 0 && reqs[i-1].QueueID == r.QueueID && string(reqs[i-1].Topic) == string(r.Topic)
			if s && rapid.IntRange(0, 50).Draw(t, "hint dropped") == 0 {
				s = false
			}
			reqs = append(reqs, r)
			same = append(same, s)
		}
		// Another dispatcher (as the broker's arrival listener) sees
		// every record; now and then it fails at its m-th call.
		failAt := -1
		if rapid.IntRange(0, 4).Draw(t, "dispatcher fails") == 0 {
			failAt = rapid.IntRange(0, n-1).Draw(t, "failing call")
		}
		var chunks []int
		for left := n; left > 0; {
			c := min(left, rapid.IntRange(1, 600).Draw(t, "chunk"))
			chunks = append(chunks, c)
			left -= c
		}

		type outcome struct {
			n      int
			err    string
			units  map[queue][]Unit
			maxPhy map[queue]int64
			logics int64
			seen   []int64
		}
		run := func(runs bool) outcome {
			cfg := Config{CommitLogFileSize: 1 << 20, ConsumeQueueUnits: 64}
			cfg.hooks.Manual = true
			var o outcome
			calls := 0
			other := dispatch.DispatcherFunc(func(r *dispatch.Request) error {
				calls++
				if calls-1 == failAt {
					return errors.New("other dispatcher failed")
				}
				o.seen = append(o.seen, r.CommitLogOffset)
				return nil
			})
			s, err := Open(memfs.New(nil), cfg, other)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			noStagedRuns = !runs
			defer func() { noStagedRuns = false }()
			s.beginUnitStaging()
			at := 0
			for _, c := range chunks {
				k, err := s.dispatchRecovered(reqs[at:at+c], same[at:at+c])
				o.n += k
				if err != nil {
					o.err = err.Error()
					break
				}
				at += c
			}
			if err := s.endUnitStaging(); err != nil {
				t.Fatal(err)
			}
			o.units, o.maxPhy = map[queue][]Unit{}, map[queue]int64{}
			for _, qq := range queues {
				cq := s.queues.find(qq.topic, qq.id)
				if cq == nil {
					continue
				}
				// From the queue's first index (a first record past
				// index 0 leaves blank units before it).
				for i := cq.minLogicOffset.Load() / CQUnitSize; i < cq.MaxOffsetInQueue(); i++ {
					u, ok := cq.UnitAt(i)
					if !ok {
						t.Fatalf("queue %v: no unit at %d below its end %d", qq, i, cq.MaxOffsetInQueue())
					}
					o.units[qq] = append(o.units[qq], u)
				}
				o.maxPhy[qq] = cq.maxPhysicOffset.Load()
				o.units[qq] = append(o.units[qq], Unit{CommitLogOffset: cq.minLogicOffset.Load()})
			}
			_, o.logics, _ = s.checkpoint.Timestamps()
			return o
		}
		want, got := run(false), run(true)
		if got.n != want.n || got.err != want.err || got.logics != want.logics || !slices.Equal(got.seen, want.seen) {
			t.Fatalf("staged runs: %d records, error %q, logics %d, %d seen by the other; unit by unit: %d, %q, %d, %d",
				got.n, got.err, got.logics, len(got.seen), want.n, want.err, want.logics, len(want.seen))
		}
		for _, qq := range queues {
			if got.maxPhy[qq] != want.maxPhy[qq] || len(got.units[qq]) != len(want.units[qq]) {
				t.Fatalf("queue %v: staged runs %d units to maxPhysicOffset %d, unit by unit %d to %d",
					qq, len(got.units[qq]), got.maxPhy[qq], len(want.units[qq]), want.maxPhy[qq])
			}
			for i := range want.units[qq] {
				if got.units[qq][i] != want.units[qq][i] {
					t.Fatalf("queue %v unit %d: staged runs %+v, unit by unit %+v", qq, i, got.units[qq][i], want.units[qq][i])
				}
			}
		}
	})
}
