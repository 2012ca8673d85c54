package verify

import (
	"errors"
	"fmt"
	"time"

	"github.com/rocketstore/rocketstore/backend"
	"github.com/rocketstore/rocketstore/engine"
	"github.com/rocketstore/rocketstore/internal/defaults"
)

// Names inside a store root (RocketMQ's layout).
const (
	commitLogDir    = "commitlog"
	consumeQueueDir = "consumequeue"
	checkpointFile  = "checkpoint"
	abortFile       = "abort"
	lockFile        = "lock"
)

// Errors returned by Run; violations are not errors.
var (
	// ErrNotStore reports a directory with none of a store's files.
	ErrNotStore = errors.New("verify: not a store directory (no commitlog, consumequeue or checkpoint)")
	// ErrInUse reports a store locked by a running process.
	ErrInUse = errors.New("verify: store is in use by another process")
)

// Options tune Run. The zero value checks a store written with any file
// sizes and RocketMQ's default delay levels.
type Options struct {
	// CommitLogFileSize is the expected size of every CommitLog file;
	// 0 takes the size of the first file.
	CommitLogFileSize int64
	// ConsumeQueueUnits is the expected number of units in every
	// ConsumeQueue file; 0 takes the size of each queue's first file.
	ConsumeQueueUnits int64
	// DelayLevels are the store's delay levels, which give the tagsCode
	// (deliver time) of SCHEDULE_TOPIC_XXXX units; nil means RocketMQ's
	// defaults.
	DelayLevels []time.Duration
	// CheckpointMargin is how far a checkpoint timestamp may be ahead of
	// the last record's store time (3 s, the margin RocketMQ's recovery
	// subtracts from the checkpoint, so anything within it is harmless).
	// A negative value allows none.
	CheckpointMargin time.Duration
	// MaxViolations bounds the list in the report (1000); counting goes on.
	MaxViolations int
	// Progress, if set, is called with the bytes checked so far and the
	// total, after each file and every few MiB within large files.
	Progress func(done, total int64)
}

func (o Options) withDefaults() Options {
	if o.DelayLevels == nil { // an empty list is a choice: no delay levels
		o.DelayLevels = engine.DefaultDelayLevels()
	}
	defaults.Set(&o.CheckpointMargin, 3*time.Second)
	o.CheckpointMargin = max(o.CheckpointMargin, 0)
	if o.MaxViolations <= 0 {
		o.MaxViolations = 1000
	}
	return o
}

// checker holds the state of one Run.
type checker struct {
	fs      backend.FS
	deleted map[string]int64 // engine.DeletedTopicsFile
	opts    Options
	rep     *Report
	log     *commitLog
	queues  map[string]map[int32]*queue
	// order lists the queues in directory order, for a stable report.
	order    []*queue
	progress progress
}

// Run checks the store in the root of fs and reports every violation it
// finds. The error is non-nil only when the store cannot be read (or is in
// use); the report is then incomplete.
func Run(fs backend.FS, opts Options) (rep Report, err error) {
	c := &checker{fs: fs, opts: opts.withDefaults(), rep: &rep, queues: make(map[string]map[int32]*queue)}
	c.progress.fn = c.opts.Progress
	if err := c.requireStore(); err != nil {
		return rep, err
	}
	unlock, err := c.lock()
	if err != nil {
		return rep, err
	}
	defer func() {
		c.closeAll()
		if uerr := unlock(); err == nil && uerr != nil {
			err = uerr
		}
	}()
	if _, err := fs.Stat(abortFile); err == nil {
		rep.Unclean = true
	}
	// Records of a deleted topic stay in the CommitLog without queues.
	if c.deleted, err = engine.ReadDeletedTopics(fs); err != nil {
		return rep, err
	}
	if err := c.openCommitLog(); err != nil {
		return rep, err
	}
	if err := c.openQueues(); err != nil {
		return rep, err
	}
	c.progress.report()
	c.scanCommitLog()
	c.checkUnits()
	c.checkIndex()
	if err := c.checkCheckpoint(); err != nil {
		return rep, err
	}
	c.progress.finish()
	return rep, nil
}

// requireStore refuses a directory that holds nothing of a store, so that
// a mistyped path is an error rather than a clean report.
func (c *checker) requireStore() error {
	for _, dir := range []string{commitLogDir, consumeQueueDir} {
		if _, err := c.fs.ListDirs(dir); err == nil {
			return nil
		} else if !errors.Is(err, backend.ErrNotExist) {
			return fmt.Errorf("verify: list %s: %w", dir, err)
		}
	}
	if _, err := c.fs.Stat(checkpointFile); err == nil {
		return nil
	}
	return ErrNotStore
}

// lock takes the store's lock if the store has a lock file; creating one
// would write into a directory that is meant to be read only.
func (c *checker) lock() (func() error, error) {
	noop := func() error { return nil }
	if _, err := c.fs.Stat(lockFile); err != nil {
		return noop, nil
	}
	l, err := c.fs.Lock(lockFile)
	if errors.Is(err, backend.ErrLocked) {
		return nil, fmt.Errorf("%w: %w", ErrInUse, err)
	}
	if err != nil {
		return nil, fmt.Errorf("verify: lock: %w", err)
	}
	return l.Unlock, nil
}

func (c *checker) violation(k Kind, file string, off int64, format string, args ...any) {
	c.rep.add(c.opts.MaxViolations, Violation{Kind: k, File: file, Offset: off, Detail: fmt.Sprintf(format, args...)})
}

// closeAll releases every segment opened by the run.
func (c *checker) closeAll() {
	if c.log != nil {
		c.log.files.close()
	}
	for _, q := range c.order {
		q.files.close()
	}
}
