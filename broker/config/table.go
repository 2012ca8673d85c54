package config

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"sync"

	"github.com/jonboulle/clockwork"
	"github.com/rocketstore/rocketstore/backend"
	"github.com/rocketstore/rocketstore/broker/configfile"
)

// table is one of RocketMQ's JSON config tables (topics.json,
// subscriptionGroup.json): entries by name and a data version, saved whole
// after every change, as RocketMQ's ConfigManager.persist does. The
// managers keep their RocketMQ rules (validation, system entries,
// auto-creation) and leave the bookkeeping to it.
type table[V any] struct {
	fs    backend.FS
	file  string          // path in the store root
	key   string          // the JSON field holding the entries
	what  string          // "topic" or "group", for errors
	clock clockwork.Clock // times the data versions
	// errMissing is wrapped by a delete of an unknown name.
	errMissing error
	logger     *slog.Logger // nil: slog.Default()

	mu      sync.Mutex
	entries map[string]V
	version DataVersion
}

// load reads the table's file (or its backup). Each entry is decoded over
// newEntry(name), so that fields the file omits keep RocketMQ's defaults.
func (t *table[V]) load(newEntry func(name string) V) error {
	f := tableFile{key: t.key}
	log := t.logger
	if log == nil {
		log = slog.Default()
	}
	if _, err := configfile.LoadLogged(t.fs, t.file, &f, log); err != nil {
		return err
	}
	t.entries = make(map[string]V, len(f.entries))
	for name, raw := range f.entries {
		v := newEntry(name)
		if err := json.Unmarshal(raw, &v); err != nil {
			return fmt.Errorf("%w: %s: %s %q: %w", configfile.ErrCorrupt, t.file, t.what, name, err)
		}
		t.entries[name] = v
	}
	t.version = f.version
	return nil
}

// get returns an entry.
func (t *table[V]) get(name string) (V, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	v, ok := t.entries[name]
	return v, ok
}

// all returns a copy of the entries and the data version.
func (t *table[V]) all() (map[string]V, DataVersion) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return maps.Clone(t.entries), t.version
}

// put creates or replaces an entry and saves the table.
func (t *table[V]) put(name string, v V) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.entries[name] = v
	return t.saveLocked()
}

// delete removes an entry and saves the table.
func (t *table[V]) delete(name string) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, ok := t.entries[name]; !ok {
		return fmt.Errorf("%w: %q", t.errMissing, name)
	}
	delete(t.entries, name)
	return t.saveLocked()
}

// saveLocked bumps the data version and writes the table crash-safely.
// Called with mu held.
func (t *table[V]) saveLocked() error {
	t.version = t.version.next(t.clock.Now().UnixMilli())
	f := tableFile{key: t.key, version: t.version, entries: make(map[string]json.RawMessage, len(t.entries))}
	for name, v := range t.entries {
		raw, err := json.Marshal(v)
		if err != nil {
			return err
		}
		f.entries[name] = raw
	}
	return configfile.Save(t.fs, t.file, f)
}

// tableFile is a table's JSON: {"dataVersion": ..., key: {name: entry}}.
// Entries stay raw so that load can decode each over its defaults.
type tableFile struct {
	key     string
	version DataVersion
	entries map[string]json.RawMessage
}

// UnmarshalJSON decodes the two fields; a field of the wrong type is an
// error, so that configfile.Load falls back to the backup.
func (f *tableFile) UnmarshalJSON(b []byte) error {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(b, &fields); err != nil {
		return err
	}
	if raw, ok := fields["dataVersion"]; ok {
		if err := json.Unmarshal(raw, &f.version); err != nil {
			return fmt.Errorf("dataVersion: %w", err)
		}
	}
	if raw, ok := fields[f.key]; ok {
		if err := json.Unmarshal(raw, &f.entries); err != nil {
			return fmt.Errorf("%s: %w", f.key, err)
		}
	}
	return nil
}

// MarshalJSON encodes the data version and the entries (the keys sort
// dataVersion first, as RocketMQ writes it).
func (f tableFile) MarshalJSON() ([]byte, error) {
	return json.Marshal(map[string]any{"dataVersion": f.version, f.key: f.entries})
}
