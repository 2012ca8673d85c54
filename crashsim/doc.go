// Package crashsim is a backend.FS that models power loss, for crash tests.
//
// It follows the crash model of docs/design.md. Each file is an inode
// holding two images: the durable one (what the disk holds) and the page
// cache (what the running process sees). WriteAt changes only the page
// cache and marks 4 KiB pages dirty; Segment.Sync copies the dirty pages
// of its range into the durable image. Directory operations (Create,
// Remove, Rename, MkdirAll, RemoveAll) change the visible namespace at
// once but are only pending on disk until SyncDir of their directory.
//
// Crash produces a new, independent afero.Fs (a deep copy) holding:
//   - every synced page exactly;
//   - every unsynced dirty page independently old, new, or torn (old or
//     new per 512-byte sector);
//   - the synced directory entries, plus each pending create, remove and
//     rename independently persisted or not, applied in order; a rename
//     is atomic (the file is under the old name or the new one);
//   - with Options.ReuseFreedBlocks, an old page that was never written
//     back may hold instead a freed block of a file whose removal was
//     durable (ext4 data=writeback exposing stale data after a crash).
//
// Every choice goes through a Chooser, so that rapid can drive (shrink and
// replay) crash patterns, or a seeded generator can drive long soak runs.
// New turns such an image back into an FS whose every byte is durable.
//
// Faults are injected errorfs-style: an Injector sees every operation (kind,
// path, offset) and may fail it: EIO on Sync (the failed pages are dropped
// from the page cache's dirty set without reaching the disk, as Linux
// does), ENOSPC on Create, a short write on WriteAt. An injected ErrCrash
// freezes the FS: that operation and every later one fail, so a test can
// stop a store at its k-th write (or in the middle of its recovery) and
// then take Crash. Kill models the death of the process alone: handles
// and locks go, the page cache stays.
//
// Size changes are not modelled: a file has its Create size from the moment
// it exists (the backends preallocate).
//
// All methods are safe for concurrent use. View takes no lock, as the
// backend contract allows.
package crashsim
