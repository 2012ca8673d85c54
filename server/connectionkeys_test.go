package server_test

import (
	"errors"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/rocketstore/rocketstore/remoting"
	"github.com/rocketstore/rocketstore/server"
)

func TestFileConfigConnectionKeys(t *testing.T) {
	fc, err := server.ParseFileConfig([]byte(`
serverReceiveBudgetWaitMillis: 2500
serverLargeFrameSize: 524288
serverSmallFrameReserve: 16777216
serverStrangerReceiveBytes: 50331648
serverFrameTimeoutMillis: 10000
serverMaxConcurrentRequestsPerConnection: 16
serverWriteTimeoutMillis: 7000
serverWriteQueueLen: 256
serverWriteQueueBytes: 8388608
`))
	if err != nil {
		t.Fatal(err)
	}
	var nc server.NodeConfig
	if err := fc.Apply(&nc); err != nil {
		t.Fatal(err)
	}
	want := remoting.Options{
		ReceiveBudgetWait: 2500 * time.Millisecond, LargeFrameSize: 512 << 10, SmallFrameReserve: 16 << 20,
		StrangerReceiveBytes: 48 << 20, FrameTimeout: 10 * time.Second, MaxConcurrentRequests: 16,
		WriteTimeout: 7 * time.Second, WriteQueueLen: 256, WriteQueueBytes: 8 << 20,
	}
	got := nc.Server.Remoting
	got.Logger, got.Clock = nil, nil
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("remoting options\n got %+v\nwant %+v", got, want)
	}
	for _, bad := range []string{
		"serverFrameTimeoutMillis: -1",
		"serverWriteQueueLen: -5",
		// Stranger large frames could never hold a full frame.
		"serverStrangerReceiveBytes: 1048576",
		// Large frames would be left less than two full frames.
		"serverSmallFrameReserve: 117440512",
	} {
		fc, err := server.ParseFileConfig([]byte(bad + "\n"))
		if err != nil {
			t.Fatal(err)
		}
		if err := fc.Apply(&server.NodeConfig{}); !errors.Is(err, remoting.ErrBadOptions) {
			t.Errorf("%s: %v, want remoting.ErrBadOptions", bad, err)
		}
	}
}

// TestConnectionKeysDocumentedDefaults: the example in ConnectionKeys' doc
// comment, applied, gives what the zero value means, so that the
// documented defaults are the real ones.
func TestConnectionKeysDocumentedDefaults(t *testing.T) {
	src, err := os.ReadFile("connectionkeys.go")
	if err != nil {
		t.Fatal(err)
	}
	var doc strings.Builder
	for _, line := range strings.Split(string(src), "\n") {
		if rest, ok := strings.CutPrefix(line, "//\tserver"); ok {
			doc.WriteString("server" + rest + "\n")
		}
	}
	fc, err := server.ParseFileConfig([]byte(doc.String()))
	if err != nil {
		t.Fatalf("the documented example does not parse: %v\n%s", err, doc.String())
	}
	var nc server.NodeConfig
	if err := fc.Apply(&nc); err != nil {
		t.Fatal(err)
	}
	got := nc.Server.Remoting
	got.Logger, got.Clock = nil, nil
	want := remoting.Options{
		ReceiveBudgetWait: remoting.DefaultReceiveBudgetWait, LargeFrameSize: remoting.DefaultLargeFrameSize,
		SmallFrameReserve: remoting.DefaultMaxReceiveBytes / 4, StrangerReceiveBytes: 2 * remoting.DefaultMaxFrameSize,
		FrameTimeout: remoting.DefaultFrameTimeout, MaxConcurrentRequests: remoting.DefaultMaxConcurrentRequests,
		WriteTimeout: remoting.DefaultWriteTimeout, WriteQueueLen: remoting.DefaultWriteQueueLen,
		WriteQueueBytes: remoting.DefaultWriteQueueBytes,
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("documented defaults\n got %+v\nwant %+v", got, want)
	}
}
