// Package memfs is a backend.FS that keeps a volatile page cache in memory
// apart from a durable image stored on any afero.Fs.
//
// # Model
//
// Every open segment owns a buffer of its full size (the page cache) and one
// dirty bit per PageSize page. WriteAt only copies into the buffer; Sync
// copies the dirty pages of its range into the afero file and clears their
// bits. The afero file is therefore exactly what a disk would hold: synced
// pages plus whatever the file held when it was opened. View returns
// sub-slices of the buffer, so the hot path never reads afero (whose
// MemMapFs handles are not safe for concurrent positional reads, and whose
// Sync does nothing).
//
// Close does not sync, just as closing a file does not fsync on Linux: the
// dirty pages of a closed segment stay in the FS value (the page cache
// outlives the file descriptor), so opening the file again through the same
// FS sees them, while they are still not durable. They follow Rename and are
// dropped by Remove and RemoveAll.
//
// Directory operations (Create, Remove, Rename, MkdirAll, RemoveAll) reach
// the afero.Fs at once, so in memfs they are durable immediately; SyncDir
// only passes a directory sync through to afero. The crashsim package
// models their loss.
//
// # Power cuts
//
// The durable state is only the afero.Fs. Abandoning an FS value (without
// Sync or Close) and calling New on the same afero.Fs is therefore a power
// cut in which no unsynced page survived. The abandoned store must be
// stopped first, or must not touch the afero.Fs again: its segments still
// hold handles on the afero files. DirtyPages enumerates what a power cut
// would lose, for simulators that want to keep some of it.
//
// With an afero.OsFs (for example under afero.NewBasePathFs) memfs is a plain
// file backend: Sync writes with pwrite and fsyncs, SyncDir fsyncs the
// directory.
//
// # Concurrency
//
// As the backend contract allows, WriteAt, Sync and View may run
// concurrently on one segment. Sync copies whole dirty pages, which may hold
// bytes that a concurrent WriteAt is writing, so WriteAt and the page copy in
// Sync share a per-segment mutex; View takes no lock. Sync does its afero
// I/O outside that mutex, so that an fsync never stalls the appender.
//
// Each file should be open at most once per FS, as the engine does: a
// second Open of an open file reads the durable image and the pages the
// first one left behind when last closed, not the first one's unsynced
// writes.
//
// Lock is an in-process lock table of the FS value; it does not exclude
// other processes, even on an OsFs.
package memfs
