package backend

import (
	"errors"
	"fmt"
	"path"
)

// Suffixes of the companion files that WriteFileAtomic uses. Directory
// scans that look for data files should skip them.
const (
	TempSuffix   = ".tmp"
	BackupSuffix = ".bak"
)

// ReadFile returns a copy of the whole content of a small file.
func ReadFile(fs FS, name string) (data []byte, err error) {
	seg, err := fs.Open(name)
	if err != nil {
		return nil, err
	}
	defer func() {
		if cerr := seg.Close(); err == nil && cerr != nil {
			data, err = nil, cerr
		}
	}()
	size := seg.Size()
	data = append([]byte(nil), seg.View(0, size)...)
	if int64(len(data)) != size {
		return nil, fmt.Errorf("backend: read %s: view of %d bytes failed", name, size)
	}
	return data, nil
}

// WriteFileAtomic replaces name with data so that a crash at any point
// leaves the old or the new content readable (name, or name.bak while
// name is missing or empty; broker/configfile.Load reads it so). The
// steps, and what a crash after each one leaves, are:
//
//  1. remove a stale name.tmp, create it, write data, Sync, Close:
//     name is untouched (a partial name.tmp is never read);
//  2. if name exists and is non-empty, rename it to name.bak: name may be
//     gone, but name.bak holds the old content;
//  3. rename name.tmp to name: name holds the new content, synced in step 1;
//  4. SyncDir the directory, making the renames durable: before it, a crash
//     may undo either rename (each is atomic), and every combination still
//     leaves the new content in name or the old one in name or name.bak.
//
// An empty name is not kept as the backup, so that a file emptied by an
// earlier crash never replaces a good name.bak.
func WriteFileAtomic(fs FS, name string, data []byte) error {
	tmp := name + TempSuffix
	if err := fs.Remove(tmp); err != nil && !errors.Is(err, ErrNotExist) {
		return err
	}
	if err := writeSynced(fs, tmp, data); err != nil {
		return err
	}
	switch size, err := fs.Stat(name); {
	case err == nil && size > 0:
		if err := fs.Rename(name, name+BackupSuffix); err != nil {
			return err
		}
	case err != nil && !errors.Is(err, ErrNotExist):
		return err
	}
	if err := fs.Rename(tmp, name); err != nil {
		return err
	}
	return fs.SyncDir(path.Dir(name))
}

// writeSynced creates name holding data and syncs it before closing, since
// Close does not sync.
func writeSynced(fs FS, name string, data []byte) error {
	seg, err := fs.Create(name, int64(len(data)))
	if err != nil {
		return err
	}
	if _, err := seg.WriteAt(data, 0); err != nil {
		return errors.Join(err, seg.Close())
	}
	if err := seg.Sync(0, int64(len(data))); err != nil {
		return errors.Join(err, seg.Close())
	}
	return seg.Close()
}

// ReadBackup reads name.bak, the previous content that WriteFileAtomic kept.
func ReadBackup(fs FS, name string) ([]byte, error) {
	return ReadFile(fs, name+BackupSuffix)
}
