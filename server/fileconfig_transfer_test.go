package server_test

import (
	"errors"
	"testing"
	"time"

	"github.com/rocketstore/rocketstore/server"
)

// TestFileConfigTransferLimits: RocketMQ's four transfer-limit keys reach
// the store's config, and a limit that is not positive is refused.
func TestFileConfigTransferLimits(t *testing.T) {
	fc, err := server.ParseFileConfig([]byte("maxTransferCountOnMessageInMemory: 128\nmaxTransferBytesOnMessageInMemory: 1048576\n" +
		"maxTransferCountOnMessageInDisk: 16\nmaxTransferBytesOnMessageInDisk: 131072\n"))
	if err != nil {
		t.Fatal(err)
	}
	var nc server.NodeConfig
	if err := fc.Apply(&nc); err != nil {
		t.Fatal(err)
	}
	if sc := nc.Broker.Store; sc.MaxTransferCountOnMessageInMemory != 128 || sc.MaxTransferBytesOnMessageInMemory != 1<<20 ||
		sc.MaxTransferCountOnMessageInDisk != 16 || sc.MaxTransferBytesOnMessageInDisk != 128<<10 {
		t.Fatalf("store config %+v", sc)
	}
	fc, _ = server.ParseFileConfig([]byte("maxTransferCountOnMessageInMemory: 0\n"))
	if err := fc.Apply(&server.NodeConfig{}); !errors.Is(err, server.ErrConfig) {
		t.Fatalf("maxTransferCountOnMessageInMemory 0: %v", err)
	}
}

// TestFileConfigThoroughFlushInterval: flushConsumeQueueThoroughInterval
// (milliseconds, as in broker.conf) reaches the store's config.
func TestFileConfigThoroughFlushInterval(t *testing.T) {
	fc, err := server.ParseFileConfig([]byte("flushConsumeQueueThoroughInterval: 1500\n"))
	if err != nil {
		t.Fatal(err)
	}
	var nc server.NodeConfig
	if err := fc.Apply(&nc); err != nil {
		t.Fatal(err)
	}
	if got := nc.Broker.Store.FlushConsumeQueueThoroughInterval; got != 1500*time.Millisecond {
		t.Fatalf("FlushConsumeQueueThoroughInterval %v, want 1.5s", got)
	}
}
