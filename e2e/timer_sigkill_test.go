package e2e

import (
	"context"
	"fmt"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
)

// TestTimersSurviveSIGKILL: the official Go client sends timer messages
// (TIMER_DELIVER_MS) to `rocketstore serve` (SYNC_FLUSH,
// timerPrecisionMs 100), the process is killed with SIGKILL before they
// are due and restarted after: every acknowledged timer is consumed
// once, not before its time, and soon after the restart.
func TestTimersSurviveSIGKILL(t *testing.T) {
	t.Parallel()
	start, addr := serveProcess(t, "flushDiskType: SYNC_FLUSH\nmapedFileSizeCommitLog: 1048576\nmessageIndexEnable: false\ntimerPrecisionMs: 100\n")
	srv := start()
	p := newProducer(t, addr)
	due := map[string]int64{}
	acked := map[string]bool{}
	var last int64
	for i := range 200 {
		k := strconv.Itoa(i)
		at := time.Now().Add(3*time.Second + time.Duration(i)*10*time.Millisecond).UnixMilli()
		m := primitive.NewMessage("TopicTimerKill", []byte(fmt.Sprintf("body-%d", i)))
		m.WithProperty("seq", k)
		m.WithProperty("TIMER_DELIVER_MS", strconv.FormatInt(at, 10))
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		r, err := p.SendSync(ctx, m)
		cancel()
		if err == nil && r.Status == primitive.SendOK {
			acked[k], due[k], last = true, at, max(last, at)
		}
	}
	if len(acked) == 0 {
		t.Fatal("no timer send acknowledged")
	}
	if err := srv.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	srv.Wait()
	// The broker stays down until every timer is due.
	time.Sleep(time.Until(time.UnixMilli(last + 500)))
	restarted := time.Now().UnixMilli()
	srv = start()
	defer func() {
		srv.Process.Signal(syscall.SIGTERM)
		srv.Wait()
	}()
	col, c := collect(t, consumerOpts(addr, "GroupTimerKill"), "TopicTimerKill", consumer.MessageSelector{})
	defer c.Shutdown()
	if lost := col.waitForKeys(t, 60*time.Second, acked); len(lost) > 0 {
		t.Fatalf("%d of %d acknowledged timers not consumed after SIGKILL and restart: %v", len(lost), len(acked), lost)
	}
	col.mu.Lock()
	defer col.mu.Unlock()
	for k := range acked {
		offsets := map[string]bool{}
		for _, m := range col.msgs[k] {
			offsets[fmt.Sprintf("%d/%d", m.Queue.QueueId, m.QueueOffset)] = true
			if m.StoreTimestamp < due[k] {
				t.Errorf("timer %s delivered at %d, %d ms before its time", k, m.StoreTimestamp, due[k]-m.StoreTimestamp)
			}
			if late := m.StoreTimestamp - restarted; late > 30_000 {
				t.Errorf("timer %s delivered %d ms after the restart", k, late)
			}
		}
		if len(offsets) != 1 {
			t.Errorf("timer %s stored %d times: %v", k, len(offsets), offsets)
		}
	}
	t.Logf("%d timers acknowledged before the kill, all delivered once after the restart", len(acked))
}
