package cluster

import (
	"errors"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

// TestTransportDoesNotPipeline: neither the TCP transport nor the
// wrapper every node's transport goes through (trackFollowers) opens a
// pipelined AppendEntries stream, so that hashicorp/raft replicates with
// one request in flight (see noPipeline).
func TestTransportDoesNotPipeline(t *testing.T) {
	tcp, err := NewTCPTransport("127.0.0.1:0", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tcp.Close() }()
	peer, err := NewTCPTransport("127.0.0.1:0", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = peer.Close() }()
	_, inmem := raft.NewInmemTransport("a")
	defer func() { _ = inmem.Close() }()
	_, other := raft.NewInmemTransport("b")
	defer func() { _ = other.Close() }()
	inmem.Connect("b", other)

	for name, tr := range map[string]raft.Transport{
		"tcp":               tcp,
		"tracked tcp":       trackFollowers(tcp, newFollowerTracker(time.Now)),
		"tracked in-memory": trackFollowers(inmem, newFollowerTracker(time.Now)),
	} {
		target := raft.ServerAddress("b")
		if name != "tracked in-memory" {
			target = peer.LocalAddr()
		}
		p, err := tr.AppendEntriesPipeline("b", target)
		if !errors.Is(err, raft.ErrPipelineReplicationNotSupported) {
			if p != nil {
				_ = p.Close()
			}
			t.Errorf("%s: AppendEntriesPipeline = %v, %v; want ErrPipelineReplicationNotSupported", name, p, err)
		}
	}
}
