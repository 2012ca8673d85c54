package server

import (
	"context"

	"github.com/rocketstore/rocketstore/admin"
	"github.com/rocketstore/rocketstore/remoting"
)

// getTimerMetrics answers GET_TIMER_METRICS (61): the pending timer
// messages of each real topic, as the timer service last published them.
// RocketMQ keeps a per-topic change time; the count's time here is the
// answer's.
func (s *Server) getTimerMetrics(_ context.Context, _ *remoting.Conn, req *remoting.RemotingCommand) (*remoting.RemotingCommand, error) {
	now := s.cfg.Now().UnixMilli()
	tm := admin.TimerMetrics{TimingCount: map[string]admin.TimerMetric{}, DataVersion: admin.DataVersion{Timestamp: now}}
	for topic, n := range s.b.Timer().Pending() {
		tm.TimingCount[topic] = admin.TimerMetric{Count: n, TimeStamp: now}
	}
	return adminBody(req, tm)
}
