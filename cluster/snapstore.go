package cluster

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/raft"

	"github.com/rocketstore/rocketstore/engine"
)

// snapStore is the raft.SnapshotStore of a replica. A snapshot it takes
// is a small file: Raft's metadata and the snapHeader, whose CommitLog
// range is empty because the CommitLog holds the data. A snapshot it
// receives keeps the whole stream (ID.data) until the state machine has
// installed it. Open streams the CommitLog from its first held byte, so
// that a follower gets everything it may lack.
type snapStore struct {
	dir    string
	cl     func() *engine.CommitLog
	retain int
	mu     sync.Mutex
}

// snapMeta is ID.meta.
type snapMeta struct {
	Meta   raft.SnapshotMeta `json:"meta"`
	Header snapHeader        `json:"header"`
}

func newSnapStore(dir string, cl func() *engine.CommitLog) (*snapStore, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	return &snapStore{dir: dir, cl: cl, retain: 2}, nil
}

var _ raft.SnapshotStore = (*snapStore)(nil)

func (s *snapStore) path(id, ext string) string { return filepath.Join(s.dir, id+ext) }

// Create starts a snapshot: one the state machine persists (a header), or
// one received from the leader (a header and CommitLog bytes).
func (s *snapStore) Create(version raft.SnapshotVersion, index, term uint64, configuration raft.Configuration,
	configurationIndex uint64, _ raft.Transport) (raft.SnapshotSink, error) {
	id := fmt.Sprintf("%d-%d-%d", term, index, time.Now().UnixMilli())
	f, err := os.Create(s.path(id, ".tmp"))
	if err != nil {
		return nil, fmt.Errorf("cluster: create snapshot: %w", err)
	}
	return &snapSink{s: s, f: f, meta: raft.SnapshotMeta{Version: version, ID: id, Index: index, Term: term,
		Configuration: configuration, ConfigurationIndex: configurationIndex}}, nil
}

// List returns the snapshots, newest first.
func (s *snapStore) List() ([]*raft.SnapshotMeta, error) {
	metas, err := s.metas()
	if err != nil {
		return nil, err
	}
	out := make([]*raft.SnapshotMeta, len(metas))
	for i := range metas {
		out[i] = &metas[i].Meta
	}
	return out, nil
}

// metas reads every snapshot's metadata, newest first.
func (s *snapStore) metas() ([]snapMeta, error) {
	names, err := filepath.Glob(filepath.Join(s.dir, "*.meta"))
	if err != nil {
		return nil, err
	}
	var out []snapMeta
	for _, n := range names {
		b, err := os.ReadFile(n)
		if err != nil {
			return nil, err
		}
		var m snapMeta
		if err := json.Unmarshal(b, &m); err != nil {
			return nil, fmt.Errorf("%w: %s: %v", ErrBadSnapshot, n, err)
		}
		out = append(out, m)
	}
	slices.SortFunc(out, func(a, b snapMeta) int {
		if a.Meta.Term != b.Meta.Term {
			return cmpU(b.Meta.Term, a.Meta.Term)
		}
		if a.Meta.Index != b.Meta.Index {
			return cmpU(b.Meta.Index, a.Meta.Index)
		}
		return strings.Compare(b.Meta.ID, a.Meta.ID)
	})
	return out, nil
}

func cmpU(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// latest returns the newest snapshot's metadata, or nil.
func (s *snapStore) latest() (*snapMeta, error) {
	ms, err := s.metas()
	if err != nil || len(ms) == 0 {
		return nil, err
	}
	return &ms[0], nil
}

// Open returns a snapshot's stream: the received one while the CommitLog
// has not reached it, else the CommitLog itself.
func (s *snapStore) Open(id string) (*raft.SnapshotMeta, io.ReadCloser, error) {
	b, err := os.ReadFile(s.path(id, ".meta"))
	if err != nil {
		return nil, nil, fmt.Errorf("cluster: open snapshot %s: %w", id, err)
	}
	var m snapMeta
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, nil, fmt.Errorf("%w: %s: %v", ErrBadSnapshot, id, err)
	}
	cl := s.cl()
	if cl.MaxOffset() < m.Header.To {
		f, err := os.Open(s.path(id, ".data"))
		if err != nil {
			return nil, nil, fmt.Errorf("cluster: snapshot %s reaches CommitLog offset %d, the CommitLog ends at %d and the received data is missing: %w",
				id, m.Header.To, cl.MaxOffset(), err)
		}
		st, err := f.Stat()
		if err != nil {
			f.Close()
			return nil, nil, err
		}
		m.Meta.Size = st.Size()
		return &m.Meta, f, nil
	}
	size, r, err := streamFrom(cl, m.Header)
	if err != nil {
		return nil, nil, err
	}
	m.Meta.Size = size
	return &m.Meta, io.NopCloser(r), nil
}

// reap removes all but the newest snapshots, and received data that the
// CommitLog has reached.
func (s *snapStore) reap() error {
	ms, err := s.metas()
	if err != nil {
		return err
	}
	max := s.cl().MaxOffset()
	var errs []error
	for i, m := range ms {
		if i >= s.retain {
			errs = append(errs, rmIfExists(s.path(m.Meta.ID, ".meta")))
		}
		if i >= s.retain || m.Header.To <= max {
			errs = append(errs, rmIfExists(s.path(m.Meta.ID, ".data")))
		}
	}
	return errors.Join(errs...)
}

func rmIfExists(p string) error {
	if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}

// snapSink writes ID.tmp; Close turns it into ID.meta (and ID.data when
// it carries CommitLog bytes).
type snapSink struct {
	s    *snapStore
	f    *os.File
	meta raft.SnapshotMeta
	n    int64
	done bool
}

func (k *snapSink) ID() string { return k.meta.ID }

func (k *snapSink) Write(p []byte) (int, error) {
	n, err := k.f.Write(p)
	k.n += int64(n)
	return n, err
}

func (k *snapSink) Cancel() error {
	if k.done {
		return nil
	}
	k.done = true
	return errors.Join(k.f.Close(), rmIfExists(k.f.Name()))
}

func (k *snapSink) Close() error {
	if k.done {
		return nil
	}
	k.done = true
	tmp := k.f.Name()
	if err := errors.Join(k.f.Sync(), k.f.Close()); err != nil {
		_ = rmIfExists(tmp)
		return err
	}
	h, err := readHeaderFile(tmp)
	if err != nil {
		_ = rmIfExists(tmp)
		return err
	}
	s := k.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if h.To > h.From {
		if err := os.Rename(tmp, s.path(k.meta.ID, ".data")); err != nil {
			return err
		}
	} else if err := os.Remove(tmp); err != nil {
		return err
	}
	k.meta.Size = k.n
	if err := writeFileSync(s.path(k.meta.ID, ".meta"), snapMeta{Meta: k.meta, Header: *h}); err != nil {
		return err
	}
	return s.reap()
}

func readHeaderFile(name string) (*snapHeader, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	h, _, err := readSnapHeader(f)
	return h, err
}

// writeFileSync writes v as JSON to name crash-safely: a synced temporary
// file renamed over it, then the directory synced.
func writeFileSync(name string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	tmp := name + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return err
	}
	_, werr := f.Write(b)
	if err := errors.Join(werr, f.Sync(), f.Close()); err != nil {
		_ = os.Remove(tmp)
		return err
	}
	if err := os.Rename(tmp, name); err != nil {
		return err
	}
	d, err := os.Open(filepath.Dir(name))
	if err != nil {
		return err
	}
	return errors.Join(d.Sync(), d.Close())
}

// identityFile is DIR/raft/group.json: the group this store directory
// belongs to.
type identityFile struct{ path string }

func (i *identityFile) load() (*groupEntry, error) {
	b, err := os.ReadFile(i.path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var g groupEntry
	if err := json.Unmarshal(b, &g); err != nil {
		return nil, fmt.Errorf("cluster: %s: %w", i.path, err)
	}
	return &g, nil
}

func (i *identityFile) save(g *groupEntry) error { return writeFileSync(i.path, g) }
