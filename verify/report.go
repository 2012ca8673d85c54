package verify

import (
	"fmt"
	"strings"
	"time"

	"github.com/rocketstore/rocketstore/internal/units"
)

// Kind classifies a violation.
type Kind string

// The kinds of violation Run reports.
const (
	// KindLayout: a file or directory that does not belong to the store's
	// layout (bad name, wrong size, gap or overlap between files).
	KindLayout Kind = "layout"
	// KindRecord: bytes that are not a valid CommitLog record (bad magic,
	// TOTALSIZE not matching the fields, truncated), or a store timestamp
	// going backwards. The rest of that file is not checked.
	KindRecord Kind = "record"
	// KindCRC: a record whose BODYCRC does not match its body.
	KindCRC Kind = "crc"
	// KindPhysicalOffset: a record whose PHYSICALOFFSET is not its position
	// (stale bytes, or a copy at the wrong place).
	KindPhysicalOffset Kind = "physical-offset"
	// KindBlank: a BLANK record that does not end its file, or a full file
	// that does not end with one.
	KindBlank Kind = "blank"
	// KindTail: non-zero bytes after the end of the data (a torn or stale
	// tail, or records after a hole).
	KindTail Kind = "tail"
	// KindUnit: a ConsumeQueue unit that is invalid or does not point at a
	// matching record.
	KindUnit Kind = "unit"
	// KindDuplicate: two ConsumeQueue units pointing at the same record.
	KindDuplicate Kind = "duplicate"
	// KindGap: ConsumeQueue units after the end of a queue's data.
	KindGap Kind = "gap"
	// KindMissing: a dispatchable record that its ConsumeQueue does not
	// hold at its queue offset.
	KindMissing Kind = "missing"
	// KindCheckpoint: a checkpoint that is missing, mis-sized, negative or
	// ahead of the CommitLog.
	KindCheckpoint Kind = "checkpoint"
	// KindIndex: an IndexFile entry that points past the CommitLog end or
	// not at the start of a record, or an unreadable index file.
	KindIndex Kind = "index"
)

// Violation is one broken rule, found at a byte offset of a file.
type Violation struct {
	Kind Kind
	// File is the path relative to the store root, slash-separated.
	File string
	// Offset is the byte offset within File.
	Offset int64
	// Detail says what was found and what was expected.
	Detail string
}

// String formats v as "file@offset: kind: detail".
func (v Violation) String() string {
	return fmt.Sprintf("%s@%d: %s: %s", v.File, v.Offset, v.Kind, v.Detail)
}

// Checkpoint holds the checkpoint's timestamps (milliseconds).
type Checkpoint struct {
	Present                                bool
	PhysicMsgTimestamp, LogicsMsgTimestamp int64
	IndexMsgTimestamp                      int64
}

// Report is what Run found.
type Report struct {
	// Unclean is set when the abort marker is present: the store was not
	// closed cleanly and has not been opened since.
	Unclean bool

	CommitLogFiles    int
	CommitLogFileSize int64
	// MinOffset is the start of the first CommitLog file; MaxOffset the end
	// of the last valid record (MinOffset when there is none).
	MinOffset, MaxOffset int64
	// Records counts message records, Dispatchable those that belong in a
	// ConsumeQueue, Blanks the BLANK end-of-file records.
	Records, Dispatchable int64
	Blanks                int
	// LastStoreTimestamp is the store time of the last valid record.
	LastStoreTimestamp int64

	Queues, ConsumeQueueFiles int
	// Units counts the ConsumeQueue units that point at records (blank
	// fillers excluded).
	Units int64

	Checkpoint Checkpoint

	// Violations holds the first Options.MaxViolations violations, in the
	// order found; ViolationCount counts them all.
	Violations     []Violation
	ViolationCount int

	// Ignored lists the files in the store's CommitLog, ConsumeQueue and
	// index directories whose names the store never writes, which were
	// not checked: a file system's own (.fuse_hidden*, left by FUSE for
	// a file unlinked while open, .nfs* by NFS), backups, strays. They
	// are not violations; the store skips them too.
	Ignored []string
}

// OK reports whether no violation was found.
func (r *Report) OK() bool { return r.ViolationCount == 0 }

// Count returns how many of the listed violations are of kind k.
func (r *Report) Count(k Kind) int {
	n := 0
	for _, v := range r.Violations {
		if v.Kind == k {
			n++
		}
	}
	return n
}

// Summary returns a few lines describing the store and the outcome.
func (r *Report) Summary() string { return r.summaryAt(time.Now()) }

// summaryAt is Summary with the checkpoint's ages counted up to now.
func (r *Report) summaryAt(now time.Time) string {
	var b strings.Builder
	// Sizes in binary units as the rest of the command line prints them;
	// offsets exact, since other commands take them.
	fmt.Fprintf(&b, "commitlog: %d files of %s, offsets %d..%d (%s), %d records (%d dispatchable), %d blank\n",
		r.CommitLogFiles, units.Size(r.CommitLogFileSize), r.MinOffset, r.MaxOffset, units.Size(r.MaxOffset-r.MinOffset),
		r.Records, r.Dispatchable, r.Blanks)
	fmt.Fprintf(&b, "consumequeue: %d queues, %d files, %d units\n", r.Queues, r.ConsumeQueueFiles, r.Units)
	cp := r.Checkpoint
	if cp.Present {
		fmt.Fprintf(&b, "checkpoint: physic %s, logics %s, index %s; last record stored %s\n",
			humanMillis(cp.PhysicMsgTimestamp, now), humanMillis(cp.LogicsMsgTimestamp, now),
			humanMillis(cp.IndexMsgTimestamp, now), humanMillis(r.LastStoreTimestamp, now))
	} else {
		b.WriteString("checkpoint: none\n")
	}
	if r.Unclean {
		b.WriteString("abort marker present: the store was not closed cleanly; a torn tail and lagging consume queues are expected until it is opened once\n")
	}
	if len(r.Ignored) > 0 {
		fmt.Fprintf(&b, "ignored %d files the store does not write: %s\n", len(r.Ignored), strings.Join(r.Ignored, ", "))
	}
	if r.OK() {
		b.WriteString("OK: no violations\n")
	} else {
		fmt.Fprintf(&b, "FAILED: %d violations\n", r.ViolationCount)
	}
	return b.String()
}

// add records a violation, keeping at most limit in the list.
func (r *Report) add(limit int, v Violation) {
	r.ViolationCount++
	if len(r.Violations) < limit {
		r.Violations = append(r.Violations, v)
	}
}

// humanMillis shows a store timestamp (ms since the epoch) in RFC 3339,
// UTC, with its age: "2026-12-06T10:00:00.000Z (3m12s ago)". Zero is a
// time never set.
func humanMillis(ms int64, now time.Time) string {
	if ms == 0 {
		return "never"
	}
	age := now.Sub(time.UnixMilli(ms)).Round(time.Second)
	if age < 0 {
		return fmt.Sprintf("%s (%s in the future)", rfc3339Millis(ms), -age)
	}
	return fmt.Sprintf("%s (%s ago)", rfc3339Millis(ms), age)
}

// rfc3339Millis is a store timestamp (ms since the epoch) in RFC 3339, UTC.
func rfc3339Millis(ms int64) string {
	return time.UnixMilli(ms).UTC().Format("2006-01-02T15:04:05.000Z07:00")
}
