package remoting

// Socket I/O the Go scheduler does not see as system calls.
//
// A connection's read(2) and writev(2) normally go through the net
// package, which enters each as a potentially blocking system call
// (runtime.entersyscall). On a machine where a context switch is dear (a
// small VM), that bookkeeping costs more than the call: a syscall entered
// while every P is idle wakes the runtime's sysmon thread from its deep
// sleep, and sysmon then polls every 20 µs for a while, retaking Ps from
// calls that outlast a poll and starting threads to run them. Under a
// client that sends one request at a time (the official Go client: each
// request a separate burst of small writes), the server is idle between
// bursts, so nearly every burst paid a sysmon wake-up and a string of
// 20 µs sleeps; perf put 44 % of the server's context switches in sysmon.
//
// The socket's descriptor is non-blocking (the net package sets it so
// and polls it with epoll), so its read(2) and writev(2) never block: they
// move bytes or fail with EAGAIN at once. rawReader and rawWriter call
// them through syscall.RawConn with syscall.RawSyscall, which does not
// enter the scheduler's syscall state, and on EAGAIN return false to the
// RawConn, which parks the goroutine on the netpoller exactly as the net
// package would (deadlines and Close included). What is lost is only what
// a blocking call needs: sysmon cannot hand the P to another thread during
// the call, and a call that copies a large batch holds its P for the copy,
// which is CPU work for this thread anyway.
//
// Only TCP and Unix sockets whose descriptor is found non-blocking take
// this path (checked once per connection); TLS and other net.Conns, and
// platforms other than Linux, use the net package.

// consume returns bufs without their first n bytes, dropping buffers
// written whole, after a writev(2) that wrote n bytes.
func consume(bufs [][]byte, n int) [][]byte {
	for n > 0 && len(bufs) > 0 {
		if n < len(bufs[0]) {
			bufs[0] = bufs[0][n:]
			return bufs
		}
		n -= len(bufs[0])
		bufs = bufs[1:]
	}
	for len(bufs) > 0 && len(bufs[0]) == 0 {
		bufs = bufs[1:]
	}
	return bufs
}
