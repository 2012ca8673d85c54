package server_test

import (
	"errors"
	"testing"

	"github.com/rocketstore/rocketstore/remoting"
	"github.com/rocketstore/rocketstore/server"
)

func TestFileConfigConnectionLimits(t *testing.T) {
	fc, err := server.ParseFileConfig([]byte("serverMaxConnections: 100\nserverMaxReceiveBytes: 67108864\n"))
	if err != nil {
		t.Fatal(err)
	}
	var nc server.NodeConfig
	if err := fc.Apply(&nc); err != nil {
		t.Fatal(err)
	}
	if r := nc.Server.Remoting; r.MaxConns != 100 || r.MaxReceiveBytes != 64<<20 {
		t.Fatalf("MaxConns %d, MaxReceiveBytes %d", r.MaxConns, r.MaxReceiveBytes)
	}
	// A cap below twice the frame limit could never receive a full frame.
	fc, _ = server.ParseFileConfig([]byte("serverMaxReceiveBytes: 1048576\n"))
	if err := fc.Apply(&server.NodeConfig{}); !errors.Is(err, remoting.ErrBadOptions) {
		t.Fatalf("serverMaxReceiveBytes below 2 × serverSocketMaxFrameSize: %v", err)
	}
	fc, _ = server.ParseFileConfig([]byte("serverMaxConnections: -1\n"))
	if err := fc.Apply(&server.NodeConfig{}); !errors.Is(err, remoting.ErrBadOptions) {
		t.Fatalf("negative serverMaxConnections: %v", err)
	}
}
