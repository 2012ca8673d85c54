package cluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"

	"github.com/rocketstore/rocketstore/backend"
	"github.com/rocketstore/rocketstore/backend/mmap"
	"github.com/rocketstore/rocketstore/engine"
	"github.com/rocketstore/rocketstore/record"
)

// Offline repair: a stopped replica's store repaired from a healthy one.
//
// RepairStore walks the source's committed CommitLog records (each
// checked against its own CRC; a damaged source record stops the repair)
// and compares every one with the bytes at its offset in the target;
// where they differ — a flipped bit, a torn or zeroed sector, a damaged
// header that the record's own checks miss — the source's record is
// written over the target's. Since the replicas of a group are
// byte-identical over the committed prefix, the target then is too. Only
// the target's own extent is repaired (up to its last non-zero byte): a
// replica behind is caught up by Raft when it starts, not here. The
// target's ConsumeQueues are left to the store's recovery at the next
// start, which checks them against the repaired records.
//
// The source is a running replica's Raft port (PeerSource: it serves
// only what it has applied) or a stopped replica's store directory
// (DirSource: its CommitLog holds committed entries only, but on the
// store of records entries, whose CommitLog past the commit point holds
// Raft's uncommitted entries, only what it knows committed: see
// committedEnd). A source of
// another group, or with another CommitLog file size, is refused; so is a
// target that a running process holds (its store lock).

// RepairSource is a healthy replica's CommitLog, for RepairStore.
type RepairSource interface {
	// Group returns the source's group identity and the CommitLog range
	// it holds committed ([MinOffset, Applied)).
	Group(ctx context.Context) (GroupInfo, error)
	// ReadAt returns CommitLog bytes [off, off+size) (size <= 64 MiB).
	ReadAt(ctx context.Context, off, size int64) ([]byte, error)
	// Close releases the source.
	Close() error
}

type peerSource struct {
	addr string
	dial dialFunc
}

func (p peerSource) Group(ctx context.Context) (GroupInfo, error) {
	return queryGroup(ctx, p.dial.admin, p.addr)
}

func (p peerSource) ReadAt(ctx context.Context, off, size int64) ([]byte, error) {
	return p.dial.askPeer(ctx, p.addr, opBytes, off, size)
}

func (peerSource) Close() error { return nil }

// DirSource is the stopped replica whose store directory is dir. It
// holds the store's lock (shared) until Close.
func DirSource(dir string) (RepairSource, error) { return openDirSource(dir, false) }

func openDirSource(dir string, wholeLog bool) (RepairSource, error) {
	fs, err := mmap.NewReadOnly(dir)
	if err != nil {
		return nil, err
	}
	lk, err := fs.Lock("lock")
	if err != nil {
		return nil, fmt.Errorf("cluster: source %s: %w (a running replica is given as its Raft address)", dir, err)
	}
	s := &dirSource{dir: dir, lock: lk, wholeLog: wholeLog}
	if s.cl, err = openCommitLogFiles(dir, false); err != nil {
		return nil, errors.Join(err, lk.Unlock())
	}
	return s, nil
}

type dirSource struct {
	dir  string
	lock backend.Unlocker
	cl   *commitLogFiles
	// wholeLog is the broken variant that serves the whole CommitLog of
	// a store of records entries as committed.
	wholeLog bool
}

func (s *dirSource) Group(context.Context) (GroupInfo, error) {
	g, err := (&identityFile{path: filepath.Join(s.dir, "raft", "group.json")}).load()
	if err != nil {
		return GroupInfo{}, err
	}
	if g == nil {
		return GroupInfo{}, fmt.Errorf("cluster: source %s has no group identity (raft/group.json): not a replica's store", s.dir)
	}
	end, err := s.cl.dataEnd()
	if err != nil {
		return GroupInfo{}, err
	}
	if !s.wholeLog {
		if end, err = committedEnd(s.dir, s.cl, end); err != nil {
			return GroupInfo{}, err
		}
	}
	return GroupInfo{GroupID: g.GroupID, BrokerName: g.BrokerName, CommitLogFileSize: s.cl.fileSize,
		MinOffset: s.cl.minOffset(), Applied: end}, nil
}

// committedEnd returns where the committed records of the stopped
// replica in dir end, given the end of its CommitLog's data. A replica
// that re-puts its entries writes committed records only. On the store
// of records entries (its log in DIR/raft/records) the records past the
// commit point are Raft's entries, written before they commit and
// possibly another leader's, and the commit point is not stored: the
// replica knows committed the CommitLog up to its own newest snapshot
// (where it opens its commit point, snapshotCommitPoint) and the records
// its ConsumeQueues index (dispatched, so committed).
func committedEnd(dir string, cl *commitLogFiles, end int64) (int64, error) {
	records, err := nonEmptyDir(filepath.Join(dir, "raft", recordsDir))
	if err != nil || !records {
		return end, err
	}
	snap, err := ownSnapshotEnd(dir)
	if err != nil {
		return 0, err
	}
	idx, err := indexedEnd(dir, cl, end)
	if err != nil {
		return 0, err
	}
	return max(cl.minOffset(), min(end, max(snap, idx))), nil
}

// indexedEnd returns the end of the furthest record below end that the
// last unit of a ConsumeQueue in dir indexes: a whole record there, of the
// unit's size, that passes its checks (a damaged or stale unit is passed
// over).
func indexedEnd(dir string, cl *commitLogFiles, end int64) (int64, error) {
	files, err := filepath.Glob(filepath.Join(dir, "consumequeue", "*", "*", "[0-9]*"))
	if err != nil {
		return 0, err
	}
	// The newest file of each queue: names are 20-digit start offsets.
	last := map[string]string{}
	for _, f := range files {
		q, name := filepath.Split(f)
		if len(name) == 20 && name > filepath.Base(last[q]) {
			last[q] = f
		}
	}
	var out int64
	for _, f := range last {
		b, err := os.ReadFile(f)
		if err != nil {
			return 0, fmt.Errorf("cluster: %w", err)
		}
		i := len(b) - len(b)%engine.CQUnitSize
		for i > 0 && allZero(b[i-engine.CQUnitSize:i]) {
			i -= engine.CQUnitSize
		}
		if i == 0 {
			continue
		}
		u := engine.DecodeUnit(b[i-engine.CQUnitSize:])
		at, size := u.CommitLogOffset, int64(u.Size)
		if at < cl.minOffset() || size <= 0 || at+size > end || at+size <= out {
			continue
		}
		rec := make([]byte, size)
		if err := cl.readAt(rec, at); err != nil {
			continue
		}
		if info, err := record.Check(rec, at, true); err == nil && !info.Blank && int64(info.Size) == size {
			out = at + size
		}
	}
	return out, nil
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

func (s *dirSource) ReadAt(_ context.Context, off, size int64) ([]byte, error) {
	b := make([]byte, size)
	if err := s.cl.readAt(b, off); err != nil {
		return nil, err
	}
	return b, nil
}

func (s *dirSource) Close() error { return errors.Join(s.cl.close(), s.lock.Unlock()) }

// OfflineRepairReport says what RepairStore found and did.
type OfflineRepairReport struct {
	// GroupID is the group of both stores.
	GroupID string
	// From and To are the CommitLog range compared.
	From, To int64
	// Records is the number of records compared.
	Records int
	// Repaired lists the offsets of the records written from the source
	// (with DryRun: that would be).
	Repaired []int64
	// TargetEnd is where the target's data ends; past the source's
	// committed end (To) the target is not compared.
	TargetEnd int64
}

// ErrNotSameGroup reports a repair source of another broker group.
var ErrNotSameGroup = errors.New("cluster: the repair source is not a replica of the same group")

// RepairStore repairs the stopped replica's store in dir from src (see
// above). With dryRun nothing is written.
func RepairStore(ctx context.Context, dir string, src RepairSource, dryRun bool) (rep OfflineRepairReport, err error) {
	fs, err := mmap.New(dir)
	if err != nil {
		return rep, err
	}
	lk, err := fs.Lock("lock")
	if err != nil {
		return rep, fmt.Errorf("cluster: repair %s: %w (stop the node first; a running node repairs itself)", dir, err)
	}
	defer func() {
		if cerr := lk.Unlock(); cerr != nil {
			err = errors.Join(err, cerr)
		}
	}()
	g, err := (&identityFile{path: filepath.Join(dir, "raft", "group.json")}).load()
	if err != nil {
		return rep, err
	}
	if g == nil {
		return rep, fmt.Errorf("cluster: %s has no group identity (raft/group.json): not a replica's store", dir)
	}
	cl, err := openCommitLogFiles(dir, !dryRun)
	if err != nil {
		return rep, err
	}
	defer func() {
		if cerr := cl.close(); cerr != nil {
			err = errors.Join(err, cerr)
		}
	}()
	si, err := src.Group(ctx)
	if err != nil {
		return rep, fmt.Errorf("cluster: repair source: %w", err)
	}
	switch {
	case si.GroupID != g.GroupID:
		return rep, fmt.Errorf("%w: the source belongs to group %s, %s to group %s", ErrNotSameGroup, si.GroupID, dir, g.GroupID)
	case si.CommitLogFileSize != g.CommitLogFileSize || cl.fileSize != g.CommitLogFileSize:
		return rep, fmt.Errorf("%w: CommitLog file size %d at the source, %d in %s (its group's: %d)",
			ErrNotSameGroup, si.CommitLogFileSize, cl.fileSize, dir, g.CommitLogFileSize)
	}
	rep.GroupID = g.GroupID
	if rep.TargetEnd, err = cl.lastNonZero(); err != nil {
		return rep, err
	}
	from := max(cl.minOffset(), si.MinOffset)
	if r := from % cl.fileSize; r != 0 {
		from += cl.fileSize - r
	}
	rep.From, rep.To = from, from
	if err := walkRepair(ctx, cl, src, from, si.Applied, rep.TargetEnd, dryRun, &rep); err != nil {
		return rep, err
	}
	if !dryRun && len(rep.Repaired) > 0 {
		return rep, cl.sync()
	}
	return rep, nil
}

// walkRepair compares the source's records from from (a record
// boundary) up to the source's committed end and the target's data end,
// and rewrites the target's records that differ.
func walkRepair(ctx context.Context, cl *commitLogFiles, src RepairSource, from, srcEnd, targetEnd int64,
	dryRun bool, rep *OfflineRepairReport) error {
	var buf []byte
	var bufAt int64
	for pos := from; pos < srcEnd && pos < targetEnd; {
		if err := ctx.Err(); err != nil {
			return err
		}
		fileEnd := pos - pos%cl.fileSize + cl.fileSize
		limit := min(fileEnd, srcEnd)
		var info record.Info
		var err error
		for want := int64(1 << 20); ; want *= 2 {
			if pos >= bufAt && pos < bufAt+int64(len(buf)) {
				info, err = record.Check(buf[pos-bufAt:], pos, true)
				if !errors.Is(err, record.ErrTruncated) || bufAt+int64(len(buf)) >= limit {
					break
				}
			}
			bufAt = pos
			if buf, err = src.ReadAt(ctx, pos, min(want, limit-pos, maxRepairRead)); err != nil {
				return fmt.Errorf("cluster: read the source at %d: %w", pos, err)
			}
		}
		if errors.Is(err, record.ErrNoRecord) {
			break // the source's data ends here
		}
		if err != nil {
			return fmt.Errorf("%w: the source's record at %d is damaged too: %w", ErrNoRepair, pos, err)
		}
		size := int64(info.Size)
		if info.Blank {
			size = 8 // the rest of the file is not record data
		}
		theirs := buf[pos-bufAt : pos-bufAt+size]
		mine := make([]byte, size)
		if err := cl.readAt(mine, pos); err != nil {
			return err
		}
		rep.Records++
		if string(mine) != string(theirs) {
			rep.Repaired = append(rep.Repaired, pos)
			if !dryRun {
				if err := cl.writeAt(theirs, pos); err != nil {
					return err
				}
			}
		}
		if info.Blank {
			pos = fileEnd
		} else {
			pos += size
		}
		rep.To = pos
	}
	return nil
}

// commitLogFiles is a store directory's CommitLog files, opened without
// the store.
type commitLogFiles struct {
	fileSize int64
	starts   []int64
	files    []*os.File
}

func openCommitLogFiles(dir string, write bool) (*commitLogFiles, error) {
	d := filepath.Join(dir, "commitlog")
	ents, err := os.ReadDir(d)
	if err != nil {
		return nil, fmt.Errorf("cluster: %w", err)
	}
	c := &commitLogFiles{}
	flag := os.O_RDONLY
	if write {
		flag = os.O_RDWR
	}
	for _, e := range ents {
		start, err := strconv.ParseInt(e.Name(), 10, 64)
		if err != nil || len(e.Name()) != 20 || !e.Type().IsRegular() {
			continue
		}
		f, err := os.OpenFile(filepath.Join(d, e.Name()), flag, 0)
		if err != nil {
			return nil, errors.Join(fmt.Errorf("cluster: %w", err), c.close())
		}
		c.files, c.starts = append(c.files, f), append(c.starts, start)
		fi, err := f.Stat()
		if err != nil {
			return nil, errors.Join(fmt.Errorf("cluster: %w", err), c.close())
		}
		if c.fileSize == 0 {
			c.fileSize = fi.Size()
		}
		if fi.Size() != c.fileSize || start%c.fileSize != 0 {
			return nil, errors.Join(fmt.Errorf("cluster: CommitLog file %s is %d bytes at %d; the others %d", f.Name(), fi.Size(), start, c.fileSize), c.close())
		}
	}
	if len(c.files) == 0 {
		return nil, fmt.Errorf("cluster: no CommitLog files in %s", d)
	}
	for i := 1; i < len(c.starts); i++ {
		if c.starts[i] != c.starts[i-1]+c.fileSize {
			return nil, errors.Join(fmt.Errorf("cluster: CommitLog files in %s are not contiguous at %d", d, c.starts[i-1]+c.fileSize), c.close())
		}
	}
	return c, nil
}

func (c *commitLogFiles) minOffset() int64 { return c.starts[0] }

// locate returns the file holding off and the position in it.
func (c *commitLogFiles) locate(off int64) (*os.File, int64, error) {
	i := int((off - c.starts[0]) / c.fileSize)
	if off < c.starts[0] || i >= len(c.files) {
		return nil, 0, fmt.Errorf("cluster: CommitLog offset %d is not held (%d..%d)", off, c.starts[0], c.starts[0]+int64(len(c.files))*c.fileSize)
	}
	return c.files[i], off - c.starts[i], nil
}

func (c *commitLogFiles) readAt(b []byte, off int64) error {
	for len(b) > 0 {
		f, at, err := c.locate(off)
		if err != nil {
			return err
		}
		n := min(int64(len(b)), c.fileSize-at)
		if _, err := f.ReadAt(b[:n], at); err != nil && !errors.Is(err, io.EOF) {
			return fmt.Errorf("cluster: %w", err)
		}
		b, off = b[n:], off+n
	}
	return nil
}

func (c *commitLogFiles) writeAt(b []byte, off int64) error {
	f, at, err := c.locate(off)
	if err != nil {
		return err
	}
	if at+int64(len(b)) > c.fileSize {
		return fmt.Errorf("cluster: record at %d crosses a CommitLog file end", off)
	}
	if _, err := f.WriteAt(b, at); err != nil {
		return fmt.Errorf("cluster: %w", err)
	}
	return nil
}

// lastNonZero returns the offset after the last non-zero byte of the
// last file that has one: where the data ends.
func (c *commitLogFiles) lastNonZero() (int64, error) {
	const block = 1 << 20
	b := make([]byte, block)
	for i := len(c.files) - 1; i >= 0; i-- {
		for end := c.fileSize; end > 0; {
			start := max(0, end-block)
			if _, err := c.files[i].ReadAt(b[:end-start], start); err != nil && !errors.Is(err, io.EOF) {
				return 0, fmt.Errorf("cluster: %w", err)
			}
			for j := end - start - 1; j >= 0; j-- {
				if b[j] != 0 {
					return c.starts[i] + start + j + 1, nil
				}
			}
			end = start
		}
	}
	return c.starts[0], nil
}

// dataEnd returns the end of the last valid record of the last file with
// data (a stopped replica's committed end).
func (c *commitLogFiles) dataEnd() (int64, error) {
	last, err := c.lastNonZero()
	if err != nil {
		return 0, err
	}
	i := slices.IndexFunc(c.starts, func(s int64) bool { return last <= s+c.fileSize })
	if i < 0 || last == c.starts[0] {
		return c.starts[0], nil
	}
	b := make([]byte, c.fileSize)
	if _, err := c.files[i].ReadAt(b, 0); err != nil && !errors.Is(err, io.EOF) {
		return 0, fmt.Errorf("cluster: %w", err)
	}
	pos := int64(0)
	for pos < c.fileSize {
		info, err := record.Check(b[pos:], c.starts[i]+pos, true)
		if err != nil {
			break
		}
		if info.Blank {
			pos = c.fileSize
			break
		}
		pos += int64(info.Size)
	}
	return c.starts[i] + pos, nil
}

func (c *commitLogFiles) sync() error {
	var errs []error
	for _, f := range c.files {
		errs = append(errs, f.Sync())
	}
	return errors.Join(errs...)
}

func (c *commitLogFiles) close() error {
	var errs []error
	for _, f := range c.files {
		errs = append(errs, f.Close())
	}
	c.files = nil
	return errors.Join(errs...)
}
