// Package mmap is the production backend.FS: segments are preallocated files
// mapped shared read-write, so the engine appends with a memcpy and reads
// without copying, as RocketMQ's MappedFile does.
//
// # Traps it avoids
//
//   - An empty file cannot be mapped, so a size-0 segment has no mapping:
//     View returns an empty slice and any non-empty WriteAt fails.
//   - Touching a mapped page past the end of the file raises SIGBUS, so every
//     View and WriteAt is bounds-checked against the fixed segment size.
//   - A sparse file can raise SIGBUS on a full disk when a write through the
//     mapping first touches a hole, so Create preallocates with fallocate(2).
//     Only where the file system does not support it does Create fall back
//     to ftruncate(2) and accept that risk.
//   - The mapping is made with mmap-go's RDWR flag; PROT_* values mean
//     something else to it.
//   - msync(2) needs a page-aligned address and fails on a zero-length
//     range, so Sync widens its range to whole pages and treats n == 0 as a
//     no-op.
//
// Nothing here syncs implicitly: Create, Rename and Remove become durable only
// after SyncDir, and written bytes only after Sync. Closing a segment does not
// lose its writes (they stay in the page cache), it just does not make them
// durable.
//
// # Concurrency
//
// An FS keeps no mutable state and may be used from any number of goroutines.
// A segment follows the backend contract: WriteAt, Sync, View and Advise may
// run concurrently on disjoint ranges, and the caller must not Close a
// segment while any other call or View is in use, because Close unmaps the
// memory that views point into. Locks are flock(2) locks, held per open file
// description: a second Lock of the same file is refused even within one
// process.
//
// The package targets Linux; other Unix systems build with ftruncate in place
// of fallocate.
package mmap
