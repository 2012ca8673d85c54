package broker

import (
	"time"

	"github.com/jonboulle/clockwork"
)

// storeClock is the clock the broker hands its services: it tells the
// store's time (Config.Store.Now, which stamps every record, so that the
// services compare like with like) and runs its timers in real time.
type storeClock struct {
	clockwork.Clock
	now func() int64
}

func newStoreClock(now func() int64) storeClock {
	return storeClock{Clock: clockwork.NewRealClock(), now: now}
}

// Now is the store's time.
func (c storeClock) Now() time.Time { return time.UnixMilli(c.now()) }
