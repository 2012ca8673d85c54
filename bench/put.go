package bench

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"time"

	"github.com/rocketstore/rocketstore/engine"
	"github.com/rocketstore/rocketstore/record"
)

// Topic is the topic every workload writes.
const Topic = "bench"

// props are the properties of every benchmark message: a tag, as nearly
// every RocketMQ producer sets one and consumers filter on it. The
// messages carry them encoded (encodedProps), as the broker passes a
// client's property string to the store; BenchmarkPutMapProperties
// measures the map form a library user may set instead.
var (
	props        = map[string]string{"TAGS": "TagA"}
	encodedProps = record.AppendProperties(nil, props)
)

// storeConfig is the engine configuration of the benchmark stores:
// RocketMQ's defaults except the file size and a silent logger.
func (e env) storeConfig(flush engine.FlushDiskType) engine.Config {
	return engine.Config{CommitLogFileSize: e.spec.CommitLogFileSize, FlushDiskType: flush,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
}

// FlushName names a flush type in results.
func FlushName(f engine.FlushDiskType) string {
	if f == engine.SyncFlush {
		return "sync"
	}
	return "async"
}

// newMessage returns a message for queue q with a body of n bytes.
func newMessage(q int, n int) *engine.Message {
	body := make([]byte, n)
	for i := range body {
		body[i] = byte('a' + i%26)
	}
	return &engine.Message{Topic: Topic, QueueID: int32(q), Body: body, EncodedProperties: encodedProps}
}

// putRun is the outcome of a put workload, with what its bounds need.
type putRun struct {
	Result
	recSize     int     // bytes per record
	syncBatch   float64 // CommitLog bytes per sync (sync flush)
	syncsPerSec float64
}

// put stores up to msgs messages of body bytes from producers goroutines
// (each on its own queue) for at most maxTime.
func (e env) put(ctx context.Context, backendName string, body, producers int, flush engine.FlushDiskType,
	msgs int, maxTime time.Duration) (putRun, error) {
	if backendName == Mmap {
		e.warmPageCache(int64(msgs) * int64(RecordSize(body)))
	}
	bs, err := e.openStore(backendName, e.storeConfig(flush))
	if err != nil {
		return putRun{}, err
	}
	defer bs.remove()
	if err := warmQueues(ctx, bs, body, producers); err != nil {
		return putRun{}, err
	}
	per := (msgs + producers - 1) / producers
	n, logBytes, elapsed, err := runProducers(ctx, bs, body, producers, per, 128, maxTime)
	if err != nil {
		return putRun{}, err
	}
	return bs.putRun(backendName, body, producers, flush, n, logBytes, elapsed), nil
}

// warmQueues puts one untimed message per queue, which creates the
// CommitLog file and the queues, and resets the sync counter.
func warmQueues(ctx context.Context, bs *benchStore, body, producers int) error {
	for p := 0; p < producers; p++ {
		if _, err := bs.Put(ctx, newMessage(p, body)); err != nil {
			return err
		}
	}
	bs.syncs.reset()
	return nil
}

// runProducers runs producers goroutines, each putting up to per messages
// to its own queue for at most maxTime, checking the clock every
// checkEvery puts, and returns the messages and CommitLog bytes stored and
// the time taken.
func runProducers(ctx context.Context, bs *benchStore, body, producers, per, checkEvery int,
	maxTime time.Duration) (totalN, totalLog int64, elapsed time.Duration, firstErr error) {
	var (
		wg sync.WaitGroup
		mu sync.Mutex
	)
	start := time.Now()
	deadline := start.Add(maxTime)
	for p := 0; p < producers; p++ {
		wg.Add(1)
		go func(p int) {
			defer wg.Done()
			m := newMessage(p, body)
			var n, logBytes int64
			var err error
			for i := 0; i < per; i++ {
				// The deadline is checked after each checkEvery puts,
				// never before the first batch: a producer the scheduler
				// starts late (loaded machine) still measures something
				// instead of reporting 0 msgs.
				if i > 0 && i%checkEvery == 0 && time.Now().After(deadline) {
					break
				}
				var res engine.PutResult
				if res, err = bs.Put(ctx, m); err != nil {
					break
				}
				n++
				logBytes += int64(res.WroteBytes)
			}
			mu.Lock()
			totalN += n
			totalLog += logBytes
			if err != nil && firstErr == nil {
				firstErr = err
			}
			mu.Unlock()
		}(p)
	}
	wg.Wait()
	return totalN, totalLog, time.Since(start), firstErr
}

// putRun describes n messages (logBytes of CommitLog) stored in elapsed,
// with the group-commit batch the store's sync counter saw.
func (bs *benchStore) putRun(backendName string, body, producers int, flush engine.FlushDiskType,
	n, logBytes int64, elapsed time.Duration) putRun {
	r := putRun{Result: Result{Group: GroupPut, Backend: backendName, Body: body, Producers: producers,
		Flush: FlushName(flush), Msgs: n, BodyBytes: n * int64(body), LogBytes: logBytes,
		Seconds: elapsed.Seconds()}}
	r.finish()
	if n > 0 {
		r.recSize = int(logBytes / n)
	}
	if s := bs.syncs.syncs.Load(); s > 0 {
		r.syncBatch = float64(bs.syncs.bytes.Load()) / float64(s)
		r.syncsPerSec = float64(s) / elapsed.Seconds()
	}
	return r
}
