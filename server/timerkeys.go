package server

import (
	"time"

	"github.com/rocketstore/rocketstore/broker"
)

// TimerKeys are the broker.conf keys of RocketMQ 5.x timer messages.
//
//	timerWheelEnable: true      # false: timer messages are refused
//	timerMaxDelaySec: 259200    # a later delivery time is refused (3 days)
//	timerPrecisionMs: 1000      # the wheel's slot; down to 10
type TimerKeys struct {
	TimerWheelEnable *bool  `yaml:"timerWheelEnable"`
	TimerMaxDelaySec *int64 `yaml:"timerMaxDelaySec"`
	TimerPrecisionMs *int64 `yaml:"timerPrecisionMs"`
}

func (k TimerKeys) apply(bc *broker.Config) {
	if k.TimerWheelEnable != nil {
		bc.Timer.Disabled = !*k.TimerWheelEnable
	}
	if k.TimerMaxDelaySec != nil {
		bc.Timer.MaxDelay = time.Duration(*k.TimerMaxDelaySec) * time.Second
	}
	if k.TimerPrecisionMs != nil {
		bc.Timer.PrecisionMs = *k.TimerPrecisionMs
	}
}
