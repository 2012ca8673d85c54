package mmap

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// DiskUsage returns the used share (0..1) of the file system holding path,
// as df counts it (blocks reserved for root count as used).
func DiskUsage(path string) (float64, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(path, &st); err != nil {
		return 0, fmt.Errorf("mmap: statfs %s: %w", path, err)
	}
	if st.Blocks == 0 {
		return 0, nil
	}
	return 1 - float64(st.Bavail)/float64(st.Blocks), nil
}
