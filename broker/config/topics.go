package config

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"sync"

	"github.com/rocketstore/rocketstore/backend"
	"github.com/rocketstore/rocketstore/broker/configfile"
)

// TopicsFile is the path of the topic table in the store root.
const TopicsFile = "config/topics.json"

// ErrNoTopic reports an operation on a topic that does not exist.
var ErrNoTopic = errors.New("config: topic does not exist")

// TopicOptions are the broker settings the topic table follows.
type TopicOptions struct {
	// AutoCreateTopicEnable creates TBW102, the template from which sends
	// to unknown topics create them (RocketMQ's default: true).
	AutoCreateTopicEnable bool
	// DefaultTopicQueueNums is TBW102's queue count (8).
	DefaultTopicQueueNums int
	// ScheduleQueueNums is the queue count of SCHEDULE_TOPIC_XXXX (the
	// number of delay levels).
	ScheduleQueueNums int
	// Now returns the time in ms, for data versions.
	Now func() int64
	// SingleQueueTopics are created at start with one queue when missing:
	// the trace topic when traceTopicEnable is set, the cluster's reply
	// topic, the transaction topics.
	SingleQueueTopics []string
}

type topicsJSON struct {
	DataVersion      DataVersion                `json:"dataVersion"`
	TopicConfigTable map[string]json.RawMessage `json:"topicConfigTable"`
}

// TopicManager is the topic table (RocketMQ's TopicConfigManager).
type TopicManager struct {
	fs   backend.FS
	opts TopicOptions

	mu      sync.Mutex
	table   map[string]TopicConfig
	version DataVersion
}

// LoadTopics loads config/topics.json (or its backup) from fs and adds the
// system topics RocketMQ creates at start when they are missing.
func LoadTopics(fs backend.FS, opts TopicOptions) (*TopicManager, error) {
	m := &TopicManager{fs: fs, opts: opts, table: make(map[string]TopicConfig)}
	var f topicsJSON
	if _, _, err := configfile.Load(fs, TopicsFile, &f); err != nil {
		return nil, err
	}
	for name, raw := range f.TopicConfigTable {
		tc := NewTopicConfig(name)
		if err := json.Unmarshal(raw, &tc); err != nil {
			return nil, fmt.Errorf("%w: %s: topic %q: %w", configfile.ErrCorrupt, TopicsFile, name, err)
		}
		m.table[name] = tc
	}
	m.version = f.DataVersion
	m.addSystemTopics()
	return m, nil
}

// addSystemTopics adds what TopicConfigManager's constructor adds.
func (m *TopicManager) addSystemTopics() {
	add := func(tc TopicConfig) {
		if _, ok := m.table[tc.TopicName]; !ok {
			m.table[tc.TopicName] = tc
		}
	}
	if m.opts.AutoCreateTopicEnable {
		tc := NewTopicConfig(DefaultTopic)
		tc.ReadQueueNums, tc.WriteQueueNums = m.opts.DefaultTopicQueueNums, m.opts.DefaultTopicQueueNums
		tc.Perm = PermInherit | PermRead | PermWrite
		add(tc)
	}
	for _, n := range append([]string{SelfTestTopic, OffsetMovedEventTopic}, m.opts.SingleQueueTopics...) {
		tc := NewTopicConfig(n)
		tc.ReadQueueNums, tc.WriteQueueNums = 1, 1
		add(tc)
	}
	tc := NewTopicConfig(ScheduleTopic)
	tc.ReadQueueNums, tc.WriteQueueNums = m.opts.ScheduleQueueNums, m.opts.ScheduleQueueNums
	add(tc)
}

// ScheduleTopic is the delay topic (engine.ScheduleTopic).
const ScheduleTopic = "SCHEDULE_TOPIC_XXXX"

// Get returns a topic's configuration.
func (m *TopicManager) Get(name string) (TopicConfig, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	tc, ok := m.table[name]
	return tc, ok
}

// All returns a copy of the table and its data version.
func (m *TopicManager) All() (map[string]TopicConfig, DataVersion) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return maps.Clone(m.table), m.version
}

// Update creates or replaces a topic (UPDATE_AND_CREATE_TOPIC) and saves
// the table.
func (m *TopicManager) Update(tc TopicConfig) error {
	if err := ValidateTopicConfig(tc); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.table[tc.TopicName] = tc
	return m.saveLocked()
}

// Delete removes a topic (DELETE_TOPIC_IN_BROKER) and saves the table.
func (m *TopicManager) Delete(name string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.table[name]; !ok {
		return fmt.Errorf("%w: %q", ErrNoTopic, name)
	}
	delete(m.table, name)
	return m.saveLocked()
}

// CreateInSendMessageBack returns the topic, creating it with the given
// queue count, perm and sysflag if it is missing (RocketMQ's
// createTopicInSendMessageBackMethod, used for retry and DLQ topics).
func (m *TopicManager) CreateInSendMessageBack(topic string, queueNums, perm, sysFlag int) (TopicConfig, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if tc, ok := m.table[topic]; ok {
		return tc, nil
	}
	tc := NewTopicConfig(topic)
	tc.ReadQueueNums, tc.WriteQueueNums, tc.Perm, tc.TopicSysFlag = queueNums, queueNums, perm, sysFlag
	m.table[topic] = tc
	return tc, m.saveLocked()
}

// CreateInSendMessage auto-creates topic from the template topic (TBW102)
// for a producer's first send (RocketMQ's createTopicInSendMessageMethod):
// the template must exist and carry PermInherit; the topic gets
// min(clientQueueNums, template write queues) queues and the template's
// perm without PermInherit. ok is false when the topic cannot be created.
func (m *TopicManager) CreateInSendMessage(topic, template string, clientQueueNums, sysFlag int) (TopicConfig, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if tc, ok := m.table[topic]; ok {
		return tc, true, nil
	}
	def, ok := m.table[template]
	if !ok || def.Perm&PermInherit == 0 || (template == DefaultTopic && !m.opts.AutoCreateTopicEnable) {
		return TopicConfig{}, false, nil
	}
	n := max(0, min(clientQueueNums, def.WriteQueueNums))
	tc := NewTopicConfig(topic)
	tc.ReadQueueNums, tc.WriteQueueNums, tc.Perm, tc.TopicSysFlag = n, n, def.Perm&^PermInherit, sysFlag
	m.table[topic] = tc
	return tc, true, m.saveLocked()
}

func (m *TopicManager) saveLocked() error {
	m.version = m.version.next(m.opts.Now())
	f := topicsJSON{DataVersion: m.version, TopicConfigTable: make(map[string]json.RawMessage, len(m.table))}
	for name, tc := range m.table {
		raw, err := json.Marshal(tc)
		if err != nil {
			return err
		}
		f.TopicConfigTable[name] = raw
	}
	return configfile.Save(m.fs, TopicsFile, f)
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
