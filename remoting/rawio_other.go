//go:build !linux

package remoting

import (
	"io"
	"net"
)

// rawWriter is Linux-only (rawio_linux.go); elsewhere connections use the
// net package.
type rawWriter struct{}

func newRawReader(net.Conn) io.Reader { return nil }

func newRawWriter(net.Conn) *rawWriter { return nil }

func (*rawWriter) write([][]byte) error { panic("remoting: raw socket I/O is Linux-only") }
