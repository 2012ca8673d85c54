package server

import (
	"time"

	"github.com/rocketstore/rocketstore/remoting"
)

// ConnectionKeys are the keys of the remoting transport's receive budget
// and per-connection limits (remoting.Options). RocketMQ has no such keys
// (its Netty server bounds a frame with serverSocketMaxFrameSize and an
// idle channel with serverChannelMaxIdleTimeSeconds, which FileConfig
// takes too); these are rocketstore's names, in broker.conf's style:
// durations in milliseconds, sizes in bytes. Absent keys keep the
// defaults shown.
//
//	serverReceiveBudgetWaitMillis: 5000   # a frame waits this long for receive budget, then its connection is closed
//	serverLargeFrameSize: 1048576         # frames over this are large
//	serverSmallFrameReserve: 33554432     # budget only small frames may hold (default a quarter of serverMaxReceiveBytes)
//	serverStrangerReceiveBytes: 33554432  # budget frames still arriving on connections without a valid request may hold (default 2 × serverSocketMaxFrameSize)
//	serverFrameTimeoutMillis: 30000       # the rest of a started frame must arrive within this
//	serverMaxConcurrentRequestsPerConnection: 64 # handlers of one connection; beyond, it is not read
//	serverWriteTimeoutMillis: 30000       # a socket write blocked this long closes the connection
//	serverWriteQueueLen: 1024             # frames waiting to be written on one connection
//	serverWriteQueueBytes: 67108864       # bytes waiting to be written on one connection
type ConnectionKeys struct {
	ServerReceiveBudgetWaitMillis            *int64 `yaml:"serverReceiveBudgetWaitMillis"`
	ServerLargeFrameSize                     *int   `yaml:"serverLargeFrameSize"`
	ServerSmallFrameReserve                  *int64 `yaml:"serverSmallFrameReserve"`
	ServerStrangerReceiveBytes               *int64 `yaml:"serverStrangerReceiveBytes"`
	ServerFrameTimeoutMillis                 *int64 `yaml:"serverFrameTimeoutMillis"`
	ServerMaxConcurrentRequestsPerConnection *int   `yaml:"serverMaxConcurrentRequestsPerConnection"`
	ServerWriteTimeoutMillis                 *int64 `yaml:"serverWriteTimeoutMillis"`
	ServerWriteQueueLen                      *int   `yaml:"serverWriteQueueLen"`
	ServerWriteQueueBytes                    *int64 `yaml:"serverWriteQueueBytes"`
}

// apply sets the keys present in o; remoting.Options.Validate (through
// Config.Validate) rejects negative values and budgets too small for a
// frame.
func (k ConnectionKeys) apply(o *remoting.Options) {
	ms := func(v int64) time.Duration { return time.Duration(v) * time.Millisecond }
	applyKey(&o.ReceiveBudgetWait, k.ServerReceiveBudgetWaitMillis, ms)
	applyKey(&o.LargeFrameSize, k.ServerLargeFrameSize, asIs[int])
	applyKey(&o.SmallFrameReserve, k.ServerSmallFrameReserve, asIs[int64])
	applyKey(&o.StrangerReceiveBytes, k.ServerStrangerReceiveBytes, asIs[int64])
	applyKey(&o.FrameTimeout, k.ServerFrameTimeoutMillis, ms)
	applyKey(&o.MaxConcurrentRequests, k.ServerMaxConcurrentRequestsPerConnection, asIs[int])
	applyKey(&o.WriteTimeout, k.ServerWriteTimeoutMillis, ms)
	applyKey(&o.WriteQueueLen, k.ServerWriteQueueLen, asIs[int])
	applyKey(&o.WriteQueueBytes, k.ServerWriteQueueBytes, asIs[int64])
}

// applyKey stores conv(*v) in dst when the key is present.
func applyKey[T, V any](dst *T, v *V, conv func(V) T) {
	if v != nil {
		*dst = conv(*v)
	}
}

func asIs[T any](v T) T { return v }
