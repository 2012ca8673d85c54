package offset

import (
	"fmt"
	"log/slog"
	"maps"
	"strings"
	"sync"

	"github.com/jonboulle/clockwork"
	"github.com/rocketstore/rocketstore/backend"
	"github.com/rocketstore/rocketstore/broker/configfile"
	"github.com/rocketstore/rocketstore/internal/faultlog"
)

// File is the path of the consumer offset table in the store root.
const File = "config/consumerOffset.json"

// keySeparator joins topic and group in table keys.
const keySeparator = "@"

// Manager is the consumer offset table.
type Manager struct {
	fs     backend.FS
	name   string
	logger *slog.Logger

	mu struct {
		sync.Mutex
		table   map[string]map[int32]int64
		version uint64 // bumped on every change
	}
	saveMu sync.Mutex // serialises Persist
	saved  uint64     // version last persisted; guarded by saveMu

	saveFaults faultlog.Log // PersistScheduled's failures
}

type fileJSON struct {
	OffsetTable map[string]map[int32]int64 `json:"offsetTable"`
}

// Load reads the table from fs (name "" means File), accepting RocketMQ's
// bare integer keys and falling back to the .bak file. A file and backup
// that are both corrupt give an error wrapping configfile.ErrCorrupt.
func Load(fs backend.FS, name string, logger *slog.Logger) (*Manager, error) {
	if name == "" {
		name = File
	}
	m := &Manager{fs: fs, name: name, logger: logger}
	m.saveFaults = faultlog.Log{Logger: logger, Level: slog.LevelError}
	var f fileJSON
	if _, err := configfile.LoadLogged(fs, name, &f, logger); err != nil {
		return nil, err
	}
	m.mu.table = f.OffsetTable
	if m.mu.table == nil {
		m.mu.table = make(map[string]map[int32]int64)
	}
	for k, q := range m.mu.table {
		if q == nil {
			delete(m.mu.table, k)
		}
	}
	return m, nil
}

func key(topic, group string) string { return topic + keySeparator + group }

// Commit stores offset for the group's queue (RocketMQ's commitOffset): an
// unconditional put; a smaller value than the stored one is logged.
func (m *Manager) Commit(clientHost, group, topic string, queueID int32, offset int64) {
	if offset < 0 || queueID < 0 || group == "" || topic == "" {
		// Nothing a consumer could resume from: refused
		// here too, whatever path the commit came by.
		m.logger.Warn("consumer offset commit ignored: negative offset or queue id, or empty group or topic",
			"client", clientHost, "group", group, "topic", topic, "queueId", queueID, "offset", offset)
		return
	}
	k := key(topic, group)
	m.mu.Lock()
	q := m.mu.table[k]
	if q == nil {
		q = make(map[int32]int64)
		m.mu.table[k] = q
	}
	old, had := q[queueID]
	q[queueID] = offset
	m.mu.version++
	m.mu.Unlock()
	if had && offset < old {
		m.logger.Warn("[NOTIFYME]update consumer offset less than store", "client", clientHost,
			"key", k, "queueId", queueID, "requestOffset", offset, "storeOffset", old)
	}
}

// Query returns the group's committed offset of the queue, or -1.
func (m *Manager) Query(group, topic string, queueID int32) int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	if off, ok := m.mu.table[key(topic, group)][queueID]; ok {
		return off
	}
	return -1
}

// QueryAll returns a copy of a group's offsets for one topic.
func (m *Manager) QueryAll(group, topic string) map[int32]int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return maps.Clone(m.mu.table[key(topic, group)])
}

// RemoveGroup drops every offset of a group (RocketMQ's removeOffset),
// and returns the keys removed.
func (m *Manager) RemoveGroup(group string) []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var removed []string
	for k := range m.mu.table {
		if i := strings.LastIndex(k, keySeparator); i >= 0 && k[i+1:] == group {
			delete(m.mu.table, k)
			removed = append(removed, k)
		}
	}
	if len(removed) > 0 {
		m.mu.version++
	}
	return removed
}

// Table returns, for each "topic@group" key, a copy of its offsets.
func (m *Manager) Table() map[string]map[int32]int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make(map[string]map[int32]int64, len(m.mu.table))
	for k, q := range m.mu.table {
		out[k] = maps.Clone(q)
	}
	return out
}

// Clamp lowers every offset above its queue's max offset to that max
// (after a crash, a ConsumeQueue can end behind a persisted offset), and
// returns how many it changed. maxOffset gives a queue's max offset.
func (m *Manager) Clamp(maxOffset func(topic string, queueID int32) int64) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for k, q := range m.mu.table {
		i := strings.LastIndex(k, keySeparator)
		if i < 0 {
			continue
		}
		topic := k[:i]
		for qid, off := range q {
			if hi := maxOffset(topic, qid); off > hi {
				m.logger.Warn("consumer offset past its queue's max offset; clamped", "key", k, "queueId", qid,
					"offset", off, "maxOffset", hi)
				q[qid] = hi
				n++
			}
		}
	}
	if n > 0 {
		m.mu.version++
	}
	return n
}

// Persist saves the table crash-safely if it changed since the last save.
func (m *Manager) Persist() error {
	m.saveMu.Lock()
	defer m.saveMu.Unlock()
	m.mu.Lock()
	v := m.mu.version
	if v == m.saved {
		m.mu.Unlock()
		return nil
	}
	f := fileJSON{OffsetTable: make(map[string]map[int32]int64, len(m.mu.table))}
	for k, q := range m.mu.table {
		f.OffsetTable[k] = maps.Clone(q)
	}
	m.mu.Unlock()
	if err := configfile.Save(m.fs, m.name, f); err != nil {
		return fmt.Errorf("offset: persist: %w", err)
	}
	m.saved = v
	return nil
}

// SetClock sets the clock that spaces PersistScheduled's log lines (the
// store's clock, so that tests can step it); nil means the wall clock.
// Call it before the first PersistScheduled.
func (m *Manager) SetClock(clock clockwork.Clock) { m.saveFaults.Clock = clock }

// PersistScheduled is Persist for the flushConsumerOffsetInterval task:
// a failure (a full disk fails every attempt) is logged at ERROR when it
// starts, then at most once a minute with the count of failures, and the
// first save that works afterwards is logged with the number of failures.
// It returns Persist's error, for counting.
func (m *Manager) PersistScheduled() error {
	err := m.Persist()
	if err != nil {
		m.saveFaults.Failed("consumer offsets not saved; retried every flushConsumerOffsetInterval", err, "file", m.name)
		return err
	}
	if m.saveFaults.Failing() {
		m.saveFaults.Resumed(fmt.Sprintf("consumer offsets saved again after %d failures", m.saveFaults.Failures()), "file", m.name)
	}
	return nil
}
