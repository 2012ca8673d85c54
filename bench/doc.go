// Package bench holds rocketstore's benchmark workloads and the baselines
// that bound them, shared by `go test -bench` (bench_test.go) and the
// `rocketstore bench` command.
//
// Every workload returns a Result; Run runs the whole suite of a Spec and
// returns a Report that renders as one Markdown table or as JSON. Each
// engine figure is shown beside the physical bound measured in the same
// run, on the same bytes:
//
//   - async put: memcpy of the same records into a write-prefaulted
//     mapping (mmap) or a fresh heap buffer (memfs), after each of
//     Spec.Pairs runs; on mmap both the put and the bound start on page
//     cache that was just in use (warmPageCache);
//   - sync-flush put: pwrite + msync on a file of the mmap backend, the
//     CommitLog's own I/O, with the batch size the engine's group commit
//     actually achieved (counted by a wrapper FS), run in slices
//     alternating with the workload's, so that both see the same disk
//     when other processes share it.
//
// A put's, a catch-up's and a recovery's ratio is the median of its
// alternating pairs', with their min and max (Bound.RatioMin,
// Bound.RatioMax).
//   - catch-up read: a copy of the same CommitLog bytes out of a fresh
//     mapping (the backlog is read after its flush, which drops the
//     store's page-table entries of the pages it syncs);
//   - recovery: CRC32 of the same bytes read through a fresh mapping, and
//     read with pread.
//
// The NATS JetStream peer runs in the nested module bench/nats, which
// prints []Result as JSON; MergePeer puts its figures beside ours. This
// package never imports NATS.
//
// Units: MB is 10^6 bytes. MB/s counts message bodies (payload), so that
// the figures compare across stores; ratios to a baseline are taken on the
// bytes actually written (whole records), i.e. on msgs/s at equal record
// size.
package bench
