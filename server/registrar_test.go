package server_test

import (
	"io"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/rocketstore/rocketstore/broker"
	"github.com/rocketstore/rocketstore/remoting"
	"github.com/rocketstore/rocketstore/server"
)

// silentNameServer is a name server whose host stopped answering: it
// accepts connections and reads them, and never answers; the first
// closeFirst connections it closes at once instead (the registration on
// them fails). accepted gets a value (without blocking) at each
// connection it keeps open. Every goroutine it starts
// is counted before the accept loop's own Done, so the final Wait (after
// the listener is closed) never races an Add; its connections are closed
// first, so a registrar that never gives up cannot hang the cleanup.
func silentNameServer(t testing.TB, closeFirst int) (addr string, accepted <-chan struct{}) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var (
		conns sync.WaitGroup
		mu    sync.Mutex
		open  []net.Conn
	)
	t.Cleanup(func() {
		_ = ln.Close()
		mu.Lock()
		for _, c := range open {
			_ = c.Close()
		}
		mu.Unlock()
		conns.Wait()
	})
	acc := make(chan struct{}, 1)
	conns.Add(1)
	go func() {
		defer conns.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			if closeFirst > 0 {
				closeFirst--
				_ = c.Close()
				continue
			}
			mu.Lock()
			open = append(open, c)
			mu.Unlock()
			select {
			case acc <- struct{}{}:
			default:
			}
			conns.Add(1)
			go func() {
				defer conns.Done()
				defer c.Close()
				_, _ = io.Copy(io.Discard, c)
			}()
		}
	}()
	return ln.Addr().String(), acc
}

// TestSilentNameServerDelaysNoOtherRegistration: a name server that never
// answers (its registration would wait an hour) delays neither the
// registration with a healthy name server, nor topic-table changes, nor a
// broker id change reaching it.
func TestSilentNameServerDelaysNoOtherRegistration(t *testing.T) {
	silent, accepted := silentNameServer(t, 0)
	_, ns := nameServer(t, nil)
	n := dialAddr(t, ns)
	a := newEnv(t, func(_ *broker.Config, sc *server.Config) {
		sc.Role, sc.BrokerName, sc.NamesrvAddr, sc.RegisterTimeout = server.RoleBroker, "broker-a", []string{silent, ns}, time.Hour
	})
	select { // the registration with the silent name server is in flight
	case <-accepted:
	case <-time.After(time.Minute):
		t.Fatal("the broker never connected to the silent name server")
	}
	waitUntil(t, "broker-a routed by the healthy name server", func() bool {
		return getRoute(t, n, "TBW102").addrsOf("broker-a")["0"] == a.adr
	})
	wantCode(t, a.call(remoting.CodeUpdateAndCreateTopic, nil, "topic", "Fresh", "readQueueNums", "2",
		"writeQueueNums", "2", "perm", "6"), remoting.CodeSuccess)
	waitUntil(t, "the new topic routed by the healthy name server", func() bool {
		return getRoute(t, n, "Fresh").addrsOf("broker-a")["0"] == a.adr
	})
	// SetBrokerID waits for the silent name server's first registration
	// (it has not failed yet); the healthy one has the new id meanwhile.
	done := make(chan struct{})
	go func() {
		defer close(done)
		a.s.SetBrokerID(1)
	}()
	waitUntil(t, "broker id 1 on the healthy name server", func() bool {
		return getRoute(t, n, "Fresh").addrsOf("broker-a")["1"] == a.adr
	})
	if err := a.s.Close(); err != nil { // cancels the wait for the silent name server
		t.Fatal(err)
	}
	<-done
}

// TestFailedNameServerIsNotWaitedFor: once a registration with a name
// server failed, SetBrokerID does not wait for it, even while a new
// registration with it hangs (it would an hour), and the healthy name
// server has the new id when SetBrokerID returns.
func TestFailedNameServerIsNotWaitedFor(t *testing.T) {
	silent, accepted := silentNameServer(t, 1)
	_, ns := nameServer(t, nil)
	n := dialAddr(t, ns)
	a := newEnv(t, func(_ *broker.Config, sc *server.Config) {
		sc.Role, sc.BrokerName, sc.NamesrvAddr, sc.RegisterTimeout = server.RoleBroker, "broker-a", []string{silent, ns}, time.Hour
	})
	select { // the first registration failed; the retry hangs
	case <-accepted:
	case <-time.After(time.Minute):
		t.Fatal("the broker never retried the silent name server")
	}
	for _, id := range []int64{1, 0, 2} {
		done := make(chan struct{})
		go func() {
			defer close(done)
			a.s.SetBrokerID(id)
		}()
		select {
		case <-done:
		case <-time.After(time.Minute):
			t.Fatalf("SetBrokerID(%d) waits for a name server whose registration failed", id)
		}
		if got := getRoute(t, n, "TBW102").addrsOf("broker-a"); got[strconv.FormatInt(id, 10)] != a.adr || len(got) != 1 {
			t.Fatalf("after SetBrokerID(%d) returned: broker-a members %v", id, got)
		}
	}
	if err := a.s.Close(); err != nil {
		t.Fatal(err)
	}
}
