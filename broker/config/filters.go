package config

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"sync"

	"github.com/rocketstore/rocketstore/backend"
	"github.com/rocketstore/rocketstore/broker/configfile"
)

// FiltersFile is where RocketMQ's ConsumerFilterManager keeps the SQL92
// filter data of consumer groups.
const FiltersFile = "config/consumerFilter.json"

// ConsumerFilterData is one group's filter for one topic (RocketMQ's
// ConsumerFilterData). The manager keeps each topic's entry as read, so
// fields not listed here survive a round trip.
type ConsumerFilterData struct {
	ConsumerGroup  string `json:"consumerGroup"`
	Topic          string `json:"topic"`
	Expression     string `json:"expression"`
	ExpressionType string `json:"expressionType"`
	BornTime       int64  `json:"bornTime"`
	DeadTime       int64  `json:"deadTime"`
	ClientVersion  int64  `json:"clientVersion"`
}

// filtersJSON is the file: topic → {"topic":..., "groupFilterData": {group: data}}.
type filtersJSON struct {
	FilterDataByTopic map[string]json.RawMessage `json:"filterDataByTopic"`
}

// FilterManager holds consumerFilter.json. rocketstore does not evaluate
// SQL92 filters (enablePropertyFilter is off, as RocketMQ's default), but it
// reads and writes the file so that a RocketMQ store directory round-trips.
type FilterManager struct {
	fs backend.FS
	mu sync.Mutex
	// byTopic keeps each topic's entry as RocketMQ wrote it.
	byTopic map[string]json.RawMessage
}

// LoadFilters reads consumerFilter.json (or its .bak).
func LoadFilters(fs backend.FS) (*FilterManager, error) {
	var f filtersJSON
	if _, err := configfile.LoadLogged(fs, FiltersFile, &f, slog.Default()); err != nil {
		return nil, err
	}
	m := &FilterManager{fs: fs, byTopic: f.FilterDataByTopic}
	if m.byTopic == nil {
		m.byTopic = map[string]json.RawMessage{}
	}
	for topic, raw := range m.byTopic {
		if _, err := decodeTopicFilters(raw); err != nil {
			return nil, fmt.Errorf("%w: %s: topic %q: %w", configfile.ErrCorrupt, FiltersFile, topic, err)
		}
	}
	return m, nil
}

type topicFilters struct {
	Topic           string                        `json:"topic"`
	GroupFilterData map[string]ConsumerFilterData `json:"groupFilterData"`
}

func decodeTopicFilters(raw json.RawMessage) (topicFilters, error) {
	var tf topicFilters
	err := configfile.Decode(raw, &tf)
	return tf, err
}

// Get returns the filter data of group on topic.
func (m *FilterManager) Get(topic, group string) (ConsumerFilterData, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	tf, err := decodeTopicFilters(m.byTopic[topic])
	if err != nil {
		return ConsumerFilterData{}, false
	}
	d, ok := tf.GroupFilterData[group]
	return d, ok
}

// Topics returns how many topics have filter data.
func (m *FilterManager) Topics() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.byTopic)
}

// Save writes the file crash-safely as standard JSON.
func (m *FilterManager) Save() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	return configfile.Save(m.fs, FiltersFile, filtersJSON{FilterDataByTopic: m.byTopic})
}
