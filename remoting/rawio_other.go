//go:build !linux

package remoting

import (
	"io"
	"net"
)

// rawReader and rawWriter are Linux-only (rawio_linux.go); elsewhere
// connections use the net package.
type (
	rawReader struct{ io.Reader }
	rawWriter struct{}
)

func newRawReader(net.Conn) *rawReader { return nil }

func (*rawReader) expect(int) {}

func newRawWriter(net.Conn) *rawWriter { return nil }

func (*rawWriter) write([][]byte) error { panic("remoting: raw socket I/O is Linux-only") }
