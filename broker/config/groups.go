package config

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"sync"

	"github.com/rocketstore/rocketstore/backend"
	"github.com/rocketstore/rocketstore/broker/configfile"
)

// GroupsFile is the path of the subscription-group table in the store root.
const GroupsFile = "config/subscriptionGroup.json"

// ErrNoGroup reports an operation on a group that does not exist.
var ErrNoGroup = errors.New("config: subscription group does not exist")

type groupsJSON struct {
	DataVersion            DataVersion                `json:"dataVersion"`
	SubscriptionGroupTable map[string]json.RawMessage `json:"subscriptionGroupTable"`
}

// GroupManager is the subscription-group table (RocketMQ's
// SubscriptionGroupManager).
type GroupManager struct {
	fs         backend.FS
	autoCreate bool
	now        func() int64

	mu      sync.Mutex
	table   map[string]SubscriptionGroupConfig
	version DataVersion
}

// LoadGroups loads config/subscriptionGroup.json (or its backup) and adds
// RocketMQ's system groups. autoCreate is RocketMQ's
// autoCreateSubscriptionGroup (default true).
func LoadGroups(fs backend.FS, autoCreate bool, now func() int64) (*GroupManager, error) {
	m := &GroupManager{fs: fs, autoCreate: autoCreate, now: now, table: make(map[string]SubscriptionGroupConfig)}
	var f groupsJSON
	if _, err := configfile.LoadLogged(fs, GroupsFile, &f, slog.Default()); err != nil {
		return nil, err
	}
	for name, raw := range f.SubscriptionGroupTable {
		g := NewSubscriptionGroupConfig(name)
		if err := json.Unmarshal(raw, &g); err != nil {
			return nil, fmt.Errorf("%w: %s: group %q: %w", configfile.ErrCorrupt, GroupsFile, name, err)
		}
		m.table[name] = g
	}
	m.version = f.DataVersion
	for _, name := range systemGroups {
		if _, ok := m.table[name]; !ok {
			m.table[name] = NewSubscriptionGroupConfig(name)
		}
	}
	return m, nil
}

// Find returns a group's configuration, creating it with the defaults when
// it is missing and auto-creation is on (RocketMQ's
// findSubscriptionGroupConfig). ok is false when the group is unknown.
func (m *GroupManager) Find(group string) (SubscriptionGroupConfig, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if g, ok := m.table[group]; ok {
		return g, true, nil
	}
	if !m.autoCreate || group == "" {
		return SubscriptionGroupConfig{}, false, nil
	}
	g := NewSubscriptionGroupConfig(group)
	m.table[group] = g
	return g, true, m.saveLocked()
}

// All returns a copy of the table and its data version.
func (m *GroupManager) All() (map[string]SubscriptionGroupConfig, DataVersion) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return maps.Clone(m.table), m.version
}

// Update creates or replaces a group (UPDATE_AND_CREATE_SUBSCRIPTIONGROUP).
func (m *GroupManager) Update(g SubscriptionGroupConfig) error {
	if g.GroupName == "" {
		return fmt.Errorf("%w: empty group name", ErrBadConfig)
	}
	if g.RetryQueueNums < 0 || g.RetryMaxTimes < 0 {
		return fmt.Errorf("%w: group %q: negative retry settings", ErrBadConfig, g.GroupName)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.table[g.GroupName] = g
	return m.saveLocked()
}

// Delete removes a group (DELETE_SUBSCRIPTIONGROUP).
func (m *GroupManager) Delete(group string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.table[group]; !ok {
		return fmt.Errorf("%w: %q", ErrNoGroup, group)
	}
	delete(m.table, group)
	return m.saveLocked()
}

func (m *GroupManager) saveLocked() error {
	m.version = m.version.next(m.now())
	f := groupsJSON{DataVersion: m.version, SubscriptionGroupTable: make(map[string]json.RawMessage, len(m.table))}
	for name, g := range m.table {
		raw, err := json.Marshal(g)
		if err != nil {
			return err
		}
		f.SubscriptionGroupTable[name] = raw
	}
	return configfile.Save(m.fs, GroupsFile, f)
}
