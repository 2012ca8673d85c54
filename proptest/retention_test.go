package proptest

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/rocketstore/rocketstore/crashsim"
	"github.com/rocketstore/rocketstore/engine"
	"github.com/rocketstore/rocketstore/internal/hooks"
	"github.com/rocketstore/rocketstore/verify"
)

// pageChooser answers "old" for the never-synced pages of the files old
// names, "new" for every other page, and loses every pending directory
// operation: a power cut after which the disk had written back some pages
// of a queue and not others.
type pageChooser struct{ old func(path string) bool }

func (c pageChooser) Choose(n int, what string) int {
	p, ok := strings.CutPrefix(what, "page ")
	if !ok {
		return 0 // a directory operation: lost
	}
	if at := strings.LastIndexByte(p, '@'); at >= 0 && c.old(p[:at]) {
		return crashsim.PageOld
	}
	return n - 1
}

// retentionHoleCase fills three CommitLog files with one queue's messages,
// dispatches them without flushing the ConsumeQueue (the flush service
// lags, or has not run yet), and runs a forced clean round that deletes
// the first CommitLog file; the power goes at the first ConsumeQueue file
// removal, after the CommitLog's removal is durable. The disk had written
// back every page of the queue except its second file's, whose units point
// into the deleted CommitLog file. It returns verify's report of the
// recovered store.
func retentionHoleCase(t *testing.T, cfgHook func(*hooks.Engine)) verify.Report {
	t.Helper()
	fs, err := crashsim.New(nil, crashsim.Options{})
	if err != nil {
		t.Fatal(err)
	}
	cfg := hooks.Manual(engine.Config{CommitLogFileSize: 4096, ConsumeQueueUnits: 4, Logger: quiet})
	if cfgHook != nil {
		cfgHook(hooks.EngineOf(&cfg))
	}
	s, err := engine.Open(fs, cfg)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; s.CommitLog().MaxOffset() < 2*4096+100; i++ {
		body := bytes.Repeat([]byte{byte('a' + i%26)}, 150)
		if _, err := s.Put(context.Background(), &engine.Message{Topic: "T", Body: body}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.Dispatch(); err != nil {
		t.Fatal(err)
	}
	if err := s.FlushCommitLog(0); err != nil {
		t.Fatal(err)
	}
	fs.SetInjector(crashsim.CrashWhen(crashsim.Nth(1, func(op crashsim.Op) bool {
		return op.Kind == crashsim.OpRemove && strings.HasPrefix(op.Path, "consumequeue/")
	})))
	rep, err := s.DeleteExpiredFiles(time.Now(), engine.RetentionPolicy{MaxFilesPerRound: 1}, true)
	if !fs.Frozen() {
		t.Fatalf("the clean round finished without removing a consume queue file (%+v, %v)", rep, err)
	}
	s.Abandon()
	secondCQFile := fmt.Sprintf("consumequeue/T/0/%020d", 4*engine.CQUnitSize)
	img := fs.Crash(pageChooser{old: func(p string) bool { return p == secondCQFile }})
	rfs, err := crashsim.New(img, crashsim.Options{})
	if err != nil {
		t.Fatal(err)
	}
	r, err := engine.Open(rfs, hooks.Manual(engine.Config{CommitLogFileSize: 4096, ConsumeQueueUnits: 4, Logger: quiet}))
	if err != nil {
		t.Fatalf("recovery: %v", err)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	vr, err := verify.Run(rfs, verify.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return vr
}

// TestRetentionSyncsQueuesBeforeDeletingCommitLog: a clean round deleted
// CommitLog files whose units were not yet synced, and a power cut then
// brought the ConsumeQueue back with a hole of zero units among durable
// ones (verify: "units after the end of the queue's data"; in
// TestPowerCutUnderConcurrentLoad with retention about one cut in eighty).
// Recovery trusts units below its scan start, and once the CommitLog file
// the checkpoint named is deleted, the checkpoint no longer bounds them.
// Fails until a clean round syncs the ConsumeQueues before it deletes
// CommitLog files.
func TestRetentionSyncsQueuesBeforeDeletingCommitLog(t *testing.T) {
	if rep := retentionHoleCase(t, nil); !rep.OK() {
		t.Fatalf("verify after recovery:\n%s\n%v", rep.Summary(), rep.Violations)
	}
}

// TestBrokenVariantNoRetentionQueueFlush shows the sync of the queues
// before a clean round deletes CommitLog files necessary: without it the
// same power cut leaves a queue with a hole, which verify reports.
func TestBrokenVariantNoRetentionQueueFlush(t *testing.T) {
	rep := retentionHoleCase(t, func(h *hooks.Engine) { h.NoRetentionQueueFlush = true })
	if rep.OK() {
		t.Fatal("verify found nothing wrong with retention deleting CommitLog files before syncing the queues")
	}
	for _, v := range rep.Violations {
		if v.Kind == verify.KindGap {
			t.Logf("caught: %v", v)
			return
		}
	}
	t.Fatalf("verify failed without a queue gap: %v", rep.Violations)
}
