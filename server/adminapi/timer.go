package adminapi

import (
	"context"

	"github.com/rocketstore/rocketstore/admin"
	"github.com/rocketstore/rocketstore/remoting"
)

// getTimerMetrics answers GET_TIMER_METRICS (61): the pending timer
// messages of each real topic, as the timer service last published them.
// RocketMQ keeps a per-topic change time; the count's time here is the
// answer's.
func (a *API) getTimerMetrics(_ context.Context, _ *remoting.Conn, req *remoting.RemotingCommand) (*remoting.RemotingCommand, error) {
	now := a.cfg.Clock.Now().UnixMilli()
	tm := admin.TimerMetrics{TimingCount: map[string]admin.TimerMetric{}, DataVersion: admin.DataVersion{Timestamp: now}}
	for topic, n := range a.b.Timer().Pending() {
		tm.TimingCount[topic] = admin.TimerMetric{Count: n, TimeStamp: now}
	}
	return adminBody(req, tm)
}
