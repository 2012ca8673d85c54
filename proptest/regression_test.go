package proptest

import (
	"context"
	"errors"
	"testing"

	"pgregory.net/rapid"

	"github.com/rocketstore/rocketstore/crashsim"
	"github.com/rocketstore/rocketstore/engine"
)

// TestRegressionMkdirParentSync runs the state machine on a strict POSIX
// crash model, where a new directory's entry is durable only after a sync
// of its parent. The engine creates commitlog/ and consumequeue/T/Q/ with
// MkdirAll and syncs only the new directory itself, so a power cut can
// drop a whole directory of synced data (shrunk case: SyncFlush, one put,
// power cut losing "mkdir commitlog": P1 fails). It fails until the
// engine syncs each new directory's parent.
func TestRegressionMkdirParentSync(t *testing.T) {
	var stats counters
	checkShare(t, 0.05, func(rt *rapid.T) {
		st := drawSetup(rt)
		st.fsOpts = crashsim.Options{}
		runMachine(rt, st, &stats)
	})
	t.Logf("executed: %v", &stats)
}

// TestRegressionKillThenFlush: a store dies (kill -9, no power cut) with
// unsynced messages in the page cache; a new store recovers them and
// FlushCommitLog(0) succeeds; then the power goes. Recovery set the
// CommitLog's flushed position to the recovered end without syncing, so
// the flush synced nothing and the acknowledged messages are lost (P1).
// Shrunk by rapid from TestCrashStateMachine (seed 9307288938524330657,
// via a failed Close); this is the minimal form. Fails until recovery
// syncs what it recovers (or leaves flushedWhere at the durable end).
func TestRegressionKillThenFlush(t *testing.T) {
	checkShare(t, 0.05, func(rt *rapid.T) {
		st := setup{fileSize: 4096, cqUnits: 4, flush: engine.AsyncFlush, clockStep: 1}
		m := newMachine(rt, st, &counters{})
		m.put([]*msg{m.newMsg(queueKeys[0], 10)})
		m.kill()
		m.flushCommitLog(0)
		m.crash(false)
	})
}

// TestRegressionFailedSyncDirThenReopen: the directory sync after creating
// the first CommitLog file fails (EIO); the store is restarted, a new
// store adopts the file, writes and flushes messages into it, and the
// power goes. The file's directory entry was never made durable, so the
// flushed messages vanish with it (P1). Shrunk by rapid from
// TestCrashStateMachine (seed 15685530531358880639). Fails until Open
// syncs the directories of the files it loads.
func TestRegressionFailedSyncDirThenReopen(t *testing.T) {
	checkShare(t, 0.05, func(rt *rapid.T) {
		st := setup{fileSize: 4096, cqUnits: 4, flush: engine.AsyncFlush, clockStep: 1}
		m := newMachine(rt, st, &counters{})
		m.fs.SetInjector(crashsim.Fail(crashsim.Nth(1, crashsim.OnKind(crashsim.OpSyncDir)), crashsim.ErrIO))
		m.faultArmed = true
		m.put([]*msg{m.newMsg(queueKeys[0], 5)})
		m.fs.Kill()
		m.resetInjection()
		m.s = m.mustOpen(m.fs, "reopen")
		m.md.failed = false
		m.verify(afterKill)
		m.put([]*msg{m.newMsg(queueKeys[0], 5)})
		m.flushCommitLog(0)
		m.crash(false)
	})
}

// TestRegressionFailedSyncThenKill: a CommitLog sync fails with EIO (Linux
// then marks the pages clean although the disk kept the old content), the
// process dies, a new store recovers the messages from the page cache,
// syncs (which writes nothing: the pages are clean) and reports them
// flushed; a power cut loses them (P1). Shrunk by rapid from
// TestCrashStateMachine once recovery synced what it recovered. Fixed by
// writing the pages of a failed sync over themselves (MappedFile.redirty),
// so that they are dirty again for the next process's recovery sync.
func TestRegressionFailedSyncThenKill(t *testing.T) {
	checkShare(t, 0.05, func(rt *rapid.T) {
		st := setup{fileSize: 4096, cqUnits: 4, flush: engine.AsyncFlush, clockStep: 1}
		m := newMachine(rt, st, &counters{})
		m.put([]*msg{m.newMsg(queueKeys[0], 10)})
		m.fs.SetInjector(crashsim.Fail(crashsim.Nth(1, crashsim.OnKind(crashsim.OpSync)), crashsim.ErrIO))
		m.faultArmed = true
		m.flushCommitLog(0) // fails: the store turns read-only
		if !m.md.failed {
			rt.Fatalf("flush with EIO succeeded")
		}
		m.kill()
		m.flushCommitLog(0)
		m.crash(false)
	})
}

// TestRegressionFlushAfterFailedSync: once a sync failed, FlushCommitLog
// and FlushConsumeQueues must keep failing (they used to return nil,
// vouching for pages the failed sync may have lost).
func TestRegressionFlushAfterFailedSync(t *testing.T) {
	fs, err := crashsim.New(nil, crashsim.Options{})
	if err != nil {
		t.Fatal(err)
	}
	s, err := engine.Open(fs, engine.Config{CommitLogFileSize: 4096, ConsumeQueueUnits: 4, Manual: true, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Put(context.Background(), &engine.Message{Topic: "T", Body: []byte("x")}); err != nil {
		t.Fatal(err)
	}
	fs.SetInjector(crashsim.Fail(crashsim.Nth(1, crashsim.OnKind(crashsim.OpSync)), crashsim.ErrIO))
	if err := s.FlushCommitLog(0); err == nil {
		t.Fatal("flush with EIO succeeded")
	}
	fs.SetInjector(nil)
	if err := s.FlushCommitLog(0); !errors.Is(err, engine.ErrReadOnly) {
		t.Fatalf("second FlushCommitLog = %v, want ErrReadOnly", err)
	}
	if err := s.FlushConsumeQueues(0); !errors.Is(err, engine.ErrReadOnly) {
		t.Fatalf("FlushConsumeQueues = %v, want ErrReadOnly", err)
	}
	s.Abandon()
}
