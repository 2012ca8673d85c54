package bench

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"time"

	"github.com/rocketstore/rocketstore/backend/mmap"
	"github.com/rocketstore/rocketstore/broker"
	"github.com/rocketstore/rocketstore/broker/config"
	"github.com/rocketstore/rocketstore/broker/timer"
	"github.com/rocketstore/rocketstore/engine"
	"github.com/rocketstore/rocketstore/record"
)

// PendingReport is what the pending-timers workload measured.
type PendingReport struct {
	Count  int
	Window time.Duration
	// SendSeconds and EnqueueSeconds: the sends, then until every one is
	// in the wheel.
	SendSeconds, EnqueueSeconds float64
	// HeapBefore and HeapPending are the process heap in use after a GC,
	// before the sends and with every timer pending.
	HeapBefore, HeapPending uint64
	Stats                   timer.Stats
	// ReopenSeconds is a restart of the broker (clean close, open) and
	// PendingAfter what it counts pending after it.
	ReopenSeconds float64
	PendingAfter  int64
}

// TimersPending sends count timers due over window (from a minute on,
// so that none is delivered meanwhile) and measures what they cost
// pending: the heap, the timer files, and a restart.
func TimersPending(ctx context.Context, count int, window time.Duration, tmp string) (*PendingReport, error) {
	dir, err := os.MkdirTemp(tmp, "rocketstore-timers-pending-*")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	open := func() (*broker.Broker, error) {
		fsys, err := mmap.New(filepath.Join(dir, "store"))
		if err != nil {
			return nil, err
		}
		return broker.Open(fsys, broker.Config{Store: engine.Config{Logger: quietLog}, Timer: timer.Config{Logger: quietLog}})
	}
	b, err := open()
	if err != nil {
		return nil, err
	}
	tc := config.NewTopicConfig("TimerPending")
	tc.ReadQueueNums, tc.WriteQueueNums = timerQueues, timerQueues
	if err := b.Topics().Update(tc); err != nil {
		return nil, err
	}
	rep := &PendingReport{Count: count, Window: window, HeapBefore: heapAfterGC()}
	start := time.Now()
	first := start.Add(time.Minute).UnixMilli()
	for i := range count {
		if ctx.Err() != nil {
			_ = b.Close()
			return nil, ctx.Err()
		}
		at := first + int64(i)*window.Milliseconds()/int64(count)
		res := b.SendMessage(ctx, &broker.SendRequest{ProducerGroup: "PG", Topic: "TimerPending", QueueID: int32(i % timerQueues),
			Properties: record.PropertyTimerDeliverMS + "\x01" + strconv.FormatInt(at, 10), Body: []byte("timer")})
		if res.Code != broker.Success {
			_ = b.Close()
			return nil, fmt.Errorf("send %d: %v %s", i, res.Code, res.Remark)
		}
	}
	rep.SendSeconds = time.Since(start).Seconds()
	for b.Timer().Stats().Pending < int64(count) {
		if ctx.Err() != nil || time.Since(start) > 10*time.Minute {
			_ = b.Close()
			return nil, fmt.Errorf("timers: %d of %d enqueued", b.Timer().Stats().Pending, count)
		}
		time.Sleep(50 * time.Millisecond)
	}
	rep.EnqueueSeconds = time.Since(start).Seconds() - rep.SendSeconds
	rep.HeapPending, rep.Stats = heapAfterGC(), b.Timer().Stats()
	if err := b.Close(); err != nil {
		return nil, err
	}
	t0 := time.Now()
	if b, err = open(); err != nil {
		return nil, err
	}
	rep.ReopenSeconds = time.Since(t0).Seconds()
	rep.PendingAfter = b.Timer().Stats().Pending
	return rep, b.Close()
}

func heapAfterGC() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapInuse
}

// WriteMarkdown renders the report.
func (r *PendingReport) WriteMarkdown(w io.Writer) error {
	_, err := fmt.Fprintf(w, `### Pending timers: %d due over %v

| what | measured |
|---|---|
| sends, in process | %.1f s, then %.1f s until all are in the wheel |
| process heap in use after a GC | %.1f MB before the sends, %.1f MB with all pending |
| timer state in memory (estimated) | %d bytes |
| TimerLog / wheel files | %.1f MB / %.1f MB |
| restart (clean close, open) | %.2f s; %d pending after it |
`, r.Count, r.Window, r.SendSeconds, r.EnqueueSeconds, float64(r.HeapBefore)/1e6, float64(r.HeapPending)/1e6,
		r.Stats.MemoryBytes(), float64(r.Stats.LogBytes)/1e6, float64(r.Stats.WheelBytes)/1e6, r.ReopenSeconds, r.PendingAfter)
	return err
}
