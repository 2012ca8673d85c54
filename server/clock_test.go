package server_test

import (
	"context"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/rocketstore/rocketstore/broker"
	"github.com/rocketstore/rocketstore/remoting"
	"github.com/rocketstore/rocketstore/server"
	"github.com/rocketstore/rocketstore/server/namesrv"
)

// countingNameServer answers every REGISTER_BROKER with success and
// reports it on the returned channel.
func countingNameServer(t *testing.T) (addr string, regs <-chan struct{}) {
	t.Helper()
	ch := make(chan struct{}, 64)
	ns, err := remoting.NewServer(remoting.HandlerFunc(func(_ context.Context, _ *remoting.Conn, req *remoting.RemotingCommand) (*remoting.RemotingCommand, error) {
		if req.Code == namesrv.CodeRegisterBroker {
			ch <- struct{}{}
		}
		return req.NewResponse(remoting.CodeSuccess, ""), nil
	}), remoting.Options{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	a, err := ns.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ns.Close() })
	return a.String(), ch
}

// TestRegistrarReregistersOnTheServerClock: the periodic registration
// with the name servers ticks on Config.Clock: with a RegisterInterval of
// an hour on a fake clock, the broker registers first and again once
// the clock moved the interval, with nothing changed. On a wall-clock
// ticker the second registration would not come within the test. (That
// none comes before is not asserted: a topic check that runs before the
// first answer is processed offers the round again, as it should.)
func TestRegistrarReregistersOnTheServerClock(t *testing.T) {
	ns, regs := countingNameServer(t)
	clock := clockwork.NewFakeClock()
	newEnv(t, func(_ *broker.Config, sc *server.Config) {
		sc.Role, sc.BrokerName, sc.NamesrvAddr = server.RoleBroker, "broker-a", []string{ns}
		sc.Clock, sc.RegisterInterval = clock, time.Hour
	})
	wait := func(what string) {
		t.Helper()
		select {
		case <-regs:
		case <-time.After(time.Minute):
			t.Fatalf("no %s registration", what)
		}
	}
	// The first registration is at start, or at the first topic check
	// (a second) if the registrar ran before the server listened: the
	// clock moves a second at a time until it comes.
	for i := 0; ; i++ {
		select {
		case <-regs:
		case <-time.After(10 * time.Millisecond):
			if i == 1000 {
				t.Fatal("no first registration")
			}
			clock.Advance(time.Second)
			continue
		}
		break
	}
	clock.Advance(time.Hour)
	wait("periodic")
}

// TestScanRunsOnTheServerClock: the housekeeping scan ticks on
// Config.Clock: with a ScanInterval of an hour on a fake clock, a broker
// that stopped registering is forgotten (and its connection closed) by
// the scan that moving the clock an hour runs. The clock moves an hour at
// a time (the scan's ticker starts with the server, at a moment the test
// does not see) for at most a few seconds of wall time: on a wall-clock
// ticker of an hour no scan would run.
func TestScanRunsOnTheServerClock(t *testing.T) {
	clock := newFakeClock()
	s, err := server.New(nil, server.Config{Role: server.RoleNameServer, Logger: quiet, ScanInterval: time.Hour, Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	a, err := s.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	b := dialAddr(t, a.String())
	wantCode(t, registerBroker(t, b, "C1", "broker-b", "127.0.0.1:2", 0, "", javaRegisterBody(1, map[string]int{"T": 1})), remoting.CodeSuccess)
	for i := 0; ; i++ {
		clock.Advance(time.Hour)
		select {
		case <-b.Conn().Done():
			return
		case <-time.After(10 * time.Millisecond):
		}
		if i == 300 {
			t.Fatal("the silent broker's connection is still open after 300 hours of the server's clock")
		}
	}
}
