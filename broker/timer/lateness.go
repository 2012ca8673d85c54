package timer

// LatenessBucketsMs are the upper bounds (ms, inclusive) of the buckets
// of Lateness: fine around timerPrecisionMs (100 to 1000 ms), coarse for
// the catch-up after a downtime.
var LatenessBucketsMs = [...]int64{10, 50, 100, 250, 500, 1000, 1500, 2500, 5000, 10_000, 30_000, 60_000, 300_000}

// Lateness is the distribution of the delivered messages' lateness: the
// delivery's time minus its slot's time (the delivery time rounded up to
// timerPrecisionMs; for a time already past when the message was
// enqueued, the slot then being delivered). A fixed array, so that it
// costs nothing per message.
type Lateness struct {
	// Count and SumMs are the deliveries observed and their total
	// lateness.
	Count, SumMs int64
	// Buckets counts the deliveries of each bucket of LatenessBucketsMs
	// (not cumulative); those later than the last bound are Count minus
	// the sum.
	Buckets [len(LatenessBucketsMs)]int64
}

// observe adds a delivery ms late (a negative value, a clock stepped
// back, counts as 0).
func (l *Lateness) observe(ms int64) {
	ms = max(ms, 0)
	l.Count++
	l.SumMs += ms
	for i, b := range LatenessBucketsMs {
		if ms <= b {
			l.Buckets[i]++
			return
		}
	}
}
