package crashsim

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strings"
	"sync"

	"github.com/spf13/afero"

	"github.com/rocketstore/rocketstore/backend"
)

var _ backend.FS = (*FS)(nil)

// Options change the model.
type Options struct {
	// IgnoreSyncDir makes SyncDir a no-op that reports success: directory
	// operations then stay pending until the crash. It is a deliberately
	// broken backend that shows the crash tests catch a missing directory
	// sync.
	IgnoreSyncDir bool
	// DurableMkdir makes directory creation durable at once. Strict POSIX
	// wants a sync of the parent directory; journaling file systems
	// (ext4, XFS) commit the mkdir with the next fsync of anything below
	// it. Tests that want to look past a missing parent sync set it.
	DurableMkdir bool
	// ReuseFreedBlocks models file systems that may expose, after a power
	// cut, the old content of freed blocks in a file's pages that were
	// never written back: ext4 in data=writeback mode (and ext3, XFS
	// before 2.6.22) commit the block allocation of a file in the journal
	// before its data reaches the disk, so a new file's page may come back
	// holding whatever the block held when it was freed, such as the data
	// of a deleted file. Preallocated files (fallocate's unwritten
	// extents) and data=ordered mounts do not, so this is a harsher disk.
	//
	// The FS keeps a graveyard: the written-back, non-zero pages of every
	// file whose removal (or replacement by a rename) was made durable by
	// SyncDir, up to MaxFreedPages, newest kept. At a crash, a dirty page
	// that was never written back and comes back "old" may instead come
	// back holding any graveyard page (whole, at any page index of any
	// file), chosen by the Chooser. The graveyard is not carried into
	// the crash image: a crash image loaded by New starts with none.
	ReuseFreedBlocks bool
	// ReuseFreedBlocksUnder, if set, limits the files that may expose a
	// freed block to those below this directory (the graveyard still
	// takes the blocks of every removed file).
	ReuseFreedBlocksUnder string
}

// MaxFreedPages bounds the graveyard of Options.ReuseFreedBlocks.
const MaxFreedPages = 64

// FS is the crash-simulating file system. Create it with New.
type FS struct {
	opts Options

	mu struct {
		sync.Mutex
		// files and dirs are the namespace the process sees.
		files map[string]*inode
		dirs  map[string]bool
		// disk holds the durable namespace; pending the directory
		// operations not yet made durable by SyncDir, in order.
		disk    namespace
		pending []dirOp
		locks   map[string]bool
		handles map[*segment]struct{}
		inj     Injector
		frozen  bool
		// freed is the graveyard of Options.ReuseFreedBlocks.
		freed  [][]byte
		counts [numOpKinds]int
	}
}

// New returns an FS whose content, all durable, is a copy of the files and
// directories in afs (nil: empty). Later changes to afs are not seen.
func New(afs afero.Fs, opts Options) (*FS, error) {
	f := &FS{opts: opts}
	f.mu.files = make(map[string]*inode)
	f.mu.dirs = map[string]bool{".": true}
	f.mu.locks = make(map[string]bool)
	f.mu.handles = make(map[*segment]struct{})
	if afs != nil {
		if err := f.load(afs); err != nil {
			return nil, err
		}
	}
	f.mu.disk = namespace{files: cloneMap(f.mu.files), dirs: cloneMap(f.mu.dirs)}
	return f, nil
}

func (f *FS) load(afs afero.Fs) error {
	return afero.Walk(afs, ".", func(p string, info fs.FileInfo, err error) error {
		if err != nil {
			return err
		}
		c := clean(p)
		if info.IsDir() {
			f.mu.dirs[c] = true
			return nil
		}
		data, err := afero.ReadFile(afs, p)
		if err != nil {
			return err
		}
		f.mu.files[c] = loadedInode(data)
		return nil
	})
}

// SetInjector installs inj (nil removes it); it sees every later operation.
func (f *FS) SetInjector(inj Injector) {
	f.mu.Lock()
	f.mu.inj = inj
	f.mu.Unlock()
}

// Freeze stops the FS as a power cut would: every later operation fails
// with ErrFrozen. Crash still works.
func (f *FS) Freeze() {
	f.mu.Lock()
	f.mu.frozen = true
	f.mu.Unlock()
}

// Frozen reports whether the FS was frozen (by Freeze or an ErrCrash).
func (f *FS) Frozen() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.mu.frozen
}

// Kill models the death of the process that uses the FS, without a power
// cut: its handles close and its locks go, the page cache and the pending
// directory operations stay (the kernel still holds them), and the FS
// thaws. The injector stays installed. A new store may then open the
// same FS.
func (f *FS) Kill() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for s := range f.mu.handles {
		s.closed.Store(true)
	}
	clear(f.mu.handles)
	clear(f.mu.locks)
	f.mu.frozen = false
}

// Count returns how many operations of kind k were attempted.
func (f *FS) Count(k OpKind) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.mu.counts[k]
}

// enter counts op and applies the frozen state and the injector. Called
// without f.mu held.
func (f *FS) enter(op Op) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.enterLocked(op)
}

func (f *FS) enterLocked(op Op) error {
	if f.mu.frozen {
		return ErrFrozen
	}
	f.mu.counts[op.Kind]++
	if f.mu.inj == nil {
		return nil
	}
	err := f.mu.inj.Inject(op)
	if errorsIs(err, ErrCrash) {
		f.mu.frozen = true
	}
	return err
}

func (f *FS) forgetHandle(s *segment) {
	f.mu.Lock()
	delete(f.mu.handles, s)
	f.mu.Unlock()
}

func (f *FS) open(name, p string, ino *inode) *segment {
	s := &segment{fs: f, name: name, path: p, ino: ino}
	f.mu.handles[s] = struct{}{}
	return s
}

// Create makes a zero-filled file of size bytes; its directory entry is
// pending until SyncDir of its directory.
func (f *FS) Create(name string, size int64) (backend.Segment, error) {
	p := clean(name)
	f.mu.Lock()
	defer f.mu.Unlock()
	if size < 0 {
		return nil, pathErr("create", name, fs.ErrInvalid)
	}
	if err := f.enterLocked(Op{Kind: OpCreate, Path: p, Len: size}); err != nil {
		return nil, pathErr("create", name, err)
	}
	if err := f.checkParent(p); err != nil {
		return nil, pathErr("create", name, err)
	}
	if f.exists(p) {
		return nil, pathErr("create", name, backend.ErrExist)
	}
	ino := newInode(size)
	f.mu.files[p] = ino
	f.mu.pending = append(f.mu.pending, dirOp{kind: dirCreate, path: p, ino: ino})
	return f.open(name, p, ino), nil
}

// Open returns a handle on an existing file.
func (f *FS) Open(name string) (backend.Segment, error) {
	p := clean(name)
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.enterLocked(Op{Kind: OpOpen, Path: p}); err != nil {
		return nil, pathErr("open", name, err)
	}
	ino := f.mu.files[p]
	if ino == nil {
		if f.mu.dirs[p] {
			return nil, pathErr("open", name, errIsDir)
		}
		return nil, pathErr("open", name, backend.ErrNotExist)
	}
	return f.open(name, p, ino), nil
}

// Stat returns the size of a file.
func (f *FS) Stat(name string) (int64, error) {
	p := clean(name)
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.enterLocked(Op{Kind: OpStat, Path: p}); err != nil {
		return 0, pathErr("stat", name, err)
	}
	ino := f.mu.files[p]
	if ino == nil {
		if f.mu.dirs[p] {
			return 0, pathErr("stat", name, errIsDir)
		}
		return 0, pathErr("stat", name, backend.ErrNotExist)
	}
	return ino.size(), nil
}

// Remove deletes a file or an empty directory (pending until SyncDir).
func (f *FS) Remove(name string) error {
	p := clean(name)
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.enterLocked(Op{Kind: OpRemove, Path: p}); err != nil {
		return pathErr("remove", name, err)
	}
	if ino := f.mu.files[p]; ino != nil {
		f.unlink(p, ino)
		return nil
	}
	if !f.mu.dirs[p] || p == "." {
		return pathErr("remove", name, backend.ErrNotExist)
	}
	if len(f.children(p)) > 0 {
		return pathErr("remove", name, errNotEmpty)
	}
	f.rmdir(p)
	return nil
}

func (f *FS) unlink(p string, ino *inode) {
	delete(f.mu.files, p)
	f.mu.pending = append(f.mu.pending, dirOp{kind: dirRemove, path: p, ino: ino})
}

func (f *FS) rmdir(p string) {
	delete(f.mu.dirs, p)
	f.mu.pending = append(f.mu.pending, dirOp{kind: dirRmdir, path: p})
}

// Rename atomically replaces newname with the file oldname. Renaming
// directories is not modelled (the engine never does it).
func (f *FS) Rename(oldname, newname string) error {
	op, np := clean(oldname), clean(newname)
	f.mu.Lock()
	defer f.mu.Unlock()
	lerr := func(err error) error { return &os.LinkError{Op: "rename", Old: oldname, New: newname, Err: err} }
	if err := f.enterLocked(Op{Kind: OpRename, Path: op, To: np}); err != nil {
		return lerr(err)
	}
	ino := f.mu.files[op]
	switch {
	case ino == nil && f.mu.dirs[op]:
		return lerr(errors.New("crashsim: renaming a directory is not modelled"))
	case ino == nil:
		return lerr(backend.ErrNotExist)
	case f.mu.dirs[np]:
		return lerr(errIsDir)
	}
	if err := f.checkParent(np); err != nil {
		return lerr(err)
	}
	if op == np {
		return nil
	}
	delete(f.mu.files, op)
	f.mu.files[np] = ino
	f.mu.pending = append(f.mu.pending, dirOp{kind: dirRename, path: op, to: np, ino: ino})
	return nil
}

// List returns the sorted names of the files directly in dir.
func (f *FS) List(dir string) ([]string, error) { return f.readDir("list", dir, false) }

// ListDirs returns the sorted names of the directories directly in dir.
func (f *FS) ListDirs(dir string) ([]string, error) { return f.readDir("listdirs", dir, true) }

func (f *FS) readDir(opName, dir string, dirs bool) ([]string, error) {
	p := clean(dir)
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.enterLocked(Op{Kind: OpList, Path: p}); err != nil {
		return nil, pathErr(opName, dir, err)
	}
	if !f.mu.dirs[p] {
		return nil, pathErr(opName, dir, backend.ErrNotExist)
	}
	names := []string{}
	for _, c := range f.children(p) {
		if f.mu.dirs[c] == dirs {
			names = append(names, c[strings.LastIndexByte(c, '/')+1:])
		}
	}
	slices.Sort(names)
	return names, nil
}

// children returns the paths directly below dir.
func (f *FS) children(dir string) []string {
	var out []string
	add := func(p string) {
		if p != "." && parent(p) == dir {
			out = append(out, p)
		}
	}
	for p := range f.mu.files {
		add(p)
	}
	for p := range f.mu.dirs {
		add(p)
	}
	return out
}

// MkdirAll creates dir and its missing parents, each pending in its parent.
func (f *FS) MkdirAll(dir string) error {
	p := clean(dir)
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.enterLocked(Op{Kind: OpMkdir, Path: p}); err != nil {
		return pathErr("mkdir", dir, err)
	}
	var missing []string
	for d := p; !f.mu.dirs[d]; d = parent(d) {
		if f.mu.files[d] != nil {
			return pathErr("mkdir", dir, errNotDir)
		}
		missing = append(missing, d)
	}
	for i := len(missing) - 1; i >= 0; i-- {
		f.mu.dirs[missing[i]] = true
		op := dirOp{kind: dirMkdir, path: missing[i]}
		if f.opts.DurableMkdir {
			f.mu.disk.apply(op)
			continue
		}
		f.mu.pending = append(f.mu.pending, op)
	}
	return nil
}

// RemoveAll deletes dir and everything below it; a missing dir is fine.
func (f *FS) RemoveAll(dir string) error {
	p := clean(dir)
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.enterLocked(Op{Kind: OpRemoveAll, Path: p}); err != nil {
		return pathErr("removeall", dir, err)
	}
	if ino := f.mu.files[p]; ino != nil {
		f.unlink(p, ino)
		return nil
	}
	f.removeTree(p)
	return nil
}

// removeTree unlinks the files below p, then its directories deepest first.
func (f *FS) removeTree(p string) {
	if !f.mu.dirs[p] {
		return
	}
	for _, c := range sortedKeys(f.mu.files) {
		if within(p, c) {
			f.unlink(c, f.mu.files[c])
		}
	}
	dirs := sortedKeys(f.mu.dirs)
	for i := len(dirs) - 1; i >= 0; i-- {
		if d := dirs[i]; d != "." && within(p, d) {
			f.rmdir(d)
		}
	}
}

// SyncDir makes the pending operations on the entries of dir durable.
func (f *FS) SyncDir(dir string) error {
	p := clean(dir)
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.enterLocked(Op{Kind: OpSyncDir, Path: p}); err != nil {
		return pathErr("syncdir", dir, err)
	}
	if !f.mu.dirs[p] {
		return pathErr("syncdir", dir, backend.ErrNotExist)
	}
	if f.opts.IgnoreSyncDir {
		return nil
	}
	rest := f.mu.pending[:0]
	for _, op := range f.mu.pending {
		if op.touches(p) {
			f.applyDurable(op)
		} else {
			rest = append(rest, op)
		}
	}
	clear(f.mu.pending[len(rest):])
	f.mu.pending = rest
	return nil
}

// applyDurable makes op durable; with Options.ReuseFreedBlocks, the
// written-back pages of a file it drops from the disk go to the graveyard.
func (f *FS) applyDurable(op dirOp) {
	var victim *inode
	switch op.kind {
	case dirRemove:
		if f.mu.disk.files[op.path] == op.ino {
			victim = op.ino
		}
	case dirRename:
		if f.mu.disk.files[op.path] == op.ino && f.mu.disk.files[op.to] != op.ino {
			victim = f.mu.disk.files[op.to] // replaced by the rename
		}
	}
	f.mu.disk.apply(op)
	if !f.opts.ReuseFreedBlocks || victim == nil {
		return
	}
	for _, ino := range f.mu.disk.files {
		if ino == victim {
			return // still on the disk under another name
		}
	}
	f.mu.freed = append(f.mu.freed, victim.durablePages()...)
	if n := len(f.mu.freed) - MaxFreedPages; n > 0 {
		f.mu.freed = append([][]byte(nil), f.mu.freed[n:]...)
	}
}

// FreedPages returns how many pages the graveyard of
// Options.ReuseFreedBlocks holds.
func (f *FS) FreedPages() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.mu.freed)
}

// Lock takes an in-process lock on name, creating the file.
func (f *FS) Lock(name string) (backend.Unlocker, error) {
	p := clean(name)
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.enterLocked(Op{Kind: OpLock, Path: p}); err != nil {
		return nil, pathErr("lock", name, err)
	}
	if f.mu.locks[p] {
		return nil, pathErr("lock", name, backend.ErrLocked)
	}
	if err := f.checkParent(p); err != nil {
		return nil, pathErr("lock", name, err)
	}
	if f.mu.files[p] == nil {
		ino := newInode(0)
		f.mu.files[p] = ino
		f.mu.pending = append(f.mu.pending, dirOp{kind: dirCreate, path: p, ino: ino})
	}
	f.mu.locks[p] = true
	return &lock{fs: f, path: p}, nil
}

type lock struct {
	fs   *FS
	path string
	once sync.Once
}

func (l *lock) Unlock() error {
	l.once.Do(func() {
		l.fs.mu.Lock()
		delete(l.fs.mu.locks, l.path)
		l.fs.mu.Unlock()
	})
	return nil
}

func (f *FS) exists(p string) bool { return f.mu.files[p] != nil || f.mu.dirs[p] }

func (f *FS) checkParent(p string) error {
	d := parent(p)
	if f.mu.dirs[d] {
		return nil
	}
	if f.mu.files[d] != nil {
		return errNotDir
	}
	return backend.ErrNotExist
}

var (
	errIsDir    = errors.New("is a directory")
	errNotDir   = errors.New("not a directory")
	errNotEmpty = errors.New("directory not empty")
)

func pathErr(op, name string, err error) error {
	return &fs.PathError{Op: op, Path: name, Err: err}
}

func errorsIs(err, target error) bool { return err != nil && errors.Is(err, target) }

// cloneMap returns a shallow copy of m, never nil (the standard maps.Clone
// returns nil for nil).
func cloneMap[V any](m map[string]V) map[string]V {
	out := make(map[string]V, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// String summarises the FS for test logs.
func (f *FS) String() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return fmt.Sprintf("crashsim.FS{%d files, %d dirs, %d pending dir ops, frozen %v}",
		len(f.mu.files), len(f.mu.dirs), len(f.mu.pending), f.mu.frozen)
}
