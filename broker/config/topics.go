package config

import (
	"errors"
	"fmt"
	"log/slog"

	"github.com/jonboulle/clockwork"
	"github.com/rocketstore/rocketstore/backend"
	"github.com/rocketstore/rocketstore/internal/clocks"
	"github.com/rocketstore/rocketstore/record"
)

// TopicsFile is the path of the topic table in the store root.
const TopicsFile = "config/topics.json"

// ErrNoTopic reports an operation on a topic that does not exist.
var ErrNoTopic = errors.New("config: topic does not exist")

// TopicOptions are the broker settings the topic table follows.
type TopicOptions struct {
	// Logger receives what loading the file reports (a fallback to its
	// backup); nil means slog.Default().
	Logger *slog.Logger
	// AutoCreateTopicEnable creates TBW102, the template from which sends
	// to unknown topics create them (RocketMQ's default: true).
	AutoCreateTopicEnable bool
	// DefaultTopicQueueNums is TBW102's queue count (8).
	DefaultTopicQueueNums int
	// ScheduleQueueNums is the queue count of SCHEDULE_TOPIC_XXXX (the
	// number of delay levels).
	ScheduleQueueNums int
	// Clock times the data versions (milliseconds); nil means the wall
	// clock.
	Clock clockwork.Clock
	// SingleQueueTopics are created at start with one queue when missing:
	// the trace topic when traceTopicEnable is set, the cluster's reply
	// topic, the transaction topics.
	SingleQueueTopics []string
}

// TopicManager is the topic table (RocketMQ's TopicConfigManager).
type TopicManager struct {
	opts TopicOptions
	t    table[TopicConfig]
}

// LoadTopics loads config/topics.json (or its backup) from fs and adds the
// system topics RocketMQ creates at start when they are missing.
func LoadTopics(fs backend.FS, opts TopicOptions) (*TopicManager, error) {
	m := &TopicManager{opts: opts, t: table[TopicConfig]{fs: fs, file: TopicsFile, key: "topicConfigTable",
		what: "topic", clock: clocks.Or(opts.Clock), errMissing: ErrNoTopic, logger: opts.Logger}}
	if err := m.t.load(NewTopicConfig); err != nil {
		return nil, err
	}
	m.addSystemTopics()
	return m, nil
}

// addSystemTopics adds what TopicConfigManager's constructor adds.
func (m *TopicManager) addSystemTopics() {
	add := func(tc TopicConfig) {
		if _, ok := m.t.entries[tc.TopicName]; !ok {
			m.t.entries[tc.TopicName] = tc
		}
	}
	if m.opts.AutoCreateTopicEnable {
		tc := NewTopicConfig(record.DefaultTopic)
		tc.ReadQueueNums, tc.WriteQueueNums = m.opts.DefaultTopicQueueNums, m.opts.DefaultTopicQueueNums
		tc.Perm = record.PermInherit | record.PermRead | record.PermWrite
		add(tc)
	}
	for _, n := range append([]string{record.SelfTestTopic, record.OffsetMovedEventTopic}, m.opts.SingleQueueTopics...) {
		tc := NewTopicConfig(n)
		tc.ReadQueueNums, tc.WriteQueueNums = 1, 1
		add(tc)
	}
	tc := NewTopicConfig(record.ScheduleTopic)
	tc.ReadQueueNums, tc.WriteQueueNums = m.opts.ScheduleQueueNums, m.opts.ScheduleQueueNums
	add(tc)
}

// Get returns a topic's configuration.
func (m *TopicManager) Get(name string) (TopicConfig, bool) { return m.t.get(name) }

// All returns a copy of the table and its data version.
func (m *TopicManager) All() (map[string]TopicConfig, DataVersion) { return m.t.all() }

// Update creates or replaces a topic, attributes included, and saves the
// table.
func (m *TopicManager) Update(tc TopicConfig) error {
	if err := ValidateTopicConfig(tc); err != nil {
		return err
	}
	return m.t.put(tc.TopicName, tc)
}

// UpdateAndAlter creates or replaces a topic as UPDATE_AND_CREATE_TOPIC
// does: its attributes are the current ones altered by mods (see
// ParseAttributes and AlterAttributes); tc.Attributes is ignored.
func (m *TopicManager) UpdateAndAlter(tc TopicConfig, mods map[string]string) error {
	if err := ValidateTopicConfig(tc); err != nil {
		return err
	}
	m.t.mu.Lock()
	defer m.t.mu.Unlock()
	cur, exists := m.t.entries[tc.TopicName]
	attrs, err := AlterAttributes(!exists, cur.Attributes, mods)
	if err != nil {
		return fmt.Errorf("topic %q: %w", tc.TopicName, err)
	}
	if len(attrs) == 0 {
		attrs = nil
	}
	tc.Attributes = attrs
	m.t.entries[tc.TopicName] = tc
	return m.t.saveLocked()
}

// Delete removes a topic (DELETE_TOPIC_IN_BROKER) and saves the table.
func (m *TopicManager) Delete(name string) error { return m.t.delete(name) }

// CreateInSendMessageBack returns the topic, creating it with the given
// queue count, perm and sysflag if it is missing (RocketMQ's
// createTopicInSendMessageBackMethod, used for retry and DLQ topics).
func (m *TopicManager) CreateInSendMessageBack(topic string, queueNums, perm, sysFlag int) (TopicConfig, error) {
	m.t.mu.Lock()
	defer m.t.mu.Unlock()
	if tc, ok := m.t.entries[topic]; ok {
		return tc, nil
	}
	tc := NewTopicConfig(topic)
	tc.ReadQueueNums, tc.WriteQueueNums, tc.Perm, tc.TopicSysFlag = queueNums, queueNums, perm, sysFlag
	m.t.entries[topic] = tc
	return tc, m.t.saveLocked()
}

// CreateInSendMessage auto-creates topic from the template topic (TBW102)
// for a producer's first send (RocketMQ's createTopicInSendMessageMethod):
// the template must exist and carry record.PermInherit; the topic gets
// min(clientQueueNums, template write queues) queues and the template's
// perm without record.PermInherit. ok is false when the topic cannot be created.
func (m *TopicManager) CreateInSendMessage(topic, template string, clientQueueNums, sysFlag int) (TopicConfig, bool, error) {
	m.t.mu.Lock()
	defer m.t.mu.Unlock()
	if tc, ok := m.t.entries[topic]; ok {
		return tc, true, nil
	}
	def, ok := m.t.entries[template]
	if !ok || def.Perm&record.PermInherit == 0 || (template == record.DefaultTopic && !m.opts.AutoCreateTopicEnable) {
		return TopicConfig{}, false, nil
	}
	n := max(0, min(clientQueueNums, def.WriteQueueNums))
	tc := NewTopicConfig(topic)
	tc.ReadQueueNums, tc.WriteQueueNums, tc.Perm, tc.TopicSysFlag = n, n, def.Perm&^record.PermInherit, sysFlag
	m.t.entries[topic] = tc
	return tc, true, m.t.saveLocked()
}

// ErrBadConfig reports a topic or group configuration that cannot work.
var ErrBadConfig = errors.New("config: bad configuration")

// ValidateTopicConfig checks a topic configuration from a client.
func ValidateTopicConfig(tc TopicConfig) error {
	switch {
	case tc.TopicName == "" || len(tc.TopicName) > 127:
		return fmt.Errorf("%w: topic name %q must be 1..127 bytes", ErrBadConfig, tc.TopicName)
	case tc.ReadQueueNums < 0 || tc.WriteQueueNums < 0 || tc.ReadQueueNums > 65535 || tc.WriteQueueNums > 65535:
		return fmt.Errorf("%w: topic %q: queue counts %d/%d not in 0..65535", ErrBadConfig, tc.TopicName, tc.ReadQueueNums, tc.WriteQueueNums)
	}
	return nil
}
