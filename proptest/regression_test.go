package proptest

import (
	"bytes"
	"context"
	"errors"
	"strings"
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
// flushed; a power cut loses them (P1). The store prevents it by writing
// the pages of a failed sync over themselves (MappedFile.redirty), so that
// they are dirty again for the next process's recovery sync.
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
// and FlushConsumeQueues must keep failing (returning nil would vouch for
// pages the failed sync may have lost).
func TestRegressionFlushAfterFailedSync(t *testing.T) {
	fs, err := crashsim.New(nil, crashsim.Options{})
	if err != nil {
		t.Fatal(err)
	}
	s, err := engine.Open(fs, tinyConfig(nil))
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

// TestRegressionStaleTailFileBlock: recovery removes a CommitLog file past
// the recovered end that still holds records (its page reached the disk,
// the file before it lost its last page); a later roll creates the file
// again at the same offset, and a power cut brings back, in its
// never-synced page, the freed block of the removed file
// (crashsim.Options.ReuseFreedBlocks, ext4 data=writeback). Its records
// carry the very PHYSICALOFFSET of their new place and a good CRC, so
// recovery would accept them: phantoms (P2; seed 16019615648087664423).
// The store prevents it by zeroing (and syncing) a file before truncation
// removes it.
func TestRegressionStaleTailFileBlock(t *testing.T) {
	opts := crashsim.Options{ReuseFreedBlocks: true}
	cfg := tinyConfig(nil)
	put3 := func(s *engine.Store, b byte) {
		for range 3 { // 1500-byte bodies: the third rolls to file 4096
			if _, err := s.Put(context.Background(), &engine.Message{Topic: "T", Body: bytes.Repeat([]byte{b}, 1500)}); err != nil {
				t.Fatal(err)
			}
		}
	}
	// pages answers the crash's page choices by file, keeps every pending
	// directory operation, and picks freed block k for a stale page.
	pages := func(byFile map[string]int, k int) crashsim.Chooser {
		return chooserFunc(func(n int, what string) int {
			switch {
			case strings.HasPrefix(what, "keep "):
				return crashsim.Persisted
			case strings.HasPrefix(what, "stale block in "):
				return k
			case strings.HasPrefix(what, "page "):
				for f, c := range byFile {
					if strings.HasPrefix(what, "page "+f+"@") {
						return c
					}
				}
			}
			return 0
		})
	}
	fs1, err := crashsim.New(nil, opts)
	if err != nil {
		t.Fatal(err)
	}
	s1, err := engine.Open(fs1, cfg)
	if err != nil {
		t.Fatal(err)
	}
	put3(s1, 1)
	img := fs1.Crash(pages(map[string]int{"commitlog/00000000000000000000": crashsim.PageOld,
		"commitlog/00000000000000004096": crashsim.PageNew}, 0))
	fs2, err := crashsim.New(img, opts)
	if err != nil {
		t.Fatal(err)
	}
	s2, err := engine.Open(fs2, cfg) // the CommitLog is empty: file 4096 goes
	if err != nil {
		t.Fatal(err)
	}
	if s2.CommitLog().MaxOffset() != 0 {
		t.Fatalf("recovered end %d, want 0", s2.CommitLog().MaxOffset())
	}
	put3(s2, 2) // file 4096 again, never synced
	for k := 0; k <= fs2.FreedPages(); k++ {
		img := fs2.Crash(pages(map[string]int{"commitlog/00000000000000000000": crashsim.PageNew,
			"commitlog/00000000000000004096": crashsim.PageOld}, k))
		fs3, err := crashsim.New(img, opts)
		if err != nil {
			t.Fatal(err)
		}
		s3, err := engine.Open(fs3, cfg)
		if err != nil {
			t.Fatal(err)
		}
		if end := s3.CommitLog().MaxOffset(); end != 4096 {
			t.Fatalf("freed block %d of %d: recovered end %d, want 4096 (file 4096 never reached the disk)", k, fs2.FreedPages(), end)
		}
		s3.Abandon()
	}
	s2.Abandon()
	s1.Abandon()
}

// TestRegressionStaleConsumeQueueBlock runs the state machine with freed
// blocks exposed in every file, ConsumeQueues included, and without
// retention. A never-synced ConsumeQueue page that comes back holding the
// units of another (removed) queue file must not be kept by recovery, its
// units pointing at other queues' records (P3/P5; the shrunk case, seed
// 12111522304324246771, replays from testdata/rapid): after an abnormal
// exit recovery checks each kept tail unit against the record it points
// at. Units pointing below the CommitLog minimum cannot be
// checked that way; TestCrashStateMachine covers them, with retention
// (see reuseFreedBlocks).
func TestRegressionStaleConsumeQueueBlock(t *testing.T) {
	var stats counters
	checkShare(t, 0.1, func(rt *rapid.T) {
		st := drawSetup(rt)
		st.fsOpts = crashsim.Options{ReuseFreedBlocks: true}
		st.noRetention = true
		runMachine(rt, st, &stats)
	})
	t.Logf("executed: %v", &stats)
}

type chooserFunc func(n int, what string) int

func (c chooserFunc) Choose(n int, what string) int { return c(n, what) }
