package broker

import (
	"fmt"
	"log/slog"
	"sync"

	"github.com/jonboulle/clockwork"
	"github.com/rocketstore/rocketstore/backend"
	"github.com/rocketstore/rocketstore/broker/config"
	"github.com/rocketstore/rocketstore/broker/configfile"
	"github.com/rocketstore/rocketstore/filter"
	"github.com/rocketstore/rocketstore/filter/sql92"
)

// filterData is one group's SQL92 filter on one topic (RocketMQ's
// ConsumerFilterData) with its compiled expression: compiled once per
// subscription version, reused by every pull.
type filterData struct {
	config.ConsumerFilterData
	compiled *sql92.Expression // nil when the persisted expression no longer compiles
}

func (d *filterData) dead() bool { return d.DeadTime >= d.BornTime && d.DeadTime > 0 }

// consumerFilters is RocketMQ's ConsumerFilterManager without the bloom
// filter bit maps (rocketstore keeps no ConsumeQueueExt): topic → group →
// filter data, persisted in config/consumerFilter.json.
type consumerFilters struct {
	fs    backend.FS
	clock clockwork.Clock // times births and deaths (ms)
	mu    sync.Mutex
	data  map[string]map[string]*filterData
	dirty bool
}

// now is the clock's time in milliseconds.
func (m *consumerFilters) now() int64 { return m.clock.Now().UnixMilli() }

type filterFileJSON struct {
	FilterDataByTopic map[string]*filterTopicJSON `json:"filterDataByTopic"`
}

type filterTopicJSON struct {
	Topic           string                                `json:"topic"`
	GroupFilterData map[string]*config.ConsumerFilterData `json:"groupFilterData"`
}

// loadConsumerFilters reads consumerFilter.json and compiles each
// expression. As in RocketMQ, every loaded consumer is taken for dead
// (deadTime now - 30 s) until its next heartbeat, and an expression that
// does not compile is kept, logged and never matches.
func loadConsumerFilters(fs backend.FS, clock clockwork.Clock, warn func(msg string, args ...any)) (*consumerFilters, error) {
	m := &consumerFilters{fs: fs, clock: clock, data: map[string]map[string]*filterData{}}
	var f filterFileJSON
	if _, err := configfile.LoadLogged(fs, config.FiltersFile, &f, slog.Default()); err != nil {
		return nil, err
	}
	for topic, tf := range f.FilterDataByTopic {
		if tf == nil {
			continue
		}
		for group, d := range tf.GroupFilterData {
			if d == nil {
				continue
			}
			fd := &filterData{ConsumerFilterData: *d}
			var err error
			if fd.compiled, err = sql92.Compile(d.Expression); err != nil || d.ExpressionType != filter.ExpressionTypeSQL92 {
				warn("load consumer filter data", "topic", topic, "group", group, "expression", d.Expression,
					"type", d.ExpressionType, "err", err)
				fd.compiled = nil
			}
			if fd.DeadTime == 0 {
				fd.DeadTime = max(m.now()-30_000, fd.BornTime)
			}
			m.groupMap(topic)[group] = fd
		}
	}
	return m, nil
}

func (m *consumerFilters) groupMap(topic string) map[string]*filterData {
	g := m.data[topic]
	if g == nil {
		g = map[string]*filterData{}
		m.data[topic] = g
	}
	return g
}

// register is FilterDataMapByTopic.register for one subscription: a new
// or newer version replaces the filter (compiled now); an expression that
// does not compile removes it, so that pulls answer FILTER_DATA_NOT_EXIST.
// It reports whether the expression compiled.
func (m *consumerFilters) register(group string, sd *filter.SubscriptionData) error {
	if sd.ExpressionType == "" || sd.ExpressionType == filter.ExpressionTypeTag || sd.SubString == "" {
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	g := m.groupMap(sd.Topic)
	old := g[group]
	if old != nil && sd.SubVersion <= old.ClientVersion {
		if sd.SubVersion == old.ClientVersion && old.dead() {
			old.DeadTime, m.dirty = 0, true
		}
		return nil
	}
	if old != nil && old.Expression == sd.SubString && old.ExpressionType == sd.ExpressionType {
		old.ClientVersion, old.DeadTime, m.dirty = sd.SubVersion, 0, true
		return nil
	}
	compiled, err := compileFilter(sd.ExpressionType, sd.SubString)
	if err != nil {
		if old != nil {
			delete(g, group)
			m.dirty = true
		}
		return err
	}
	g[group] = &filterData{compiled: compiled, ConsumerFilterData: config.ConsumerFilterData{ConsumerGroup: group,
		Topic: sd.Topic, Expression: sd.SubString, ExpressionType: sd.ExpressionType, BornTime: m.now(),
		ClientVersion: sd.SubVersion}}
	m.dirty = true
	return nil
}

// unregister marks a group's filters dead (the group has no client left).
func (m *consumerFilters) unregister(group string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, g := range m.data {
		if d := g[group]; d != nil && !d.dead() {
			d.DeadTime, m.dirty = m.now(), true
		}
	}
}

// get returns the group's filter on topic, or nil.
func (m *consumerFilters) get(topic, group string) *filterData {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.data[topic][group]
}

// filterDataCleanTimeSpan is how long dead filter data is kept (24 h).
const filterDataCleanTimeSpan = 24 * 3600 * 1000

// persist writes the file if anything changed, dropping filters dead for
// more than 24 hours first (ConsumerFilterManager.clean).
func (m *consumerFilters) persist() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.dirty {
		return nil
	}
	f := filterFileJSON{FilterDataByTopic: map[string]*filterTopicJSON{}}
	now := m.now()
	for topic, g := range m.data {
		for group, d := range g {
			if d.dead() && now-d.DeadTime >= filterDataCleanTimeSpan {
				delete(g, group)
				continue
			}
			tf := f.FilterDataByTopic[topic]
			if tf == nil {
				tf = &filterTopicJSON{Topic: topic, GroupFilterData: map[string]*config.ConsumerFilterData{}}
				f.FilterDataByTopic[topic] = tf
			}
			cp := d.ConsumerFilterData
			tf.GroupFilterData[group] = &cp
		}
		if len(g) == 0 {
			delete(m.data, topic)
		}
	}
	if err := configfile.Save(m.fs, config.FiltersFile, f); err != nil {
		return err
	}
	m.dirty = false
	return nil
}

// compileFilter compiles a non-tag expression (FilterFactory: only SQL92
// is known).
func compileFilter(typ, expr string) (*sql92.Expression, error) {
	if typ != filter.ExpressionTypeSQL92 {
		return nil, fmt.Errorf("%w: %s", filter.ErrUnsupportedType, typ)
	}
	return sql92.Compile(expr)
}
