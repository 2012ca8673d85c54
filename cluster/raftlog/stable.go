package raftlog

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"path"
	"sort"
	"sync"

	"github.com/hashicorp/raft"

	"github.com/rocketstore/rocketstore/backend"
)

// Stable file layout (integers big-endian): the whole file is rewritten
// to a temporary name, synced and renamed over the old one at each Set,
// so that a power cut leaves the old table or the new one.
//
//	0 LENGTH uint32 | 4 CRC uint32 | 8 COUNT uint32 | COUNT × (KEYLEN uint32 | KEY | VALLEN uint32 | VALUE)
//
// LENGTH counts the bytes from COUNT on; CRC is their Castagnoli CRC-32.
const (
	stableName    = "stable"
	stableTmpName = "stable.tmp"
)

// Stable is a raft.StableStore (the current term, the vote) in one small
// file beside the frame segments. Raft writes it at elections only.
type Stable struct {
	fs  backend.FS
	dir string

	mu sync.Mutex
	kv map[string][]byte
}

var _ raft.StableStore = (*Stable)(nil)

// ErrKeyNotFound is what Get returns for a key never set; hashicorp/raft
// compares the error's text with "not found".
var ErrKeyNotFound = errors.New("not found")

// OpenStable opens the stable store in dir (creating dir).
func OpenStable(fsys backend.FS, dir string) (*Stable, error) {
	s := &Stable{fs: fsys, dir: dir, kv: map[string][]byte{}}
	if err := fsys.MkdirAll(dir); err != nil {
		return nil, err
	}
	f, err := fsys.Open(path.Join(dir, stableName))
	if errors.Is(err, backend.ErrNotExist) {
		return s, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	kv, err := decodeStable(f.View(0, f.Size()))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", f.Name(), err)
	}
	s.kv = kv
	return s, nil
}

func decodeStable(b []byte) (map[string][]byte, error) {
	if len(b) < 12 || int(binary.BigEndian.Uint32(b)) != len(b)-8 {
		return nil, fmt.Errorf("%w: stable store of %d bytes", ErrCorrupt, len(b))
	}
	body := b[8:]
	if crc32.Checksum(body, castagnoli) != binary.BigEndian.Uint32(b[4:]) {
		return nil, fmt.Errorf("%w: stable store crc", ErrCorrupt)
	}
	r := &reader{b: body[4:]}
	kv := map[string][]byte{}
	for range binary.BigEndian.Uint32(body) {
		k := r.next()
		v := r.next()
		if r.bad {
			return nil, fmt.Errorf("%w: stable store entry past its end", ErrCorrupt)
		}
		kv[string(k)] = append([]byte(nil), v...)
	}
	if r.bad || len(r.b) != 0 {
		return nil, fmt.Errorf("%w: stable store with %d trailing bytes", ErrCorrupt, len(r.b))
	}
	return kv, nil
}

// reader reads length-prefixed fields; bad sticks.
type reader struct {
	b   []byte
	bad bool
}

func (r *reader) next() []byte {
	if r.bad || len(r.b) < 4 || int(binary.BigEndian.Uint32(r.b)) > len(r.b)-4 {
		r.bad = true
		return nil
	}
	n := int(binary.BigEndian.Uint32(r.b))
	v := r.b[4 : 4+n]
	r.b = r.b[4+n:]
	return v
}

func encodeStable(kv map[string][]byte) []byte {
	keys := make([]string, 0, len(kv))
	for k := range kv {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	b := make([]byte, 8, 64)
	b = binary.BigEndian.AppendUint32(b, uint32(len(keys)))
	for _, k := range keys {
		b = binary.BigEndian.AppendUint32(b, uint32(len(k)))
		b = append(b, k...)
		b = binary.BigEndian.AppendUint32(b, uint32(len(kv[k])))
		b = append(b, kv[k]...)
	}
	binary.BigEndian.PutUint32(b, uint32(len(b)-8))
	binary.BigEndian.PutUint32(b[4:], crc32.Checksum(b[8:], castagnoli))
	return b
}

// Set stores val under key durably.
func (s *Stable) Set(key, val []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	old, had := s.kv[string(key)]
	s.kv[string(key)] = append([]byte(nil), val...)
	if err := s.persist(); err != nil {
		if had {
			s.kv[string(key)] = old
		} else {
			delete(s.kv, string(key))
		}
		return err
	}
	return nil
}

// persist writes the table to a temporary file, syncs it and renames it
// over the old one; the directory sync makes the rename durable.
func (s *Stable) persist() error {
	b := encodeStable(s.kv)
	tmp := path.Join(s.dir, stableTmpName)
	if err := s.fs.Remove(tmp); err != nil && !errors.Is(err, backend.ErrNotExist) {
		return err
	}
	f, err := s.fs.Create(tmp, int64(len(b)))
	if err != nil {
		return err
	}
	_, err = f.WriteAt(b, 0)
	if err == nil {
		err = f.Sync(0, int64(len(b)))
	}
	if err = errors.Join(err, f.Close()); err != nil {
		return err
	}
	if err := s.fs.Rename(tmp, path.Join(s.dir, stableName)); err != nil {
		return err
	}
	return s.fs.SyncDir(s.dir)
}

// Get returns the value under key, ErrKeyNotFound when there is none.
func (s *Stable) Get(key []byte) ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.kv[string(key)]
	if !ok {
		return nil, ErrKeyNotFound
	}
	return append([]byte(nil), v...), nil
}

// SetUint64 stores val under key durably.
func (s *Stable) SetUint64(key []byte, val uint64) error {
	return s.Set(key, binary.BigEndian.AppendUint64(nil, val))
}

// GetUint64 returns the number under key, 0 when there is none, as
// hashicorp/raft expects of a new store.
func (s *Stable) GetUint64(key []byte) (uint64, error) {
	v, err := s.Get(key)
	if errors.Is(err, ErrKeyNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	if len(v) != 8 {
		return 0, fmt.Errorf("%w: stable key %q holds %d bytes, not a uint64", ErrCorrupt, key, len(v))
	}
	return binary.BigEndian.Uint64(v), nil
}
