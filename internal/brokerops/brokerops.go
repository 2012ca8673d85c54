// Package brokerops gives the module's own packages the operations of a
// broker.Broker that are not part of its API: abandoning it as a killed
// process would, which the crash tests do before they open its files
// again. Keeping it here keeps the broker's exported surface to what a
// broker user calls.
package brokerops

import (
	"github.com/rocketstore/rocketstore/broker"
	"github.com/rocketstore/rocketstore/internal/brokerops/link"
)

// Abandon stops b as a killed process would: held pulls are released with
// ErrClosed, the services stop, and nothing more is persisted, flushed or
// synced (engineops.Ops.Abandon). On memfs, opening memfs.New(sameAfero)
// afterwards is a power cut. After Abandon every call returns ErrClosed;
// Close does nothing.
func Abandon(b *broker.Broker) { link.Abandon(b) }
