package index

import (
	"errors"
	"fmt"
	"log/slog"
	"path"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/rocketstore/rocketstore/backend"
	"github.com/rocketstore/rocketstore/dispatch"
	"github.com/rocketstore/rocketstore/internal/clocks"
	"github.com/rocketstore/rocketstore/internal/defaults"
	"github.com/rocketstore/rocketstore/record"
)

// Sentinel errors.
var (
	// ErrCorrupt reports an index file that cannot be used.
	ErrCorrupt = errors.New("index: corrupt index file")
	// ErrClosed reports use of a closed service.
	ErrClosed = errors.New("index: closed")
)

// Dir is the directory of the index files in the store root.
const Dir = "index"

// Config configures a Service; zero fields mean RocketMQ's defaults.
type Config struct {
	// MaxHashSlotNum is the number of hash slots per file (5,000,000).
	MaxHashSlotNum int
	// MaxIndexNum is the number of items per file (20,000,000).
	MaxIndexNum int
	// Clock names the new files (their creation time in milliseconds);
	// nil means the wall clock. A broker hands in its store's clock.
	Clock clockwork.Clock
	// Logger receives recovery notes (slog.Default()).
	Logger *slog.Logger

	// noRepair deletes the newest file after an abnormal exit instead of
	// repairing it, as before repair existed (tests: export_test.go).
	noRepair bool
}

func (c Config) withDefaults() Config {
	defaults.Set(&c.MaxHashSlotNum, defaultHashSlotNum)
	defaults.Set(&c.MaxIndexNum, defaultIndexNum)
	defaults.Set(&c.Clock, clockwork.NewRealClock())
	defaults.Set(&c.Logger, slog.Default())
	return c
}

// Validate reports a geometry that cannot work.
func (c Config) Validate() error {
	c = c.withDefaults()
	if c.MaxHashSlotNum < 1 || c.MaxIndexNum < 2 {
		return fmt.Errorf("index: bad config: MaxHashSlotNum %d must be ≥ 1 and MaxIndexNum %d ≥ 2", c.MaxHashSlotNum, c.MaxIndexNum)
	}
	return nil
}

// Checkpoint receives the index timestamp once the files holding it are
// durable (engine.Checkpoint, the store's checkpoint file, is one).
type Checkpoint interface{ SetIndex(ts int64) }

// Service owns the index files.
type Service struct {
	fs  backend.FS
	cfg Config

	mu       sync.RWMutex
	files    []*File // oldest first
	closed   bool
	cp       Checkpoint
	syncedTs int64 // endTimestamp of the newest synced state
	lastName string

	// What Open found, for Reconcile.
	// deletedFrom is the smallest beginPhyOffset of the files Open
	// deleted (-1: none deleted).
	deletedFrom int64
	// deferred is set from an abnormal Open until Reconcile: Dispatch
	// ignores records then, because the engine's recovery replay may start
	// after a gap in the index, and Dispatch's "already indexed" rule
	// (offset below the newest entry) would make that gap permanent.
	// Reconcile has the gap replayed in order instead. deferredFrom is
	// the first record ignored (-1: none).
	deferred     bool
	deferredFrom int64
}

// Open loads the index files. After an abnormal exit (lastExitOK false) it
// deletes every file whose endTimestamp is after checkpointIndexTs, the
// checkpoint's indexMsgTimestamp: such a file was not known durable; and
// it ignores dispatched records until Reconcile, which the owner must call
// once the store is recovered.
func Open(fs backend.FS, cfg Config, lastExitOK bool, checkpointIndexTs int64) (*Service, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	s := &Service{fs: fs, cfg: cfg.withDefaults(), deletedFrom: -1,
		deferred: !lastExitOK, deferredFrom: -1}
	if err := fs.MkdirAll(Dir); err != nil {
		return nil, fmt.Errorf("index: mkdir: %w", err)
	}
	names, err := fs.List(Dir)
	if err != nil {
		return nil, fmt.Errorf("index: list: %w", err)
	}
	var files []string
	for _, n := range names {
		if strings.HasSuffix(n, backend.TempSuffix) || strings.HasSuffix(n, backend.BackupSuffix) {
			continue
		}
		if !isFileName(n) {
			// FUSE's .fuse_hidden*, NFS's .nfs*, a stray copy: not
			// ours to read or delete.
			s.cfg.Logger.Warn("index: ignoring a file the store does not write", "file", path.Join(Dir, n))
			continue
		}
		files = append(files, n)
	}
	for i, n := range files {
		if err := s.load(path.Join(Dir, n), lastExitOK, checkpointIndexTs, i == len(files)-1); err != nil {
			return nil, errors.Join(err, s.closeFiles())
		}
	}
	if err := s.dropIfGarbage(); err != nil {
		return nil, errors.Join(err, s.closeFiles())
	}
	return s, nil
}

// dropIfGarbage checks every loaded file (check); if one holds garbage,
// the index is derived data and rebuilt whole: every file is deleted and
// Reconcile has the CommitLog re-dispatched from its start. Entries are
// only ever appended to the newest file, so one damaged file in the
// middle cannot be rebuilt alone.
func (s *Service) dropIfGarbage() error {
	var bad error
	for _, f := range s.files {
		if err := f.check(); err != nil {
			bad = err
			break
		}
	}
	if bad == nil {
		return nil
	}
	s.cfg.Logger.Error("index: a file holds garbage; deleting every index file and rebuilding the index from the commitlog", "err", bad)
	files := s.files
	if err := s.closeFiles(); err != nil {
		return err
	}
	for _, f := range files {
		if err := s.fs.Remove(f.name); err != nil {
			return fmt.Errorf("index: delete %s: %w", f.name, err)
		}
	}
	s.lastName = ""
	s.deferred, s.deletedFrom = true, 0
	return nil
}

// load opens one index file. After an abnormal exit a file newer than the
// checkpoint is not known durable: the newest file is repaired (what the
// crash left of it is kept, and Reconcile replays the CommitLog from its
// last item), an older one is deleted with everything after it.
func (s *Service) load(name string, lastExitOK bool, cpTs int64, newest bool) error {
	f, err := openFile(s.fs, name, s.cfg.MaxHashSlotNum, s.cfg.MaxIndexNum)
	if err != nil {
		return err
	}
	if !lastExitOK && f.h.endTimestamp > cpTs && newest && s.deletedFrom < 0 && !s.cfg.noRepair {
		kept, err := f.repair()
		if err == nil && kept == firstIndex {
			// Nothing kept: the file goes, and the replay starts
			// at its first record.
			err = fmt.Errorf("%w: %s: no item survived", ErrCorrupt, name)
		}
		if err == nil {
			s.cfg.Logger.Info("index: abnormal exit; kept the newest index file's items up to its first damaged one, replaying the commitlog from there",
				"file", name, "items", kept-firstIndex, "endPhyOffset", f.h.endPhyOffset)
			s.files = append(s.files, f)
			s.lastName = path.Base(name)
			s.syncedTs = f.h.endTimestamp
			return nil
		}
		s.cfg.Logger.Warn("index: abnormal exit; the newest index file cannot be repaired, deleting it", "file", name, "err", err)
	}
	if !lastExitOK && f.h.endTimestamp > cpTs {
		s.cfg.Logger.Info("index: abnormal exit; deleting index file newer than the checkpoint",
			"file", name, "endTimestamp", f.h.endTimestamp, "checkpoint", cpTs)
		if s.deletedFrom < 0 || f.h.beginPhyOffset < s.deletedFrom {
			s.deletedFrom = f.h.beginPhyOffset
		}
		f.seg.Close()
		return s.fs.Remove(name)
	}
	s.files = append(s.files, f)
	s.lastName = path.Base(name)
	return nil
}

// truncateLocked removes the entries at or past clMax from the newest
// files, syncing each file it changed. The caller holds mu.
func (s *Service) truncateLocked(clMax int64) error {
	for i := len(s.files) - 1; i >= 0; i-- {
		f := s.files[i]
		if f.h.indexCount <= firstIndex || f.h.endPhyOffset < clMax {
			break
		}
		n, err := f.truncateFrom(clMax)
		if err != nil {
			return err
		}
		if n > 0 {
			s.cfg.Logger.Warn("index: removed entries past the recovered CommitLog end",
				"file", f.name, "entries", n, "commitLogMax", clMax)
			if err := s.syncLocked(f); err != nil {
				return err
			}
		}
	}
	return nil
}

// Reconcile matches the index to the recovered CommitLog [clMin, clMax)
// once the engine is open, before any new put. It returns the CommitLog
// offset (a record boundary) from which the caller must re-dispatch every
// record so that the index holds all of them, or -1 when nothing is
// missing.
//
// After a clean exit the index is complete: nothing to do. After a crash
// two things can be wrong, and the engine's own replay, which starts from
// its checkpoint, fixes neither:
//
//   - Entries were lost: Open deleted files newer than the checkpoint, or
//     the newest file lost its unsynced tail. Everything after the newest
//     durable entry (or from the first deleted file when no file is left)
//     is re-dispatched; Dispatch skips what is already indexed.
//   - The newest files hold entries at or past clMax: the index was synced
//     while the CommitLog records it points at were not, and they are
//     gone. New records will reuse those offsets, and Dispatch would skip
//     them as already indexed, so those entries are removed (also after
//     a clean exit, whose recovery may cut a torn tail).
func (s *Service) Reconcile(clMin, clMax int64) (int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return -1, ErrClosed
	}
	// Entries at or past clMax point at records recovery cut off (after
	// a crash, or a torn tail found after a clean exit): new records will
	// reuse those offsets, so the entries go, with the log.
	if err := s.truncateLocked(clMax); err != nil {
		return -1, err
	}
	if !s.deferred {
		return -1, nil // clean exit, or reconciled already
	}
	s.deferred = false
	last := s.last()
	// Without any durable trace of the index (no entry, nothing
	// deleted), replay what the engine replayed.
	from := s.deferredFrom
	if s.deletedFrom >= 0 {
		from = s.deletedFrom
	}
	if last != nil && last.h.indexCount > firstIndex {
		// The newest durable entry is a record boundary; replaying it is
		// harmless (Dispatch skips it).
		from = last.h.endPhyOffset
	}
	if from < 0 || from >= clMax {
		return -1, nil
	}
	return max(from, clMin), nil
}

// SetCheckpoint gives the service the checkpoint (available once the
// engine is open) and records what is already durable.
func (s *Service) SetCheckpoint(cp Checkpoint) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cp = cp
	if s.syncedTs > 0 {
		cp.SetIndex(s.syncedTs)
	}
}

// Dispatch indexes one record (RocketMQ's buildIndex): UNIQ_KEY and each
// KEYS token as topic#key. Rolled-back transaction records and records
// already indexed are skipped.
func (s *Service) Dispatch(req *dispatch.Request) error {
	if record.TransactionType(req.SysFlag) == record.TransactionRollback {
		return nil
	}
	if len(req.UniqKey) == 0 && len(req.Keys) == 0 {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	if s.deferred {
		if s.deferredFrom < 0 {
			s.deferredFrom = req.CommitLogOffset
		}
		return nil
	}
	if f := s.last(); f != nil && s.indexed(f, req.CommitLogOffset) {
		return nil
	}
	topic := string(req.Topic)
	if len(req.UniqKey) > 0 {
		if err := s.putKey(topic+keySeparator+string(req.UniqKey), req); err != nil {
			return err
		}
	}
	for k := range strings.SplitSeq(string(req.Keys), " ") {
		if k == "" {
			continue
		}
		if err := s.putKey(topic+keySeparator+k, req); err != nil {
			return err
		}
	}
	return nil
}

// indexed reports whether a record at off is already in the index.
// RocketMQ skips off < endPhyOffset only, which indexes the last record
// twice on replay; an entry at endPhyOffset in a file that holds entries
// is skipped too.
func (s *Service) indexed(f *File, off int64) bool {
	return off < f.h.endPhyOffset || (off == f.h.endPhyOffset && f.h.indexCount > firstIndex)
}

func (s *Service) last() *File {
	if len(s.files) == 0 {
		return nil
	}
	return s.files[len(s.files)-1]
}

// putKey adds one key, rolling to a new file when the last is full.
func (s *Service) putKey(key string, req *dispatch.Request) error {
	for range 2 {
		f, err := s.writable()
		if err != nil {
			return err
		}
		ok, err := f.putKey(key, req.CommitLogOffset, req.StoreTimestamp)
		if err != nil || ok {
			return err
		}
	}
	return fmt.Errorf("index: no room for key %q in a new file", key)
}

// writable returns the last file, creating the next one when it is full
// (syncing the full one first, and only then telling the checkpoint).
func (s *Service) writable() (*File, error) {
	f := s.last()
	if f != nil && !f.IsFull() {
		return f, nil
	}
	var endPhy, endTs int64
	if f != nil {
		if err := s.syncLocked(f); err != nil {
			return nil, err
		}
		endPhy, endTs = f.h.endPhyOffset, f.h.endTimestamp
	}
	nf, err := createFile(s.fs, path.Join(Dir, s.nextName()), s.cfg.MaxHashSlotNum, s.cfg.MaxIndexNum, endPhy, endTs)
	if err != nil {
		return nil, err
	}
	if err := s.fs.SyncDir(Dir); err != nil {
		return nil, fmt.Errorf("index: sync dir: %w", err)
	}
	s.files = append(s.files, nf)
	return nf, nil
}

// nextName returns a file name from the current time, later than every
// existing name (two files created in one millisecond get distinct names).
func (s *Service) nextName() string {
	ms := clocks.Millis(s.cfg.Clock)()
	for {
		n := strings.Replace(time.UnixMilli(ms).Format(fileNameLayout), ".", "", 1)
		if n > s.lastName {
			s.lastName = n
			return n
		}
		ms++
	}
}

func (s *Service) syncLocked(f *File) error {
	if err := f.sync(); err != nil {
		return err
	}
	if f.h.endTimestamp > s.syncedTs {
		s.syncedTs = f.h.endTimestamp
		if s.cp != nil {
			s.cp.SetIndex(s.syncedTs)
		}
	}
	return nil
}

// Flush syncs the newest file and records its end timestamp in the
// checkpoint (written by the engine's next checkpoint flush).
func (s *Service) Flush() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if f := s.last(); f != nil && !s.closed {
		return s.syncLocked(f)
	}
	return nil
}

// QueryResult is the answer of QueryOffset (RocketMQ's QueryOffsetResult).
type QueryResult struct {
	// PhyOffsets are CommitLog offsets, newest first. Entries are matched
	// by key hash, as in RocketMQ: a caller that needs exact keys checks
	// the messages.
	PhyOffsets []int64
	// IndexLastUpdateTimestamp and IndexLastUpdatePhyOffset describe the
	// newest file.
	IndexLastUpdateTimestamp int64
	IndexLastUpdatePhyOffset int64
}

// QueryOffset returns up to maxNum (at most 64) CommitLog offsets stored
// for topic#key with a store time in [begin, end], walking files newest
// first (RocketMQ's IndexService.queryOffset).
func (s *Service) QueryOffset(topic, key string, maxNum int, begin, end int64) (QueryResult, error) {
	maxNum = min(maxNum, maxMsgsNumBatch)
	s.mu.RLock()
	defer s.mu.RUnlock()
	var r QueryResult
	if s.closed {
		return r, ErrClosed
	}
	if maxNum <= 0 {
		return r, nil
	}
	full := topic + keySeparator + key
	for i, f := range slices.Backward(s.files) {
		if i == len(s.files)-1 {
			r.IndexLastUpdateTimestamp, r.IndexLastUpdatePhyOffset = f.h.endTimestamp, f.h.endPhyOffset
		}
		if f.isTimeMatched(begin, end) {
			r.PhyOffsets = f.selectPhyOffsets(r.PhyOffsets, full, maxNum, begin, end)
		}
		if f.h.beginTimestamp < begin || len(r.PhyOffsets) >= maxNum {
			break
		}
	}
	return r, nil
}

// Files returns the names of the index files, oldest first.
func (s *Service) Files() []string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([]string, len(s.files))
	for i, f := range s.files {
		out[i] = f.name
	}
	return out
}

// Close syncs and closes every file. It is idempotent.
func (s *Service) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	var err error
	if f := s.last(); f != nil {
		err = s.syncLocked(f)
	}
	s.closed = true
	return errors.Join(err, s.closeFiles())
}

// Abandon closes every file without syncing: what a killed process
// leaves (crash tests). It is idempotent.
func (s *Service) Abandon() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	s.closed = true
	_ = s.closeFiles() // a killed process reports nothing
}

func (s *Service) closeFiles() error {
	var errs []error
	for _, f := range s.files {
		errs = append(errs, f.seg.Close())
	}
	s.files = nil
	return errors.Join(errs...)
}
