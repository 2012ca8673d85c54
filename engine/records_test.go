package engine_test

import (
	"bytes"
	"errors"
	"fmt"
	"testing"

	"github.com/rocketstore/rocketstore/backend"
	"github.com/rocketstore/rocketstore/backend/memfs"
	"github.com/rocketstore/rocketstore/crashsim"
	"github.com/rocketstore/rocketstore/engine"
	"github.com/rocketstore/rocketstore/internal/engineops"
	"github.com/rocketstore/rocketstore/internal/hooks"
)

// recordsConfig is a manual store of replicated records with 4 KiB
// CommitLog files, so that batches end files with BLANK records often.
func recordsConfig(commit int64) engine.Config {
	return engineops.WithRecords(hooks.Manual(engine.Config{CommitLogFileSize: 4096, ConsumeQueueUnits: 64}), commit)
}

func openRecords(t *testing.T, fs backend.FS, commit int64) (*engine.Store, engineops.Ops) {
	t.Helper()
	s, err := engine.Open(fs, recordsConfig(commit))
	if err != nil {
		t.Fatal(err)
	}
	return s, engineops.Of(s)
}

// recordsMsgs returns n messages over two topics and two queues, with
// bodies of varied sizes.
func recordsMsgs(n, seed int) []*engine.Message {
	msgs := make([]*engine.Message, n)
	for i := range msgs {
		k := seed + i
		msgs[i] = &engine.Message{Topic: fmt.Sprintf("t%d", k%2), QueueID: int32(k / 2 % 2),
			Body: bytes.Repeat([]byte{byte('a' + k%26)}, 20+(k*37)%300)}
	}
	return msgs
}

// buildAll builds msgs in as many batches as the file ends need.
func buildAll(t *testing.T, ops engineops.Ops, msgs []*engine.Message) []engine.Built {
	t.Helper()
	var out []engine.Built
	for len(msgs) > 0 {
		b, err := ops.BuildRecords(msgs)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, b)
		msgs = msgs[len(b.Results):]
	}
	return out
}

// commitLogBytes reads the whole written CommitLog.
func commitLogBytes(t *testing.T, ops engineops.Ops) []byte {
	t.Helper()
	b := make([]byte, ops.RecordsEnd())
	if err := ops.ReadRecords(b, 0); err != nil {
		t.Fatal(err)
	}
	return b
}

// queueOffsets returns the queue offsets GetMessage serves for a queue.
func queueOffsets(t *testing.T, s *engine.Store, topic string, q int32) []int64 {
	t.Helper()
	res, err := s.GetMessage(topic, q, 0, 1000, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Release()
	var offs []int64
	for _, m := range res.Messages {
		offs = append(offs, m.QueueOffset)
	}
	return offs
}

// TestRecordsFollowerByteIdentical builds rounds on a leader, appends the
// same bytes on the leader and on a follower, and finds the CommitLogs
// byte-identical, with BLANK records where files end, and the same
// messages served on both once committed.
func TestRecordsFollowerByteIdentical(t *testing.T) {
	leader, lops := openRecords(t, memfs.New(nil), 0)
	defer leader.Close()
	follower, fops := openRecords(t, memfs.New(nil), 0)
	defer follower.Close()
	blanks := 0
	for round := range 12 {
		for _, b := range buildAll(t, lops, recordsMsgs(7, round*7)) {
			if b.Offset != lops.RecordsEnd() {
				t.Fatalf("built at %d, the commitlog ends at %d", b.Offset, lops.RecordsEnd())
			}
			if len(b.Results) < 7 && (b.Offset+int64(len(b.Bytes)))%4096 == 0 {
				blanks++
			}
			if err := lops.AppendRecords(b.Bytes, b.Offset); err != nil {
				t.Fatal(err)
			}
			if err := fops.AppendRecords(b.Bytes, b.Offset); err != nil {
				t.Fatal(err)
			}
		}
	}
	if blanks == 0 {
		t.Fatal("no batch ended a file: the test does not cover BLANK records")
	}
	lb, fb := commitLogBytes(t, lops), commitLogBytes(t, fops)
	if !bytes.Equal(lb, fb) {
		t.Fatalf("leader and follower commitlogs differ (%d and %d bytes)", len(lb), len(fb))
	}
	for _, ops := range []engineops.Ops{lops, fops} {
		if err := ops.SetCommitPoint(ops.RecordsEnd()); err != nil {
			t.Fatal(err)
		}
		if _, err := ops.Dispatch(); err != nil {
			t.Fatal(err)
		}
	}
	for _, topic := range []string{"t0", "t1"} {
		for q := range int32(2) {
			lo, fo := queueOffsets(t, leader, topic, q), queueOffsets(t, follower, topic, q)
			if len(lo) != 21 || fmt.Sprint(lo) != fmt.Sprint(fo) {
				t.Fatalf("%s/%d: leader serves %v, follower %v", topic, q, lo, fo)
			}
			for i, o := range lo {
				if o != int64(i) {
					t.Fatalf("%s/%d: queue offsets %v, want 0..20", topic, q, lo)
				}
			}
		}
	}
	// A follower that becomes leader continues the queue offsets.
	b, err := fops.BuildRecords(recordsMsgs(1, 0))
	if err != nil {
		t.Fatal(err)
	}
	if r := b.Results[0]; r.QueueOffset != 21 || r.WroteOffset != fops.RecordsEnd() {
		t.Fatalf("the follower builds at %d with queue offset %d, want %d and 21", r.WroteOffset, r.QueueOffset, fops.RecordsEnd())
	}
}

// TestRecordsInvisibleUntilCommitted appends records and finds them
// neither dispatched nor readable until the commit point passes them.
func TestRecordsInvisibleUntilCommitted(t *testing.T) {
	s, ops := openRecords(t, memfs.New(nil), 0)
	defer s.Close()
	built := buildAll(t, ops, recordsMsgs(8, 0)) // t0/0 takes the first and the fifth
	for _, b := range built {
		if err := ops.AppendRecords(b.Bytes, b.Offset); err != nil {
			t.Fatal(err)
		}
	}
	first := built[0].Results
	if _, err := ops.Dispatch(); err != nil {
		t.Fatal(err)
	}
	if got := queueOffsets(t, s, "t0", 0); len(got) != 0 {
		t.Fatalf("uncommitted records served: %v", got)
	}
	if _, err := s.LookMessageByOffset(first[0].WroteOffset); !errors.Is(err, engine.ErrNotFound) {
		t.Fatalf("LookMessageByOffset of an uncommitted record: %v, want ErrNotFound", err)
	}
	if n := s.CommitLog().ReadAt(make([]byte, 100), 0); n != 0 {
		t.Fatalf("CommitLog.ReadAt served %d uncommitted bytes", n)
	}
	if got := s.CommitLog().MaxOffset(); got != 0 {
		t.Fatalf("CommitLog.MaxOffset %d before any commit, want 0", got)
	}
	// Committing the first record only makes it alone visible.
	mid := first[1].WroteOffset
	if err := ops.SetCommitPoint(mid); err != nil {
		t.Fatal(err)
	}
	if _, err := ops.Dispatch(); err != nil {
		t.Fatal(err)
	}
	if got := queueOffsets(t, s, "t0", 0); fmt.Sprint(got) != "[0]" {
		t.Fatalf("after committing the first record t0/0 serves %v, want [0]", got)
	}
	if _, err := s.LookMessageByOffset(mid); !errors.Is(err, engine.ErrNotFound) {
		t.Fatalf("LookMessageByOffset past the commit point: %v, want ErrNotFound", err)
	}
	if got := s.CommitLog().MaxOffset(); got != mid {
		t.Fatalf("CommitLog.MaxOffset %d, want the commit point %d", got, mid)
	}
	// A commit point inside a record, or past the written end, is refused;
	// one below the current changes nothing.
	if err := ops.SetCommitPoint(mid + 1); !errors.Is(err, engine.ErrRecords) {
		t.Fatalf("commit point inside a record: %v, want ErrRecords", err)
	}
	if err := ops.SetCommitPoint(ops.RecordsEnd() + 1); !errors.Is(err, engine.ErrRecords) {
		t.Fatalf("commit point past the end: %v, want ErrRecords", err)
	}
	if err := ops.SetCommitPoint(0); err != nil || ops.CommitPoint() != mid {
		t.Fatalf("lower commit point: %v, commit point %d, want nil and %d", err, ops.CommitPoint(), mid)
	}
	if err := ops.SetCommitPoint(ops.RecordsEnd()); err != nil {
		t.Fatal(err)
	}
	if _, err := ops.Dispatch(); err != nil {
		t.Fatal(err)
	}
	if got := queueOffsets(t, s, "t0", 0); fmt.Sprint(got) != "[0 1]" {
		t.Fatalf("after committing everything t0/0 serves %v, want [0 1]", got)
	}
}

// TestRecordsTruncateRollsBackQueueOffsets truncates an uncommitted tail
// and finds the next records built with the queue offsets it took, the
// truncation refused below the commit point and off a record boundary,
// and the truncated bytes gone after a power cut.
func TestRecordsTruncateRollsBackQueueOffsets(t *testing.T) {
	fs, err := crashsim.New(nil, crashsim.Options{})
	if err != nil {
		t.Fatal(err)
	}
	_, ops := openRecords(t, fs, 0)
	var built []engine.Built
	for round := range 6 {
		for _, b := range buildAll(t, ops, recordsMsgs(5, round*5)) {
			if err := ops.AppendRecords(b.Bytes, b.Offset); err != nil {
				t.Fatal(err)
			}
			built = append(built, b)
		}
	}
	if err := ops.SyncRecords(); err != nil {
		t.Fatal(err)
	}
	commit := built[2].Offset
	if err := ops.SetCommitPoint(commit); err != nil {
		t.Fatal(err)
	}
	cut := built[3].Offset
	if err := ops.TruncateRecords(commit - 1); !errors.Is(err, engine.ErrCommitted) {
		t.Fatalf("truncation below the commit point: %v, want ErrCommitted", err)
	}
	if err := ops.TruncateRecords(cut + 1); !errors.Is(err, engine.ErrRecords) {
		t.Fatalf("truncation inside a record: %v, want ErrRecords", err)
	}
	// A build not yet appended is dropped with the tail.
	if _, err := ops.BuildRecords(recordsMsgs(3, 100)); err != nil {
		t.Fatal(err)
	}
	before := commitLogBytes(t, ops)
	if err := ops.TruncateRecords(cut); err != nil {
		t.Fatal(err)
	}
	if end := ops.RecordsEnd(); end != cut {
		t.Fatalf("written end %d after truncating at %d", end, cut)
	}
	again := buildAll(t, ops, recordsMsgs(5, 15))
	if again[0].Offset != cut {
		t.Fatalf("rebuilt at %d, want %d", again[0].Offset, cut)
	}
	for i, r := range again[0].Results {
		if want := built[3].Results[i]; r.QueueOffset != want.QueueOffset || r.Topic != want.Topic || r.QueueID != want.QueueID {
			t.Fatalf("rebuilt message %d: %s/%d queue offset %d, the truncated one had %s/%d %d",
				i, r.Topic, r.QueueID, r.QueueOffset, want.Topic, want.QueueID, want.QueueOffset)
		}
	}
	// Drop the rebuild too, then cut the power: the truncated tail must
	// not come back.
	if err := ops.TruncateRecords(cut); err != nil {
		t.Fatal(err)
	}
	ops.Abandon()
	img, err := crashsim.New(fs.Crash(crashsim.Newest), crashsim.Options{})
	if err != nil {
		t.Fatal(err)
	}
	s2, ops2 := openRecords(t, img, commit)
	defer s2.Close()
	if end := ops2.RecordsEnd(); end != cut {
		t.Fatalf("after a power cut the commitlog ends at %d, the truncation was at %d", end, cut)
	}
	if got := commitLogBytes(t, ops2); !bytes.Equal(got, before[:cut]) {
		t.Fatal("the commitlog before the truncation point changed across the power cut")
	}
	// The records kept past the commit point hold their queue offsets;
	// the truncated ones' are handed out again.
	rebuilt := buildAll(t, ops2, recordsMsgs(5, 15))
	for i, r := range rebuilt[0].Results {
		if want := built[3].Results[i]; r.QueueOffset != want.QueueOffset || r.WroteOffset != want.WroteOffset {
			t.Fatalf("after recovery message %d is built at %d with queue offset %d, want %d and %d",
				i, r.WroteOffset, r.QueueOffset, want.WroteOffset, want.QueueOffset)
		}
	}
}

// TestRecordsRecoveryKeepsUncommittedTail cuts the power with synced
// records past the commit point: recovery keeps them in the CommitLog but
// dispatches none of them until the commit point moves past them.
func TestRecordsRecoveryKeepsUncommittedTail(t *testing.T) {
	fs, err := crashsim.New(nil, crashsim.Options{})
	if err != nil {
		t.Fatal(err)
	}
	_, ops := openRecords(t, fs, 0)
	var built []engine.Built
	for round := range 4 {
		for _, b := range buildAll(t, ops, recordsMsgs(4, round*4)) {
			if err := ops.AppendRecords(b.Bytes, b.Offset); err != nil {
				t.Fatal(err)
			}
			built = append(built, b)
		}
	}
	if err := ops.SyncRecords(); err != nil {
		t.Fatal(err)
	}
	commit := built[1].Offset
	if err := ops.SetCommitPoint(commit); err != nil {
		t.Fatal(err)
	}
	if _, err := ops.Dispatch(); err != nil {
		t.Fatal(err)
	}
	if err := ops.FlushConsumeQueues(0); err != nil {
		t.Fatal(err)
	}
	end := ops.RecordsEnd()
	ops.Abandon()
	for _, given := range []int64{commit, 0} {
		img, err := crashsim.New(fs.Crash(crashsim.Newest), crashsim.Options{})
		if err != nil {
			t.Fatal(err)
		}
		s2, ops2 := openRecords(t, img, given)
		if got := ops2.RecordsEnd(); got != end {
			t.Fatalf("commit point %d: recovered end %d, want %d (the synced records)", given, got, end)
		}
		if _, err := ops2.Dispatch(); err != nil {
			t.Fatal(err)
		}
		want := 0
		for _, b := range built[:1] {
			for _, r := range b.Results {
				if r.Topic == "t0" && r.QueueID == 0 && given > 0 {
					want++
				}
			}
		}
		if got := queueOffsets(t, s2, "t0", 0); len(got) != want {
			t.Fatalf("commit point %d: t0/0 serves %v after recovery, want %d messages", given, got, want)
		}
		if err := ops2.SetCommitPoint(end); err != nil {
			t.Fatal(err)
		}
		if _, err := ops2.Dispatch(); err != nil {
			t.Fatal(err)
		}
		if got := queueOffsets(t, s2, "t0", 0); len(got) != 4 {
			t.Fatalf("commit point %d: t0/0 serves %v once all is committed, want 4 messages", given, got)
		}
		if err := s2.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestRecordsRefusals: a store of replicated records takes no put, a plain
// store no records, and an append must be whole records at the end.
func TestRecordsRefusals(t *testing.T) {
	s, ops := openRecords(t, memfs.New(nil), 0)
	defer s.Close()
	if _, err := s.Put(t.Context(), recordsMsgs(1, 0)[0]); !errors.Is(err, engine.ErrRecords) {
		t.Fatalf("Put on a store of records: %v, want ErrRecords", err)
	}
	b, err := ops.BuildRecords(recordsMsgs(2, 0))
	if err != nil {
		t.Fatal(err)
	}
	if err := ops.AppendRecords(b.Bytes, b.Offset+1); !errors.Is(err, engine.ErrRecords) {
		t.Fatalf("append off the end: %v, want ErrRecords", err)
	}
	if err := ops.AppendRecords(b.Bytes[:len(b.Bytes)-1], b.Offset); !errors.Is(err, engine.ErrRecords) {
		t.Fatalf("append of a torn record: %v, want ErrRecords", err)
	}
	bad := bytes.Clone(b.Bytes)
	bad[len(bad)-1] ^= 1
	if err := ops.AppendRecords(bad, b.Offset); !errors.Is(err, engine.ErrRecords) {
		t.Fatalf("append of a damaged record: %v, want ErrRecords", err)
	}
	if ops.RecordsEnd() != 0 {
		t.Fatalf("refused appends wrote: the end is %d", ops.RecordsEnd())
	}
	plain, err := engine.Open(memfs.New(nil), hooks.Manual(engine.Config{CommitLogFileSize: 4096, ConsumeQueueUnits: 64}))
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	if _, err := engineops.Of(plain).BuildRecords(recordsMsgs(1, 0)); !errors.Is(err, engine.ErrRecords) {
		t.Fatalf("BuildRecords on a plain store: %v, want ErrRecords", err)
	}
	if err := engineops.Of(plain).AppendRecords(b.Bytes, 0); !errors.Is(err, engine.ErrRecords) {
		t.Fatalf("AppendRecords on a plain store: %v, want ErrRecords", err)
	}
}

// TestRecordsForeignAppendDropsBuilds: records another leader built,
// appended where this store had builds pending, drop those builds and take
// the queue offsets from the records.
func TestRecordsForeignAppendDropsBuilds(t *testing.T) {
	a, aops := openRecords(t, memfs.New(nil), 0)
	defer a.Close()
	b, bops := openRecords(t, memfs.New(nil), 0)
	defer b.Close()
	mine, err := aops.BuildRecords(recordsMsgs(3, 0))
	if err != nil {
		t.Fatal(err)
	}
	theirs, err := bops.BuildRecords(recordsMsgs(1, 0))
	if err != nil {
		t.Fatal(err)
	}
	if err := aops.AppendRecords(theirs.Bytes, theirs.Offset); err != nil {
		t.Fatal(err)
	}
	if err := aops.AppendRecords(mine.Bytes, mine.Offset); !errors.Is(err, engine.ErrRecords) {
		t.Fatalf("appending a dropped build: %v, want ErrRecords", err)
	}
	next, err := aops.BuildRecords(recordsMsgs(3, 0))
	if err != nil {
		t.Fatal(err)
	}
	if r := next.Results[0]; r.WroteOffset != int64(len(theirs.Bytes)) || r.QueueOffset != 1 {
		t.Fatalf("next build at %d with queue offset %d, want %d and 1", r.WroteOffset, r.QueueOffset, len(theirs.Bytes))
	}
	if next.Results[1].QueueOffset != 0 {
		t.Fatalf("t1/0 took queue offset %d, want 0 (the dropped build's)", next.Results[1].QueueOffset)
	}
}

// TestRecordsDispatchedByTheServices runs a store of replicated records
// with its services (not in manual mode), under both flush types: records
// committed are dispatched by the reput service once committed and, with
// SyncFlush, synced, whichever comes last.
func TestRecordsDispatchedByTheServices(t *testing.T) {
	for _, flush := range []engine.FlushDiskType{engine.AsyncFlush, engine.SyncFlush} {
		for _, commitFirst := range []bool{false, true} {
			t.Run(fmt.Sprintf("%v/commitFirst=%v", flush, commitFirst), func(t *testing.T) {
				cfg := engineops.WithRecords(engine.Config{CommitLogFileSize: 4096, ConsumeQueueUnits: 64, FlushDiskType: flush}, 0)
				s, err := engine.Open(memfs.New(nil), cfg)
				if err != nil {
					t.Fatal(err)
				}
				defer s.Close()
				ops := engineops.Of(s)
				for round := range 3 {
					for _, b := range buildAll(t, ops, recordsMsgs(8, round*8)) {
						if err := ops.AppendRecords(b.Bytes, b.Offset); err != nil {
							t.Fatal(err)
						}
					}
				}
				end := ops.RecordsEnd()
				steps := []func() error{ops.SyncRecords, func() error { return ops.SetCommitPoint(end) }}
				if commitFirst {
					steps[0], steps[1] = steps[1], steps[0]
				}
				for _, step := range steps {
					if err := step(); err != nil {
						t.Fatal(err)
					}
				}
				if err := s.WaitDispatched(t.Context(), end); err != nil {
					t.Fatal(err)
				}
				if got := queueOffsets(t, s, "t0", 0); len(got) != 6 {
					t.Fatalf("t0/0 serves %v, want 6 messages", got)
				}
			})
		}
	}
}

// TestRecordsConcurrentReaders runs readers beside a replica that builds,
// appends, syncs, commits and truncates its uncommitted tail, with the
// store's services running: no reader ever gets a record at or past the
// commit point (run it with -race).
func TestRecordsConcurrentReaders(t *testing.T) {
	s, err := engine.Open(memfs.New(nil), engineops.WithRecords(engine.Config{CommitLogFileSize: 4096, ConsumeQueueUnits: 64}, 0))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ops := engineops.Of(s)
	done := make(chan struct{})
	errs := make(chan error, 3)
	for r := range 2 {
		go func() {
			for {
				select {
				case <-done:
					errs <- nil
					return
				default:
				}
				res, err := s.GetMessage("t0", int32(r), 0, 64, nil)
				if err != nil {
					errs <- err
					return
				}
				for _, m := range res.Messages {
					if end, commit := m.CommitLogOffset+int64(len(m.Record)), ops.CommitPoint(); end > commit {
						res.Release()
						errs <- fmt.Errorf("served a record ending at %d past the commit point %d", end, commit)
						return
					}
				}
				res.Release()
				if n := s.CommitLog().ReadAt(make([]byte, 64<<10), 0); int64(n) > ops.CommitPoint() {
					errs <- fmt.Errorf("CommitLog.ReadAt served %d bytes past the commit point %d", n, ops.CommitPoint())
					return
				}
			}
		}()
	}
	for round := range 60 {
		for _, b := range buildAll(t, ops, recordsMsgs(4, round*4)) {
			if err := ops.AppendRecords(b.Bytes, b.Offset); err != nil {
				t.Fatal(err)
			}
		}
		if err := ops.SyncRecords(); err != nil {
			t.Fatal(err)
		}
		switch round % 3 {
		case 0:
			if err := ops.SetCommitPoint(ops.RecordsEnd()); err != nil {
				t.Fatal(err)
			}
		case 2:
			if err := ops.TruncateRecords(ops.CommitPoint()); err != nil {
				t.Fatal(err)
			}
		}
	}
	close(done)
	for range 2 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}

// TestRecordsDropBuilds: DropBuilds discards the pending builds at and past
// an offset, giving their queue offsets back, and never touches written
// records: an offset below the written end drops the builds only.
func TestRecordsDropBuilds(t *testing.T) {
	s, ops := openRecords(t, memfs.New(nil), 0)
	defer s.Close()
	first, err := ops.BuildRecords(recordsMsgs(1, 0))
	if err != nil {
		t.Fatal(err)
	}
	if err := ops.AppendRecords(first.Bytes, first.Offset); err != nil {
		t.Fatal(err)
	}
	written := ops.RecordsEnd()
	kept, err := ops.BuildRecords(recordsMsgs(1, 0))
	if err != nil {
		t.Fatal(err)
	}
	dropped, err := ops.BuildRecords(recordsMsgs(1, 0))
	if err != nil {
		t.Fatal(err)
	}
	if err := ops.DropBuilds(dropped.Offset); err != nil {
		t.Fatal(err)
	}
	if err := ops.AppendRecords(kept.Bytes, kept.Offset); err != nil {
		t.Fatalf("the build before the dropped one: %v", err)
	}
	again, err := ops.BuildRecords(recordsMsgs(1, 0))
	if err != nil {
		t.Fatal(err)
	}
	if r, d := again.Results[0], dropped.Results[0]; r.WroteOffset != d.WroteOffset || r.QueueOffset != d.QueueOffset {
		t.Fatalf("build after the drop at %d, queue offset %d; want the dropped build's %d, %d", r.WroteOffset, r.QueueOffset,
			d.WroteOffset, d.QueueOffset)
	}
	end := ops.RecordsEnd()
	if err := ops.DropBuilds(0); err != nil {
		t.Fatal(err)
	}
	if got := ops.RecordsEnd(); got != end || end <= written {
		t.Fatalf("DropBuilds(0) moved the written end from %d to %d", end, got)
	}
	next, err := ops.BuildRecords(recordsMsgs(1, 0))
	if err != nil {
		t.Fatal(err)
	}
	if r, a := next.Results[0], again.Results[0]; r.WroteOffset != a.WroteOffset || r.QueueOffset != a.QueueOffset {
		t.Fatalf("build after DropBuilds(0) at %d, queue offset %d; want %d, %d", r.WroteOffset, r.QueueOffset, a.WroteOffset, a.QueueOffset)
	}
}
