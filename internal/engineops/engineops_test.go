package engineops_test

import (
	"context"
	"errors"
	"net/netip"
	"testing"

	"github.com/rocketstore/rocketstore/backend/memfs"
	"github.com/rocketstore/rocketstore/engine"
	"github.com/rocketstore/rocketstore/internal/engineops"
)

// TestOf puts a message with a leader's origin through Of and reads the
// origin back from the record, then abandons the store.
func TestOf(t *testing.T) {
	s, err := engine.Open(memfs.New(nil), engine.Config{CommitLogFileSize: 64 << 10, ConsumeQueueUnits: 64})
	if err != nil {
		t.Fatal(err)
	}
	ops := engineops.Of(s)
	host := netip.MustParseAddrPort("10.0.0.7:10911")
	res, err := ops.PutAs(context.Background(), &engine.Message{Topic: "t", Body: []byte("x")},
		engineops.Origin{StoreTimestamp: 1234, StoreHost: host})
	if err != nil {
		t.Fatal(err)
	}
	m, err := s.LookMessageByOffset(res.WroteOffset)
	if err != nil {
		t.Fatal(err)
	}
	if m.StoreTimestamp != 1234 || m.StoreHost != host {
		t.Errorf("stored origin %d %s, want 1234 %s", m.StoreTimestamp, m.StoreHost, host)
	}
	ops.Abandon()
	if _, err := s.Put(context.Background(), &engine.Message{Topic: "t"}); !errors.Is(err, engine.ErrClosed) {
		t.Errorf("Put after Abandon: %v, want ErrClosed", err)
	}
}
