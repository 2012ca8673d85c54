package engine_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rocketstore/rocketstore/internal/clocks/clockstest"
	"github.com/rocketstore/rocketstore/internal/engineops"

	"github.com/spf13/afero"

	"github.com/rocketstore/rocketstore/backend"
	"github.com/rocketstore/rocketstore/backend/memfs"
	"github.com/rocketstore/rocketstore/engine"
	"github.com/rocketstore/rocketstore/internal/hooks"
	"github.com/rocketstore/rocketstore/verify"
)

// crashWithDamagedTail puts three messages to T/0 and then three to T/1,
// syncs everything (CommitLog, ConsumeQueues, checkpoint), dies without
// closing, and flips a bit in the body of T/0's last message: after the
// crash, recovery rebuilds the queues from the CommitLog and skips the
// damaged record, which is proven damage (intact, checkpointed records
// follow it). It returns the store's files and the damaged record's put.
func crashWithDamagedTail(t *testing.T) (afero.Fs, engine.Config, engine.PutResult, []byte) {
	t.Helper()
	afs := afero.NewMemMapFs()
	cfg := hooks.Manual(engine.Config{CommitLogFileSize: 4096, ConsumeQueueUnits: 16,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Clock: clockstest.NewStepping(time.UnixMilli(1_700_000_000_000), 10_000*time.Millisecond)})
	s, err := engine.Open(memfs.New(afs), cfg)
	if err != nil {
		t.Fatal(err)
	}
	var victim engine.PutResult
	for i := range 6 {
		res, err := s.Put(context.Background(), &engine.Message{Topic: "T", QueueID: int32(i / 3), Body: []byte(fmt.Sprintf("message %d", i)),
			Properties: map[string]string{"TAGS": "tagA"}})
		if err != nil {
			t.Fatal(err)
		}
		if i == 2 {
			victim = res
		}
	}
	if _, err := engineops.Of(s).Dispatch(); err != nil {
		t.Fatal(err)
	}
	if err := s.FlushCommitLog(0); err != nil {
		t.Fatal(err)
	}
	if err := engineops.Of(s).FlushConsumeQueues(0); err != nil {
		t.Fatal(err)
	}
	engineops.Of(s).Abandon()
	f, err := afs.OpenFile(fmt.Sprintf("commitlog/%020d", 0), 2, 0)
	if err != nil {
		t.Fatal(err)
	}
	rec := make([]byte, victim.WroteBytes)
	f.ReadAt(rec, victim.WroteOffset)
	at := victim.WroteOffset + int64(bytes.Index(rec, []byte("message 2"))) // in the body
	f.WriteAt([]byte("M"), at)
	f.Close()
	return afs, cfg, victim, rec
}

// TestDamagedLastRecordKeepsItsQueueOffset: when the damaged record was
// its queue's last, setting the queue's next offset from the rebuilt
// ConsumeQueue, which lacks it, would give the next put the damaged
// record's queue offset and two records would claim one offset (a replica
// repaired later holds the damaged one there). The offset must stay
// consumed: a placeholder unit keeps it, consumers skip it, verify reports
// only the damage itself, and all of it survives a restart.
func TestDamagedLastRecordKeepsItsQueueOffset(t *testing.T) {
	afs, cfg, victim, orig := crashWithDamagedTail(t)
	s, err := engine.Open(memfs.New(afs), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if d := s.Recovery().Damaged; len(d) != 1 || d[0].Offset != victim.WroteOffset {
		t.Fatalf("recovery found damage %+v, want the record at %d", d, victim.WroteOffset)
	}
	if got := s.MaxOffsetInQueue("T", 0); got != victim.QueueOffset+1 {
		t.Fatalf("T/0 ends at %d after recovery, want %d (the damaged record's offset kept)", got, victim.QueueOffset+1)
	}
	res, err := s.Put(context.Background(), &engine.Message{Topic: "T", QueueID: 0, Body: []byte("after the crash")})
	if err != nil {
		t.Fatal(err)
	}
	if res.QueueOffset != victim.QueueOffset+1 {
		t.Fatalf("put after recovery took queue offset %d, the damaged record has %d", res.QueueOffset, victim.QueueOffset)
	}
	if _, err := engineops.Of(s).Dispatch(); err != nil {
		t.Fatal(err)
	}
	r, err := s.GetMessage("T", 0, victim.QueueOffset, 32, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Messages) != 1 || r.Messages[0].QueueOffset != res.QueueOffset || r.NextBeginOffset != res.QueueOffset+1 {
		t.Fatalf("get from the damaged offset: %v, %d messages, next %d; want only the new message", r.Status, len(r.Messages), r.NextBeginOffset)
	}
	r.Release()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	rep, err := verify.Run(memfs.New(afs), verify.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range rep.Violations {
		if v.Kind != verify.KindCRC {
			t.Errorf("verify: %v (want only the damaged record's CRC)", v)
		}
	}
	if len(rep.Violations) == 0 {
		t.Error("verify does not report the damaged record")
	}
	s, err = engine.Open(memfs.New(afs), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if got := s.MaxOffsetInQueue("T", 0); got != res.QueueOffset+1 {
		t.Fatalf("T/0 ends at %d after a restart, want %d", got, res.QueueOffset+1)
	}
	// Repaired from a healthy copy, the record takes its own offset back.
	if err := engineops.Of(s).RepairDamaged(map[int64][]byte{victim.WroteOffset: orig}); err != nil {
		t.Fatal(err)
	}
	r, err = s.GetMessage("T", 0, victim.QueueOffset, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Release()
	if len(r.Messages) != 1 || r.Messages[0].CommitLogOffset != victim.WroteOffset {
		t.Fatalf("get of the repaired record: %v, %d messages", r.Status, len(r.Messages))
	}
}

// TestDamagedLastRecordAfterCleanStop: after a clean stop (no abort
// marker) nothing can be torn, so a damaged last record is damage: logged
// at ERROR, kept on disk and skipped, its queue offset kept; the next put
// goes after it. It used to be cut off as a torn write, with a WARN, and
// its queue offset given to the next message; the broken variant (hooks
// TornSyncedTail) does that again and must be caught.
func TestDamagedLastRecordAfterCleanStop(t *testing.T) {
	afs := afero.NewMemMapFs()
	var logs bytes.Buffer
	cfg := hooks.Manual(engine.Config{CommitLogFileSize: 4096, ConsumeQueueUnits: 16,
		Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	s, err := engine.Open(memfs.New(afs), cfg)
	if err != nil {
		t.Fatal(err)
	}
	var victim engine.PutResult
	for i := range 3 {
		if victim, err = s.Put(context.Background(), &engine.Message{Topic: "T", Body: []byte(fmt.Sprintf("message %d", i))}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := engineops.Of(s).Dispatch(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	rec := readAt(t, afs, fmt.Sprintf("commitlog/%020d", 0), victim.WroteOffset, int(victim.WroteBytes))
	writeAt(t, afs, fmt.Sprintf("commitlog/%020d", 0), victim.WroteOffset+int64(bytes.Index(rec, []byte("message 2"))), []byte("M"))

	for _, broken := range []bool{false, true} {
		logs.Reset()
		cfg := cfg
		hooks.EngineOf(&cfg).TornSyncedTail = broken
		err := damagedTailKept(t, memfs.New(copyFs(t, afs)), cfg, victim, &logs)
		t.Logf("TornSyncedTail=%v: %v", broken, err)
		switch {
		case broken && err == nil:
			t.Fatal("with the damaged last record cut off as torn, the test still passed: it proves nothing")
		case !broken && err != nil:
			t.Fatal(err)
		}
	}
}

// damagedTailKept opens the store whose last record, victim, is damaged
// and reports the first way it fails to keep it as damage.
func damagedTailKept(t *testing.T, fs backend.FS, cfg engine.Config, victim engine.PutResult, logs *bytes.Buffer) error {
	t.Helper()
	s, err := engine.Open(fs, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	victimEnd := victim.WroteOffset + int64(victim.WroteBytes)
	if d := s.Recovery().Damaged; len(d) != 1 || d[0].Offset != victim.WroteOffset || d[0].End != victimEnd {
		return fmt.Errorf("recovery found damage %+v, want the record at [%d, %d)", d, victim.WroteOffset, victimEnd)
	}
	if got := s.CommitLog().MaxOffset(); got != victimEnd {
		return fmt.Errorf("the CommitLog ends at %d, want %d (the damaged record kept)", got, victimEnd)
	}
	if !strings.Contains(logs.String(), "level=ERROR") {
		return fmt.Errorf("no ERROR logged:\n%s", logs.String())
	}
	if h := s.Health(); h.DamagedRecords != 1 {
		return fmt.Errorf("health: %d damaged records, want 1", h.DamagedRecords)
	}
	res, err := s.Put(context.Background(), &engine.Message{Topic: "T", Body: []byte("after the restart")})
	if err != nil {
		t.Fatal(err)
	}
	if res.QueueOffset != victim.QueueOffset+1 || res.WroteOffset != victimEnd {
		return fmt.Errorf("put after the restart at queue offset %d, commitlog offset %d; want %d, %d",
			res.QueueOffset, res.WroteOffset, victim.QueueOffset+1, victimEnd)
	}
	if _, err := engineops.Of(s).Dispatch(); err != nil {
		t.Fatal(err)
	}
	r, err := s.GetMessage("T", 0, 0, 32, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Release()
	var got []string
	for _, m := range r.Messages {
		got = append(got, recordBody(m.Record))
	}
	if want := []string{"message 0", "message 1", "after the restart"}; !slices.Equal(got, want) || r.NextBeginOffset != 4 {
		return fmt.Errorf("consumer got %q, next %d; want %q, 4", got, r.NextBeginOffset, want)
	}
	return nil
}

// TestTornTimestampIsNotSynced: a crash tore the last record inside its
// store timestamp (the sector holding the timestamp's last bytes, and the
// ones after it, never reached the disk; the record's last sector did).
// The torn timestamp reads as an earlier time, below the checkpoint's,
// and the record used to pass for a synced, damaged one: kept as damage,
// where recovery without the checkpoint cut it off. It is a torn tail and
// must be cut off; the broken variant (hooks TrustTornTimestamp) keeps it
// and must be caught.
func TestTornTimestampIsNotSynced(t *testing.T) {
	afs := afero.NewMemMapFs()
	cfg := hooks.Manual(engine.Config{CommitLogFileSize: 4096, ConsumeQueueUnits: 16,
		Logger: slog.New(slog.DiscardHandler), Clock: clockstest.NewStepping(time.UnixMilli(1_700_000_000_000), time.Millisecond)})
	s, err := engine.Open(memfs.New(afs), cfg)
	if err != nil {
		t.Fatal(err)
	}
	put := func(s *engine.Store, n int) engine.PutResult {
		t.Helper()
		res, err := s.Put(context.Background(), &engine.Message{Topic: "T", Body: bytes.Repeat([]byte{'x'}, n)})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	first := put(s, 100)
	// The victim's store timestamp (bytes 56-63 of a record with an IPv4
	// born host) starts 6 bytes before a sector's end.
	const victimAt = 512 + 450
	put(s, 100+int(victimAt-2*int64(first.WroteBytes)))
	if _, err := engineops.Of(s).Dispatch(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if s, err = engine.Open(memfs.New(afs), cfg); err != nil {
		t.Fatal(err)
	}
	victim := put(s, 1500)
	if victim.WroteOffset != victimAt {
		t.Fatalf("the victim was written at %d, want %d", victim.WroteOffset, victimAt)
	}
	// Its bytes reach the file; the checkpoint is not written again.
	if err := s.FlushCommitLog(0); err != nil {
		t.Fatal(err)
	}
	engineops.Of(s).Abandon()
	// The sectors from the one after the timestamp's start up to the
	// record's last one are lost (zero, as in a fresh file).
	name := fmt.Sprintf("commitlog/%020d", 0)
	lastSector := (victim.WroteOffset + int64(victim.WroteBytes) - 1) / 512 * 512
	writeAt(t, afs, name, 1024, make([]byte, lastSector-1024))

	for _, broken := range []bool{false, true} {
		cfg := cfg
		hooks.EngineOf(&cfg).TrustTornTimestamp = broken
		s, err := engine.Open(memfs.New(copyFs(t, afs)), cfg)
		if err != nil {
			t.Fatal(err)
		}
		end, damaged := s.CommitLog().MaxOffset(), s.Recovery().Damaged
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		cut := end == victim.WroteOffset && len(damaged) == 0
		t.Logf("TrustTornTimestamp=%v: CommitLog ends at %d, damage %+v", broken, end, damaged)
		switch {
		case broken && cut:
			t.Fatal("with the torn timestamp trusted, the torn record was still cut off: the test proves nothing")
		case !broken && !cut:
			t.Fatalf("the torn last record was kept (CommitLog ends at %d, damage %+v), want it cut off at %d", end, damaged, victim.WroteOffset)
		}
	}
}
