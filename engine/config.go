package engine

import (
	"fmt"
	"log/slog"
	"net/netip"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/rocketstore/rocketstore/internal/clocks"
	"github.com/rocketstore/rocketstore/internal/defaults"
	"github.com/rocketstore/rocketstore/internal/hooks"
)

// FlushDiskType selects when a put is acknowledged relative to the disk.
type FlushDiskType int

const (
	// AsyncFlush acknowledges a put once it is in the page cache; a flush
	// service syncs in the background (RocketMQ's ASYNC_FLUSH, the default).
	AsyncFlush FlushDiskType = iota
	// SyncFlush acknowledges a put only after it is synced, with group
	// commit (RocketMQ's SYNC_FLUSH).
	SyncFlush
)

// String returns RocketMQ's name for t.
func (t FlushDiskType) String() string {
	if t == SyncFlush {
		return "SYNC_FLUSH"
	}
	return "ASYNC_FLUSH"
}

// Config configures a Store. The zero value of every field means RocketMQ
// 4.9.4's default, given in the field's comment.
type Config struct {
	// CommitLogFileSize is the size of each CommitLog file (1 GiB). When
	// the store already has files, their size is used and a different
	// non-zero value here is an error.
	CommitLogFileSize int64
	// ConsumeQueueUnits is the number of 20-byte units in each
	// ConsumeQueue file (300,000, i.e. 6,000,000-byte files).
	ConsumeQueueUnits int64
	// FlushDiskType is AsyncFlush (the default) or SyncFlush.
	FlushDiskType FlushDiskType
	// SyncFlushTimeout bounds how long a SyncFlush put waits for its
	// group commit before failing with ErrFlushTimeout (5 s). A put that
	// leads the commit (runs the sync itself) returns when its sync does,
	// with ErrFlushTimeout if that took longer.
	SyncFlushTimeout time.Duration
	// FlushIntervalCommitLog is the async CommitLog flush period (500 ms).
	FlushIntervalCommitLog time.Duration
	// FlushCommitLogLeastPages is the number of dirty 4 KiB pages that an
	// async flush waits for (4).
	FlushCommitLogLeastPages int
	// FlushCommitLogThoroughInterval forces a flush of everything at least
	// this often (10 s).
	FlushCommitLogThoroughInterval time.Duration
	// FlushIntervalConsumeQueue is the ConsumeQueue flush period (1 s).
	FlushIntervalConsumeQueue time.Duration
	// FlushConsumeQueueLeastPages is the number of dirty pages a
	// ConsumeQueue flush waits for (2).
	FlushConsumeQueueLeastPages int
	// FlushConsumeQueueThoroughInterval forces a full ConsumeQueue flush and
	// a checkpoint flush at least this often (60 s).
	FlushConsumeQueueThoroughInterval time.Duration
	// MaxMessageSize bounds a message body (4 MiB); the whole record may
	// exceed it by at most 64 KiB.
	MaxMessageSize int
	// SkipCRCOnRecover disables the body CRC check during recovery
	// (RocketMQ's checkCRCOnRecover = true, so false here).
	SkipCRCOnRecover bool
	// MaxTransferBytesOnMessageInMemory / MaxTransferCountOnMessageInMemory
	// bound a getMessage result served from memory (256 KiB / 32).
	MaxTransferBytesOnMessageInMemory int
	MaxTransferCountOnMessageInMemory int
	// MaxTransferBytesOnMessageInDisk / MaxTransferCountOnMessageInDisk
	// bound a result whose data is judged to be on disk (64 KiB / 8).
	MaxTransferBytesOnMessageInDisk int
	MaxTransferCountOnMessageInDisk int
	// AccessMessageInMemoryMaxRatio is the share of physical memory, in
	// percent, within which the newest data is considered in memory (40).
	AccessMessageInMemoryMaxRatio int
	// TotalPhysicalMemory is the memory size used with the ratio above;
	// 0 means the machine's memory as read from /proc/meminfo (8 GiB when
	// that cannot be read).
	TotalPhysicalMemory int64
	// StoreHost is the address written into each record and into offset
	// message ids (127.0.0.1:10911, the broker's default listen port).
	StoreHost netip.AddrPort
	// DelayLevels are the delay durations of levels 1..n, used to compute
	// the deliver time of SCHEDULE_TOPIC_XXXX messages ("1s 5s 10s 30s 1m
	// 2m 3m 4m 5m 6m 7m 8m 9m 10m 20m 30m 1h 2h").
	DelayLevels []time.Duration
	// Logger receives recovery reports and service errors
	// (slog.Default()).
	Logger *slog.Logger
	// Clock is the store's clock; nil means the wall clock. It stamps
	// each record's store time (in milliseconds), times the checkpoint
	// and the fault logs, and runs the flush and clean services' tickers
	// and the sync-flush timeout; a broker hands the same clock to all its
	// services, so that one clock drives a whole broker (a test steps it
	// with a clockwork.FakeClock; a replay or a simulation can run it on
	// virtual time).
	Clock clockwork.Clock
	// Retention says when expired CommitLog files are deleted (RocketMQ's
	// defaults: files whose messages are all older than 72 h, at 04:00,
	// or at any hour when the disk is over 75 % full; see
	// RetentionPolicy). The clean service runs with the other services.
	Retention RetentionPolicy
	// OnUndecidableDamage says what recovery does with a damaged CommitLog
	// record that intact records follow, when it cannot prove that the
	// damage lies in the part of the log that was durable before a crash
	// (DamageRefuse: Open fails naming the file and offset). Damage it
	// can prove is always skipped and reported (RecoveryReport.Damaged);
	// a torn tail with nothing intact after it is always truncated.
	OnUndecidableDamage DamagePolicy

	// records opens the store for replicated records (records.go) with
	// commitPoint as its commit point (engineops.WithRecords).
	records     bool
	commitPoint int64

	// now reads Clock in milliseconds (set by withDefaults).
	now func() int64
	// hooks are the test switches (internal/hooks), out of the API.
	hooks hooks.Engine
}

func init() {
	hooks.RegisterEngine(func(cfg any) *hooks.Engine { return &cfg.(*Config).hooks })
}

// Default values, as in RocketMQ 4.9.4.
const (
	DefaultCommitLogFileSize = 1 << 30
	DefaultConsumeQueueUnits = 300000
	DefaultMaxMessageSize    = 4 << 20
)

// DefaultDelayLevels returns RocketMQ's 18 default delay levels.
func DefaultDelayLevels() []time.Duration {
	s, m, h := time.Second, time.Minute, time.Hour
	return []time.Duration{s, 5 * s, 10 * s, 30 * s, m, 2 * m, 3 * m, 4 * m, 5 * m,
		6 * m, 7 * m, 8 * m, 9 * m, 10 * m, 20 * m, 30 * m, h, 2 * h}
}

// withDefaults returns c with every zero field replaced by its default.
func (c Config) withDefaults() Config {
	defaults.Set(&c.CommitLogFileSize, DefaultCommitLogFileSize)
	defaults.Set(&c.ConsumeQueueUnits, DefaultConsumeQueueUnits)
	defaults.Set(&c.SyncFlushTimeout, 5*time.Second)
	defaults.Set(&c.FlushIntervalCommitLog, 500*time.Millisecond)
	defaults.Set(&c.FlushCommitLogThoroughInterval, 10*time.Second)
	defaults.Set(&c.FlushIntervalConsumeQueue, time.Second)
	defaults.Set(&c.FlushConsumeQueueThoroughInterval, 60*time.Second)
	defaults.Set(&c.FlushCommitLogLeastPages, 4)
	defaults.Set(&c.FlushConsumeQueueLeastPages, 2)
	defaults.Set(&c.MaxMessageSize, DefaultMaxMessageSize)
	defaults.Set(&c.MaxTransferBytesOnMessageInMemory, 256*1024)
	defaults.Set(&c.MaxTransferCountOnMessageInMemory, 32)
	defaults.Set(&c.MaxTransferBytesOnMessageInDisk, 64*1024)
	defaults.Set(&c.MaxTransferCountOnMessageInDisk, 8)
	defaults.Set(&c.AccessMessageInMemoryMaxRatio, 40)
	defaults.Lazy(&c.TotalPhysicalMemory, physicalMemory)
	if !c.StoreHost.IsValid() {
		c.StoreHost = netip.AddrPortFrom(netip.AddrFrom4([4]byte{127, 0, 0, 1}), 10911)
	}
	defaults.Lazy(&c.DelayLevels, DefaultDelayLevels)
	defaults.Set(&c.Logger, slog.Default())
	defaults.Set(&c.Clock, clockwork.NewRealClock())
	c.now = clocks.Millis(c.Clock)
	return c
}

// Validate reports the first setting that cannot work.
func (c Config) Validate() error {
	c = c.withDefaults()
	switch {
	case c.CommitLogFileSize < 4096:
		return fmt.Errorf("%w: CommitLogFileSize %d is below 4096", ErrConfig, c.CommitLogFileSize)
	case c.CommitLogFileSize > 1<<31-1:
		// Positions inside a file are int32 in RocketMQ's format.
		return fmt.Errorf("%w: CommitLogFileSize %d exceeds 2 GiB", ErrConfig, c.CommitLogFileSize)
	case c.ConsumeQueueUnits < 2:
		return fmt.Errorf("%w: ConsumeQueueUnits %d is below 2", ErrConfig, c.ConsumeQueueUnits)
	case c.MaxMessageSize < 0:
		return fmt.Errorf("%w: MaxMessageSize %d is negative", ErrConfig, c.MaxMessageSize)
	case c.FlushDiskType != AsyncFlush && c.FlushDiskType != SyncFlush:
		return fmt.Errorf("%w: unknown FlushDiskType %d", ErrConfig, c.FlushDiskType)
	case c.OnUndecidableDamage < DamageRefuse || c.OnUndecidableDamage > DamageSkip:
		return fmt.Errorf("%w: unknown OnUndecidableDamage %d", ErrConfig, c.OnUndecidableDamage)
	case c.AccessMessageInMemoryMaxRatio < 0 || c.AccessMessageInMemoryMaxRatio > 100:
		return fmt.Errorf("%w: AccessMessageInMemoryMaxRatio %d not in 0..100", ErrConfig, c.AccessMessageInMemoryMaxRatio)
	}
	return nil
}
