//go:build linux

package remoting

import (
	"io"
	"net"
	"os"
	"syscall"
	"unsafe"
)

// maxIOV bounds the buffers of one writev(2) (Linux's IOV_MAX).
const maxIOV = 1024

// rawSocket returns the RawConn of a TCP or Unix connection whose
// descriptor is non-blocking, or nil.
func rawSocket(nc net.Conn) syscall.RawConn {
	switch nc.(type) {
	case *net.TCPConn, *net.UnixConn:
	default:
		return nil
	}
	rc, err := nc.(syscall.Conn).SyscallConn()
	if err != nil || !nonblocking(rc) {
		return nil
	}
	return rc
}

// nonblocking reports whether rc's descriptor has O_NONBLOCK: a raw call
// on a blocking descriptor could block its thread with the P held.
func nonblocking(rc syscall.RawConn) bool {
	ok := false
	err := rc.Control(func(fd uintptr) {
		fl, _, e := syscall.RawSyscall(syscall.SYS_FCNTL, fd, syscall.F_GETFL, 0)
		ok = e == 0 && fl&syscall.O_NONBLOCK != 0
	})
	return err == nil && ok
}

// opError wraps err as the net package wraps its read and write errors.
func opError(nc net.Conn, op string, err error) error {
	return &net.OpError{Op: op, Net: nc.LocalAddr().Network(), Source: nc.LocalAddr(), Addr: nc.RemoteAddr(), Err: err}
}

// rawReader reads a non-blocking socket with raw read(2) calls. Its
// fields are used by one reading goroutine; fn is built once so that a
// read allocates nothing.
type rawReader struct {
	nc  net.Conn
	rc  syscall.RawConn
	buf []byte
	n   int
	err error
	fn  func(fd uintptr) bool
}

// newRawReader returns a reader for nc, or nil if nc does not qualify.
func newRawReader(nc net.Conn) io.Reader {
	rc := rawSocket(nc)
	if rc == nil {
		return nil
	}
	r := &rawReader{nc: nc, rc: rc}
	r.fn = func(fd uintptr) bool {
		for {
			n, _, e := syscall.RawSyscall(syscall.SYS_READ, fd, uintptr(unsafe.Pointer(&r.buf[0])), uintptr(len(r.buf)))
			switch e {
			case 0:
				r.n = int(n)
				return true
			case syscall.EINTR:
				continue
			case syscall.EAGAIN:
				return false // the RawConn waits for the socket to be readable
			default:
				r.err = os.NewSyscallError("read", e)
				return true
			}
		}
	}
	return r
}

// Read reads what the socket holds, waiting for it if it holds nothing.
func (r *rawReader) Read(b []byte) (int, error) {
	if len(b) == 0 {
		return 0, nil
	}
	r.buf, r.n, r.err = b, 0, nil
	err := r.rc.Read(r.fn)
	r.buf = nil
	switch {
	case err != nil: // deadline, or closed
		return 0, opError(r.nc, "read", err)
	case r.err != nil:
		return 0, opError(r.nc, "read", r.err)
	case r.n == 0:
		return 0, io.EOF
	}
	return r.n, nil
}

// rawWriter writes batches of frames to a non-blocking socket with raw
// writev(2) calls, used by the connection's one writer goroutine.
type rawWriter struct {
	nc   net.Conn
	rc   syscall.RawConn
	bufs [][]byte
	iov  []syscall.Iovec
	err  error
	fn   func(fd uintptr) bool
	// consume is the package's consume; a test swaps in a broken one to
	// show that the partial-write test catches it.
	consume func([][]byte, int) [][]byte
}

// newRawWriter returns a writer for nc, or nil if nc does not qualify.
func newRawWriter(nc net.Conn) *rawWriter {
	rc := rawSocket(nc)
	if rc == nil {
		return nil
	}
	w := &rawWriter{nc: nc, rc: rc, iov: make([]syscall.Iovec, 0, maxBatchFrames), consume: consume}
	w.fn = func(fd uintptr) bool {
		for len(w.bufs) > 0 {
			w.iov = w.iov[:0]
			for _, b := range w.bufs[:min(len(w.bufs), maxIOV)] {
				if len(b) > 0 {
					v := syscall.Iovec{Base: &b[0]}
					v.SetLen(len(b))
					w.iov = append(w.iov, v)
				}
			}
			if len(w.iov) == 0 {
				w.bufs = w.consume(w.bufs, 0)
				continue
			}
			n, _, e := syscall.RawSyscall(syscall.SYS_WRITEV, fd, uintptr(unsafe.Pointer(&w.iov[0])), uintptr(len(w.iov)))
			switch e {
			case 0:
				w.bufs = w.consume(w.bufs, int(n))
			case syscall.EINTR:
			case syscall.EAGAIN:
				return false // the RawConn waits for room in the socket
			default:
				w.err = os.NewSyscallError("writev", e)
				return true
			}
		}
		return true
	}
	return w
}

// write writes every byte of bufs, waiting for room in the socket as
// needed until the connection's write deadline. It modifies bufs.
func (w *rawWriter) write(bufs [][]byte) error {
	w.bufs, w.err = bufs, nil
	err := w.rc.Write(w.fn)
	w.bufs = nil
	clear(w.iov[:cap(w.iov)])
	switch {
	case err != nil:
		return opError(w.nc, "write", err)
	case w.err != nil:
		return opError(w.nc, "write", w.err)
	}
	return nil
}
