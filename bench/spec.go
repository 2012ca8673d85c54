package bench

import (
	"time"

	"github.com/rocketstore/rocketstore/record"
)

// Spec sizes a run. DefaultSpec gives the default and --quick sizes; the
// NATS peer uses the same Spec so that counts and sizes match.
type Spec struct {
	Quick bool `json:"quick"`
	// BodySizes are the message body sizes of the put and end-to-end
	// workloads.
	BodySizes []int `json:"body_sizes"`
	// Producers are the producer goroutine counts of the put workload.
	Producers []int `json:"producers"`
	// PutBytes bounds the body bytes of one async put run, PutMsgs its
	// message count; PutTime bounds its duration (whichever comes first).
	PutBytes int64         `json:"put_bytes"`
	PutMsgs  int           `json:"put_msgs"`
	PutTime  time.Duration `json:"put_time"`
	// Pairs is how many times an async put run, and the catch-up and
	// recovery runs, alternate with their bounds: the table gives their
	// ratios' min / median / max.
	Pairs int `json:"pairs"`
	// SyncTime bounds a sync-flush put run (its count is PutMsgs too); its
	// bound runs as long again, in alternating slices.
	SyncTime time.Duration `json:"sync_time"`
	// E2EMsgs is the message count of the unthrottled end-to-end run.
	E2EMsgs int `json:"e2e_msgs"`
	// LatencyRate (msgs/s) and LatencyTime pace the latency run.
	LatencyRate int           `json:"latency_rate"`
	LatencyTime time.Duration `json:"latency_time"`
	// LagSamples is the number of put → ConsumeQueue-visible samples.
	LagSamples int `json:"lag_samples"`
	// BacklogBytes is the body bytes of the catch-up / recovery backlog,
	// written with BacklogBody-byte bodies.
	BacklogBytes int64 `json:"backlog_bytes"`
	BacklogBody  int   `json:"backlog_body"`
	// CommitLogFileSize of the stores (RocketMQ's 1 GiB by default).
	CommitLogFileSize int64 `json:"commitlog_file_size"`
	// MemfsFileSize is the CommitLog file size on memfs, smaller because
	// each memfs sync costs time proportional to the file size (afero's
	// MemMapFs rewrites a file's tail on every positional write).
	MemfsFileSize int64 `json:"memfs_file_size"`
}

// DefaultSpec returns the default run (a few minutes on 2 cores) or, with
// quick, a smoke run of about half a minute.
func DefaultSpec(quick bool) Spec {
	if quick {
		return Spec{Quick: true, BodySizes: []int{128, 1024, 4096}, Producers: []int{1, 4},
			PutBytes: 16 << 20, PutMsgs: 50_000, PutTime: 300 * time.Millisecond, Pairs: 3, SyncTime: 300 * time.Millisecond,
			E2EMsgs: 20_000, LatencyRate: 20_000, LatencyTime: 200 * time.Millisecond, LagSamples: 2_000,
			BacklogBytes: 32 << 20, BacklogBody: 1024, CommitLogFileSize: 64 << 20, MemfsFileSize: 16 << 20}
	}
	return Spec{BodySizes: []int{128, 1024, 4096}, Producers: []int{1, 4},
		PutBytes: 256 << 20, PutMsgs: 2_000_000, PutTime: 3 * time.Second, Pairs: 3, SyncTime: 1500 * time.Millisecond,
		E2EMsgs: 500_000, LatencyRate: 20_000, LatencyTime: 2 * time.Second, LagSamples: 20_000,
		BacklogBytes: 1 << 30, BacklogBody: 1024, CommitLogFileSize: 1 << 30, MemfsFileSize: 16 << 20}
}

// PutCount returns the message count of a put run with body bytes.
func (s Spec) PutCount(body int) int {
	return int(min(int64(s.PutMsgs), s.PutBytes/int64(body)))
}

// RecordSize returns the CommitLog record size of a benchmark message with
// a body of n bytes.
func RecordSize(n int) int {
	return record.Length(0, n, len(Topic), len(record.AppendProperties(nil, props)))
}

// BacklogMsgs returns the message count of the catch-up backlog: as many
// BacklogBody messages as fill BacklogBytes of CommitLog, less a little so
// that a 1 GiB backlog stays in one 1 GiB file.
func (s Spec) BacklogMsgs() int64 {
	return (s.BacklogBytes - 8192) / int64(RecordSize(s.BacklogBody))
}
