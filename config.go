package rocketstore

import (
	"log/slog"
	"net/netip"
	"reflect"
	"time"

	"github.com/rocketstore/rocketstore/engine"
)

// FlushDiskType selects when a put is acknowledged relative to the disk.
type FlushDiskType int

// Flush disk types (Config.FlushDiskType).
const (
	// AsyncFlush acknowledges a put once it is in the page cache; a flush
	// service syncs in the background (RocketMQ's ASYNC_FLUSH, the default).
	AsyncFlush FlushDiskType = iota
	// SyncFlush acknowledges a put only after it is synced, with group
	// commit (RocketMQ's SYNC_FLUSH).
	SyncFlush
)

// String returns RocketMQ's name for t.
func (t FlushDiskType) String() string { return engine.FlushDiskType(t).String() }

// DamagePolicy says what recovery does with a damaged CommitLog record that
// intact records follow but that it cannot prove to lie in the part of the
// log that was durable before the crash: it may be damage, or a record torn
// by the crash with later pages that happened to reach the disk first.
type DamagePolicy int

// Damage policies (Config.OnUndecidableDamage).
const (
	// DamageRefuse (the default) makes Open fail with an error wrapping
	// ErrCorruptStore, naming the file and offset, before anything is
	// truncated.
	DamageRefuse DamagePolicy = iota
	// DamageTruncate cuts the CommitLog at the damaged record, dropping
	// everything after it (RocketMQ's behaviour).
	DamageTruncate
	// DamageSkip keeps the records after it and skips the damaged one, as
	// recovery does for damage it can prove.
	DamageSkip
)

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
	// group commit before failing with ErrFlushTimeout (5 s).
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
	// Now returns the current time in milliseconds (time.Now). Tests use
	// it to control store timestamps.
	Now func() int64
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
}

// RetentionPolicy says when CommitLog files expire (RocketMQ's
// CleanCommitLogService). The zero value of each field means RocketMQ's
// default, given in its comment.
type RetentionPolicy struct {
	// FileReservedTime is how long a file is kept after its last message
	// was stored (72 h).
	FileReservedTime time.Duration
	// DeleteWhen lists the hours of the day ("04", or "01;02") in which
	// expired files are deleted ("04").
	DeleteWhen string
	// DiskMaxUsedSpaceRatio is the disk usage, in percent, above which
	// expired files are deleted at any hour (75, clamped to 10..95).
	DiskMaxUsedSpaceRatio int
	// DiskCleanForciblyRatio is the usage above which files are deleted
	// even before they expire (85).
	DiskCleanForciblyRatio int
	// MaxFilesPerRound bounds the CommitLog files deleted by one round
	// (10, RocketMQ's DELETE_FILES_BATCH_MAX).
	MaxFilesPerRound int
	// CleanResourceInterval is the period of the clean service (10 s).
	CleanResourceInterval time.Duration
	// DiskUsage returns the used share (0..1) of the disk holding the
	// store; nil means usage is unknown and never triggers a clean (Open
	// on a directory sets it to that disk's usage).
	DiskUsage func() (float64, error)
}

// engine returns the engine's config for c.
func (c Config) engine() engine.Config {
	var e engine.Config
	copyFields(&e, c)
	return e
}

// configOf is the inverse of Config.engine.
func configOf(e engine.Config) Config {
	var c Config
	copyFields(&c, e)
	return c
}

// copyFields sets each exported field of *dst from the field of the same
// name of src, converting between this package's types and the engine's
// (FlushDiskType, RetentionPolicy, DamagePolicy have the engine's
// layouts). Config and engine.Config have the same exported fields, which
// a test checks both ways, so that a new engine field cannot be forgotten.
func copyFields(dst, src any) {
	d, s := reflect.ValueOf(dst).Elem(), reflect.ValueOf(src)
	for i := range d.NumField() {
		if f := d.Type().Field(i); f.IsExported() {
			d.Field(i).Set(s.FieldByName(f.Name).Convert(f.Type))
		}
	}
}
