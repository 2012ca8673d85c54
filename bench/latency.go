package bench

import (
	"encoding/binary"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
)

// epoch is the zero of the send timestamps carried in message bodies; a
// monotonic clock, so that latencies never go negative.
var epoch = time.Now()

// Stamp writes the current time into the first 8 bytes of body; Since
// reads it back as the time elapsed since then. The NATS peer uses them
// too, so both stores measure latency the same way.
func Stamp(body []byte) { binary.LittleEndian.PutUint64(body, uint64(time.Since(epoch))) }

// Since returns the time elapsed since Stamp wrote body.
func Since(body []byte) time.Duration {
	return time.Since(epoch) - time.Duration(binary.LittleEndian.Uint64(body))
}

// Histogram records latencies in nanoseconds, 1 ns to 100 s, 3 digits.
type Histogram struct{ h *hdrhistogram.Histogram }

// NewHistogram returns an empty histogram.
func NewHistogram() *Histogram { return &Histogram{hdrhistogram.New(1, 100e9, 3)} }

// Record adds one latency.
func (h *Histogram) Record(d time.Duration) { _ = h.h.RecordValue(max(int64(d), 1)) }

// Latency summarises the histogram in microseconds.
func (h *Histogram) Latency() *Latency {
	us := func(v int64) float64 { return float64(v) / 1e3 }
	return &Latency{Samples: h.h.TotalCount(), P50: us(h.h.ValueAtQuantile(50)), P99: us(h.h.ValueAtQuantile(99)),
		P999: us(h.h.ValueAtQuantile(99.9)), Max: us(h.h.Max())}
}

// Pacer spaces sends at a fixed rate, sleeping when ahead of schedule.
type Pacer struct {
	start    time.Time
	interval time.Duration
	i        int64
}

// NewPacer returns a pacer for rate sends per second.
func NewPacer(rate int) *Pacer {
	return &Pacer{start: time.Now(), interval: time.Second / time.Duration(rate)}
}

// Wait blocks until the next send is due.
func (p *Pacer) Wait() {
	due := p.start.Add(time.Duration(p.i) * p.interval)
	p.i++
	if d := time.Until(due); d > 50*time.Microsecond {
		time.Sleep(d)
	}
}
