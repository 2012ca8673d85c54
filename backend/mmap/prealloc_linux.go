package mmap

import "golang.org/x/sys/unix"

// fallocate allocates the first size bytes of fd and extends the file to
// them (mode 0), retrying if a signal interrupts the call.
func fallocate(fd int, size int64) error {
	for {
		err := unix.Fallocate(fd, 0, 0, size)
		if err != unix.EINTR {
			return err
		}
	}
}
