// Package hooks holds the switches that tests (and the module's own
// offline tools) use to drive or weaken the engine and the broker. They
// live in an internal package so that no exported type carries them:
// engine.Config, broker.Broker, schedule.Config and transaction.Config
// hold them in an unexported field, which only code in this module can
// reach (through EngineOf for the engine, ServiceOf for the services).
//
// This departs from Pebble's model (testing knobs as unexported fields set
// by tests of the same package) because the switches are needed across
// packages: the contract suite (engine/enginetest), the property tests
// (proptest), the broker and the read-only tools of cmd/rocketstore all
// set them. The engine and the services register their accessors at init,
// since this package cannot import them (they import this package).
package hooks

import "fmt"

// Engine holds the engine's switches. The zero value changes nothing.
type Engine struct {
	// Manual disables every background goroutine: the caller drives
	// flushes, dispatch and checkpoints through the Store's methods, and
	// a SyncFlush put flushes inline (deterministic tests; the read-only
	// tools, which must not start services on a store they only read).
	Manual bool

	// The fields below each disable one safety step so that the crash
	// tests can show that they catch its absence (proptest's
	// -brokenvariants). Never set them on a real store.

	// NoTailZeroing keeps the stale bytes past the recovered CommitLog
	// end instead of zeroing and syncing them.
	NoTailZeroing bool
	// IgnoreCommitPoint lets the dispatcher and the readers of a store
	// opened for replicated records (engineops.WithRecords) go past the
	// commit point, to the CommitLog's written end.
	IgnoreCommitPoint bool
	// RecoveryIgnoresCommitPoint lets recovery of a store opened for
	// replicated records dispatch (and keep queue units) past the commit
	// point given at open; the dispatcher still stops at it afterwards.
	RecoveryIgnoresCommitPoint bool
	// NoTruncateRollback keeps the queue offsets of the records that a
	// truncation of the uncommitted tail drops, instead of handing them
	// out again.
	NoTruncateRollback bool
	// NoPhysicalOffsetCheck accepts a record whose PHYSICALOFFSET is not
	// its position (recovery and dispatch).
	NoPhysicalOffsetCheck bool
	// NoMaxPhysicOffsetCheck drops the idempotency of the ConsumeQueue
	// builder (RocketMQ's putMessagePositionInfo): both the maxPhysicOffset
	// check (a unit for CommitLog bytes at or below the queue's
	// maxPhysicOffset is skipped) and the queue-index check (a unit whose
	// index is already written is skipped). They are one safety step: each
	// alone skips every replay the dispatcher makes (a replay is below
	// both marks), so switching off only one proves nothing. A replay
	// then takes RocketMQ's path for an out-of-order unit and is appended
	// at the queue's end, a duplicate.
	NoMaxPhysicOffsetCheck bool
	// NoCRCCheck skips the body CRC check on recovery (as
	// engine.Config.SkipCRCOnRecover).
	NoCRCCheck bool
	// TruncateAtDamage cuts the CommitLog at the first damaged record,
	// as RocketMQ does, instead of resynchronising past it.
	TruncateAtDamage bool
	// IgnoreDispatchErrors lets the dispatcher step over a record whose
	// dispatch failed instead of retrying it.
	IgnoreDispatchErrors bool
	// NoRecoverySync skips the sync of the recovered CommitLog range
	// after a crash (records that only the page cache held are then
	// reported as flushed).
	NoRecoverySync bool
	// NoRedirty leaves the pages of a failed CommitLog sync clean, as
	// Linux marks them, instead of writing them again.
	NoRedirty bool
	// NoRetentionQueueFlush lets a clean round delete CommitLog files
	// without first syncing the ConsumeQueues that point into them.
	NoRetentionQueueFlush bool
	// NoReplayedUnitCheck skips a replay whose queue index is taken, as
	// RocketMQ does, without checking that the unit there is its own.
	NoReplayedUnitCheck bool
	// NoDeferredDirSync never makes the directory entry of a new
	// ConsumeQueue file (nor a new queue directory) durable: creation
	// leaves that sync to the queue's next data sync, which skips it.
	NoDeferredDirSync bool
	// NoRebuildMarker rebuilds the ConsumeQueues without the marker
	// that makes recovery redo a rebuild a crash interrupted.
	NoRebuildMarker bool
	// KeepEmptyLastQueueFile lets recovery after a crash keep a last
	// ConsumeQueue file that holds no unit (left by a power cut during an
	// earlier recovery's cut at that file's start) instead of dropping it.
	KeepEmptyLastQueueFile bool
	// NoUnitCheck serves a ConsumeQueue unit without checking that the
	// record it points at is its own (size, topic, queue id, queue
	// offset), as RocketMQ 4.9.4's getMessage does not.
	NoUnitCheck bool
	// NoStartupUnitCheck opens a cleanly closed store trusting its
	// ConsumeQueue units: each queue ends at its first unit that is not a
	// positive offset and size before the CommitLog's end, as in RocketMQ,
	// its minimum steps over units that are not units, and damaged units
	// are found only when read.
	NoStartupUnitCheck bool
	// TornSyncedTail cuts off a damaged last CommitLog record with no
	// intact record after it as a torn write even when it was synced
	// (before a clean stop, or before the checkpoint's time), as
	// RocketMQ's recovery does, dropping an acknowledged message.
	TornSyncedTail bool
	// TrustTornTimestamp takes a damaged last record's store timestamp at
	// its word after a crash even when the record lost sectors between
	// its header and its end, so a timestamp torn into an earlier time
	// makes a torn write pass for a synced, damaged record (kept as
	// damage where RocketMQ and a recovery without the checkpoint cut it).
	TrustTornTimestamp bool
	// NoUnhurriedWakes leaves the dispatcher asleep after an AsyncFlush
	// CommitLog flush and in WaitDispatched: a record of
	// Store.PutUnhurried then waits for the next put that wakes it,
	// however long that takes.
	NoUnhurriedWakes bool
}

// Broker holds the broker's switches; a Broker keeps them in an unexported
// field that the broker's own tests set (broker/export_test.go).
type Broker struct {
	// BeforeSuspend, when set, runs between a pull finding nothing and its
	// registration in the hold table (to provoke the lost-wake-up race).
	BeforeSuspend func()
}

// Service holds the switches of a broker service that runs its own
// goroutine (broker/schedule, broker/transaction). Their Configs keep it
// in an unexported field, reached through ServiceOf.
type Service struct {
	// Manual starts no goroutine: the owner drives the service
	// (schedule's DeliverDue, transaction's Check), as Engine.Manual does
	// for the store.
	Manual bool
}

var serviceOf []func(cfg any) *Service

// RegisterService is called by a service package at init with the
// accessor of the switches inside its Config.
func RegisterService[C any](of func(cfg *C) *Service) {
	serviceOf = append(serviceOf, func(cfg any) *Service {
		if c, ok := cfg.(*C); ok {
			return of(c)
		}
		return nil
	})
}

// ServiceOf returns the switches inside cfg, a pointer to a registered
// service Config.
func ServiceOf(cfg any) *Service {
	for _, of := range serviceOf {
		if s := of(cfg); s != nil {
			return s
		}
	}
	panic(fmt.Sprintf("hooks: %T is not a registered service config", cfg))
}

// ManualService returns cfg, a service Config, with Service.Manual set to on.
func ManualService[C any](cfg C, on bool) C {
	ServiceOf(&cfg).Manual = on
	return cfg
}

var engineOf func(cfg any) *Engine

// RegisterEngine is called by package engine at init with the accessor of
// the switches inside an *engine.Config.
func RegisterEngine(of func(cfg any) *Engine) { engineOf = of }

// EngineOf returns the switches inside cfg, an *engine.Config.
func EngineOf(cfg any) *Engine { return engineOf(cfg) }

// Manual returns cfg, an engine.Config, with Engine.Manual set.
func Manual[C any](cfg C) C { return WithManual(cfg, true) }

// WithManual returns cfg, an engine.Config, with Engine.Manual set to on.
func WithManual[C any](cfg C, on bool) C {
	EngineOf(&cfg).Manual = on
	return cfg
}

// Pop holds broker/pop's broken variants: each removes one safety step
// so that its crash property test shows that it catches the absence.
// Never set them outside that package's tests.
type Pop struct {
	// AckBeforeDurable answers an ack before its record is written: the
	// record waits in memory for the next Revive (RocketMQ's merged-ack
	// buffer), so a power cut loses it.
	AckBeforeDurable bool
	// ForgetDeadlines drops the invisible times of the in-flight messages
	// a recovery replays: they are visible again at once.
	ForgetDeadlines bool
	// NoAttemptCount delivers every message as its first attempt, so that
	// none ever reaches the dead-letter queue.
	NoAttemptCount bool
	// NoOrderLock lets a FIFO receive deliver a message while an earlier
	// one of its message group is in flight.
	NoOrderLock bool
	// NoHeldRecord leaves the FIFO messages held behind a busy message
	// group out of the checkpoint: a recovery forgets them.
	NoHeldRecord bool
	// SnapshotFileFirst points the replay-start file at a snapshot before
	// the snapshot's records are written.
	SnapshotFileFirst bool
}

// Timer holds broker/timer's broken variants: each removes one safety
// step so that its crash property test shows that it catches the
// absence. Never set them outside that package's tests.
type Timer struct {
	// NoDeliverySync takes a checkpoint without syncing the CommitLog
	// first: the checkpoint may count deliveries a power cut loses.
	NoDeliverySync bool
	// NoDedup delivers again, after a crash, what the CommitLog shows
	// delivered since the checkpoint.
	NoDedup bool
	// WheelInPlace writes the changed wheel slots into the wheel file
	// before the checkpoint that holds their redo list: a power cut then
	// leaves slots that point past the recovered TimerLog.
	WheelInPlace bool
	// FollowUnseen lets a replica on standby move its read time past a
	// due slot whose deliveries it has not seen in the CommitLog: a new
	// leader then never delivers what the former one did not.
	FollowUnseen bool
	// IdleSkipsToEnd lets an idle replica on standby skip reading the
	// whole CommitLog, not only what is dispatched: a timer message and
	// its delivery not dispatched yet are both skipped, and the message
	// is delivered again on its election.
	IdleSkipsToEnd bool
	// ScanFromQueue starts recovery's read for deliveries at the first
	// timer message the checkpoint did not enqueue even when messages
	// were pending at the checkpoint: their deliveries before it are
	// made again.
	ScanFromQueue bool
}

var timerOf func(cfg any) *Timer

// RegisterTimer is called by package timer at init with the accessor of
// the switches inside a *timer.Config.
func RegisterTimer(of func(cfg any) *Timer) { timerOf = of }

// TimerOf returns the switches inside cfg, a *timer.Config (tests of
// the packages that embed a timer service).
func TimerOf(cfg any) *Timer { return timerOf(cfg) }

// Dispatch holds the switches of package dispatch's Parser and Service,
// which the engine copies from its own (Engine.NoPhysicalOffsetCheck and
// Engine.IgnoreDispatchErrors). They sit in unexported fields, reached
// through DispatchOf.
type Dispatch struct {
	// NoPhysicalOffsetCheck (Parser) accepts a record whose
	// PHYSICALOFFSET is not its position.
	NoPhysicalOffsetCheck bool
	// IgnoreErrors (Service) counts a record whose dispatch failed as
	// dispatched instead of retrying it.
	IgnoreErrors bool
}

var dispatchOf func(v any) *Dispatch

// RegisterDispatch is called by package dispatch at init with the
// accessor of the switches inside a *Parser or a *Service.
func RegisterDispatch(of func(v any) *Dispatch) { dispatchOf = of }

// DispatchOf returns the switches inside v, a *dispatch.Parser or a
// *dispatch.Service.
func DispatchOf(v any) *Dispatch { return dispatchOf(v) }
