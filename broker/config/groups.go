package config

import (
	"errors"
	"fmt"
	"log/slog"

	"github.com/jonboulle/clockwork"
	"github.com/rocketstore/rocketstore/backend"
	"github.com/rocketstore/rocketstore/internal/clocks"
)

// GroupsFile is the path of the subscription-group table in the store root.
const GroupsFile = "config/subscriptionGroup.json"

// ErrNoGroup reports an operation on a group that does not exist.
var ErrNoGroup = errors.New("config: subscription group does not exist")

// GroupManager is the subscription-group table (RocketMQ's
// SubscriptionGroupManager).
type GroupManager struct {
	autoCreate bool
	t          table[SubscriptionGroupConfig]
}

// LoadGroups loads config/subscriptionGroup.json (or its backup) and adds
// RocketMQ's system groups. autoCreate is RocketMQ's
// autoCreateSubscriptionGroup (default true). logger receives what loading
// reports (a fallback to the backup); nil means slog.Default(). clock
// times the data versions (milliseconds); nil means the wall clock.
func LoadGroups(fs backend.FS, autoCreate bool, clock clockwork.Clock, logger *slog.Logger) (*GroupManager, error) {
	m := &GroupManager{autoCreate: autoCreate, t: table[SubscriptionGroupConfig]{fs: fs, file: GroupsFile,
		key: "subscriptionGroupTable", what: "group", clock: clocks.Or(clock), errMissing: ErrNoGroup, logger: logger}}
	if err := m.t.load(NewSubscriptionGroupConfig); err != nil {
		return nil, err
	}
	for _, name := range systemGroups {
		if _, ok := m.t.entries[name]; !ok {
			m.t.entries[name] = NewSubscriptionGroupConfig(name)
		}
	}
	return m, nil
}

// Find returns a group's configuration, creating it with the defaults when
// it is missing and auto-creation is on (RocketMQ's
// findSubscriptionGroupConfig). ok is false when the group is unknown.
func (m *GroupManager) Find(group string) (SubscriptionGroupConfig, bool, error) {
	m.t.mu.Lock()
	defer m.t.mu.Unlock()
	if g, ok := m.t.entries[group]; ok {
		return g, true, nil
	}
	if !m.autoCreate || group == "" {
		return SubscriptionGroupConfig{}, false, nil
	}
	g := NewSubscriptionGroupConfig(group)
	m.t.entries[group] = g
	return g, true, m.t.saveLocked()
}

// All returns a copy of the table and its data version.
func (m *GroupManager) All() (map[string]SubscriptionGroupConfig, DataVersion) { return m.t.all() }

// Update creates or replaces a group (UPDATE_AND_CREATE_SUBSCRIPTIONGROUP).
func (m *GroupManager) Update(g SubscriptionGroupConfig) error {
	if g.GroupName == "" {
		return fmt.Errorf("%w: empty group name", ErrBadConfig)
	}
	if g.RetryQueueNums < 0 || g.RetryMaxTimes < 0 {
		return fmt.Errorf("%w: group %q: negative retry settings", ErrBadConfig, g.GroupName)
	}
	return m.t.put(g.GroupName, g)
}

// Delete removes a group (DELETE_SUBSCRIPTIONGROUP).
func (m *GroupManager) Delete(group string) error { return m.t.delete(group) }
