package pop

import (
	"context"

	"github.com/rocketstore/rocketstore/broker/config"
	"github.com/rocketstore/rocketstore/record"
)

// deadLetter stores m in the DLQ of group (Config.DeadLetter, or a put to
// %DLQ%group queue 0 with RocketMQ's send-back properties).
func (s *Service) deadLetter(ctx context.Context, group string, m *record.MessageExt) error {
	if s.cfg.DeadLetter != nil {
		return s.cfg.DeadLetter(ctx, group, m)
	}
	props := make(map[string]string, len(m.Properties)+2)
	for k, v := range m.Properties {
		props[k] = v
	}
	if props[record.PropertyRetryTopic] == "" {
		props[record.PropertyRetryTopic] = m.Topic
	}
	if props[record.PropertyOriginMessageID] == "" {
		props[record.PropertyOriginMessageID] = m.MsgID()
	}
	dm := m.Message
	dm.Topic, dm.QueueID, dm.Properties = config.DLQTopic(group), 0, props
	_, err := s.cfg.Put(ctx, &dm)
	return err
}
