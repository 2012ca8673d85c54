package bench

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"time"

	"github.com/rocketstore/rocketstore/backend/mmap"
	"github.com/rocketstore/rocketstore/broker"
	"github.com/rocketstore/rocketstore/broker/config"
	"github.com/rocketstore/rocketstore/broker/timer"
	"github.com/rocketstore/rocketstore/engine"
	"github.com/rocketstore/rocketstore/record"
)

// TimerOptions configures the timer exactness workload.
type TimerOptions struct {
	// Count timers are sent at once (100,000), each due at a random time
	// from 2 s after its send to Window (one minute) after it.
	Count  int
	Window time.Duration
	// PrecisionMs is the broker's timerPrecisionMs (1000).
	PrecisionMs int64
	// Dir is the parent of the temporary store (the system's temp dir).
	Dir string
}

func (o TimerOptions) withDefaults() TimerOptions {
	if o.Count == 0 {
		o.Count = 100_000
	}
	if o.Window == 0 {
		o.Window = time.Minute
	}
	if o.PrecisionMs == 0 {
		o.PrecisionMs = timer.DefaultPrecisionMs
	}
	return o
}

// TimerReport is what the timer workload measured. Lateness is the
// delivered message's store time minus the delivery time asked for.
type TimerReport struct {
	Options                   TimerOptions
	Sent, Delivered, Early    int
	Twice, Missing            int
	LatenessMs                [4]int64 // p50, p99, p99.9, max
	SendSeconds               float64
	PeakPending               int64
	PeakStateBytes            int64 // the timer service's in-memory state, estimated
	PeakHeapBytes             uint64
	TimerLogBytes, WheelBytes int64
}

// timerQueues is the queue count of the workload's topic.
const timerQueues = 4

// timerLead is the least time from a send to its delivery time, ms.
const timerLead = 2000

// Timers sends o.Count timer messages through a broker on mmap (in
// process, ASYNC_FLUSH), due over o.Window, reads every delivery from the
// real queues, and reports: all delivered, none early, none twice, the
// lateness distribution and the timer store's footprint.
func Timers(ctx context.Context, o TimerOptions) (*TimerReport, error) {
	o = o.withDefaults()
	dir, err := os.MkdirTemp(o.Dir, "rocketstore-timers-*")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	fsys, err := mmap.New(filepath.Join(dir, "store"))
	if err != nil {
		return nil, err
	}
	b, err := broker.Open(fsys, broker.Config{Store: engine.Config{Logger: quietLog},
		Timer: timer.Config{PrecisionMs: o.PrecisionMs, Logger: quietLog}})
	if err != nil {
		return nil, err
	}
	defer func() { _ = b.Close() }()
	tc := config.NewTopicConfig("TimerBench")
	tc.ReadQueueNums, tc.WriteQueueNums = timerQueues, timerQueues
	if err := b.Topics().Update(tc); err != nil {
		return nil, err
	}
	rep := &TimerReport{Options: o, Sent: o.Count}
	due, err := sendTimers(ctx, b, o, rep)
	if err != nil {
		return nil, err
	}
	late, err := readTimers(ctx, b, o, due, rep)
	if err != nil {
		return nil, err
	}
	slices.Sort(late)
	if n := len(late); n > 0 {
		rep.LatenessMs = [4]int64{late[n/2], late[n*99/100], late[n*999/1000], late[n-1]}
	}
	st := b.Timer().Stats()
	rep.TimerLogBytes, rep.WheelBytes = st.LogBytes, st.WheelBytes
	return rep, nil
}

// sendTimers sends the timers and returns each one's delivery time.
func sendTimers(ctx context.Context, b *broker.Broker, o TimerOptions, rep *TimerReport) ([]int64, error) {
	start := time.Now()
	due := make([]int64, o.Count)
	r := rand.New(rand.NewPCG(1, 2))
	span := max(1, o.Window.Milliseconds()-timerLead)
	for i := range due {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		// Due at least timerLead after its own send: a message sent after
		// its time would count the send's delay as lateness.
		due[i] = time.Now().UnixMilli() + timerLead + r.Int64N(span)
		props := "i\x01" + strconv.Itoa(i) + "\x02" + record.PropertyTimerDeliverMS + "\x01" + strconv.FormatInt(due[i], 10)
		res := b.SendMessage(ctx, &broker.SendRequest{ProducerGroup: "PG", Topic: "TimerBench", QueueID: int32(i % timerQueues),
			Properties: props, Body: []byte("timer")})
		if res.Code != broker.Success {
			return nil, fmt.Errorf("send %d: %v %s", i, res.Code, res.Remark)
		}
	}
	rep.SendSeconds = time.Since(start).Seconds()
	return due, nil
}

// readTimers reads the real queues until every timer came (or the window
// plus a minute passed) and returns the lateness of each delivery.
func readTimers(ctx context.Context, b *broker.Broker, o TimerOptions, due []int64, rep *TimerReport) ([]int64, error) {
	seen := make([]uint8, len(due))
	late := make([]int64, 0, len(due))
	next := make([]int64, timerQueues)
	deadline := time.Now().Add(o.Window + time.Minute)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for rep.Delivered < len(due) && time.Now().Before(deadline) {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-tick.C:
		}
		sampleTimerMemory(b, rep)
		for q := range next {
			for {
				res, err := b.Store().GetMessage("TimerBench", int32(q), next[q], 256, nil)
				if err != nil {
					return nil, err
				}
				for _, v := range res.Messages {
					m, err := record.Decode(v.Record, v.CommitLogOffset, false)
					if err != nil {
						res.Release()
						return nil, err
					}
					i, err := strconv.Atoi(m.Properties["i"])
					if err != nil || i < 0 || i >= len(due) {
						res.Release()
						return nil, fmt.Errorf("delivered message without its index: %v", m.Properties)
					}
					if seen[i]++; seen[i] > 1 {
						rep.Twice++
						continue
					}
					rep.Delivered++
					d := m.StoreTimestamp - due[i]
					if d < 0 {
						rep.Early++
					}
					late = append(late, d)
				}
				n := len(res.Messages)
				if res.Status == engine.Found {
					next[q] = res.NextBeginOffset
				}
				res.Release()
				if n == 0 {
					break
				}
			}
		}
	}
	rep.Missing = len(due) - rep.Delivered
	return late, nil
}

// sampleTimerMemory keeps the peaks of the pending count, the timer
// service's state and the process heap.
func sampleTimerMemory(b *broker.Broker, rep *TimerReport) {
	st := b.Timer().Stats()
	rep.PeakPending = max(rep.PeakPending, st.Pending)
	rep.PeakStateBytes = max(rep.PeakStateBytes, st.MemoryBytes())
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	rep.PeakHeapBytes = max(rep.PeakHeapBytes, ms.HeapInuse)
}

// WriteMarkdown renders the report.
func (r *TimerReport) WriteMarkdown(w io.Writer) error {
	ok := func(b bool) string {
		if b {
			return "yes"
		}
		return "NO"
	}
	o := r.Options
	_, err := fmt.Fprintf(w, `### Timer exactness: %d timers due within %v, timerPrecisionMs %d

| check | result |
|---|---|
| all delivered | %s (%d of %d; %d missing) |
| none early | %s (%d early) |
| none twice | %s (%d duplicates) |
| lateness p50 / p99 / p99.9 / max | %d / %d / %d / %d ms |
| p99 within timerPrecisionMs + 100 ms | %s |
| sends | %.1f s in process |
| peak pending | %d |
| timer state in memory (peak, estimated) | %d bytes |
| process heap in use (peak, the workload's own arrays included) | %.1f MB |
| TimerLog / wheel files | %.1f MB / %.1f MB |
`, o.Count, o.Window, o.PrecisionMs,
		ok(r.Missing == 0), r.Delivered, r.Sent, r.Missing, ok(r.Early == 0), r.Early, ok(r.Twice == 0), r.Twice,
		r.LatenessMs[0], r.LatenessMs[1], r.LatenessMs[2], r.LatenessMs[3], ok(r.LatenessMs[1] <= o.PrecisionMs+100),
		r.SendSeconds, r.PeakPending, r.PeakStateBytes, float64(r.PeakHeapBytes)/1e6,
		float64(r.TimerLogBytes)/1e6, float64(r.WheelBytes)/1e6)
	return err
}

// Passed reports whether every check held.
func (r *TimerReport) Passed() bool {
	return r.Missing == 0 && r.Early == 0 && r.Twice == 0 && r.LatenessMs[1] <= r.Options.PrecisionMs+100
}
