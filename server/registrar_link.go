package server

import (
	"context"
	"fmt"
	"sync"

	"github.com/rocketstore/rocketstore/remoting"
	"github.com/rocketstore/rocketstore/server/namesrv"
)

// nsLink is the broker's link to one name server: its connection, the
// registration last answered and the one waiting to be sent. One
// goroutine (run) sends, so that registrations reach a name server in the
// order they were built and a slow name server delays only its own link.
type nsLink struct {
	r    *registrar
	addr string
	// kick wakes run when pending changed (buffered: one wake covers any
	// number of offers).
	kick chan struct{}

	mu sync.Mutex
	// pending is the round run sends next; nil when there is none.
	pending *regRound
	// registered is the round the name server last accepted; nil before
	// the first, after a failure, and once the connection it was sent on
	// closed (a name server that restarted knows nothing of the broker).
	registered *regRound
	// failing is set while the last attempt failed: waiters skip the
	// link, so that a name server that stopped answering delays no caller
	// once its registration timed out.
	failing bool
	// answered is the gen of the last round attempted; answeredCh is
	// closed and replaced each time it grows.
	answered   uint64
	answeredCh chan struct{}
	cl         *remoting.Client
	closed     bool
}

func newNSLink(r *registrar, addr string) *nsLink {
	return &nsLink{r: r, addr: addr, kick: make(chan struct{}, 1), answeredCh: make(chan struct{})}
}

// offer queues round unless the name server already holds its content
// (force sends it anyway, as RocketMQ's periodic forceRegister). It
// reports whether a waiter should wait for the link: the round is queued
// and the link's last attempt did not fail.
func (l *nsLink) offer(round *regRound, force bool) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.pending != nil && l.pending.gen >= round.gen {
		return !l.failing
	}
	reg := l.registered
	if !force && reg != nil && reg.version == round.version && reg.id == round.id && reg.addr == round.addr {
		return false
	}
	l.pending = round
	select {
	case l.kick <- struct{}{}:
	default:
	}
	return !l.failing
}

// run sends the pending rounds until ctx ends.
func (l *nsLink) run(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-l.kick:
		}
		l.mu.Lock()
		round := l.pending
		l.pending = nil
		l.mu.Unlock()
		if round == nil {
			continue
		}
		err := l.register(ctx, round)
		l.mu.Lock()
		l.failing = err != nil
		if err == nil {
			l.registered = round
		} else {
			l.registered = nil
		}
		l.answered = round.gen
		close(l.answeredCh)
		l.answeredCh = make(chan struct{})
		l.mu.Unlock()
	}
}

// await returns once the link attempted round gen (or a later one), or
// ctx ended.
func (l *nsLink) await(ctx context.Context, gen uint64) {
	for {
		l.mu.Lock()
		done, ch := l.answered >= gen, l.answeredCh
		l.mu.Unlock()
		if done {
			return
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return
		}
	}
}

func (l *nsLink) register(ctx context.Context, round *regRound) error {
	req := remoting.NewRequest(namesrv.CodeRegisterBroker, round.body)
	l.r.header(req, round.addr, round.id)
	req.SetExt("haServerAddr", l.r.s.cfg.HAServerAddr)
	req.SetExtBool("compressed", false)
	req.SetExtInt("bodyCrc32", int64(namesrv.BodyCRC32(round.body)))
	resp, err := l.invoke(ctx, req)
	if err != nil {
		if ctx.Err() == nil {
			l.r.s.log.Warn("register broker with name server", "namesrv", l.addr, "brokerId", round.id, "err", err)
		}
		return err
	}
	l.r.s.log.Debug("registered with name server", "namesrv", l.addr, "brokerId", round.id, "masterAddr", resp.ExtFields["masterAddr"])
	return nil
}

func (l *nsLink) unregister(ctx context.Context, addr string, id int64) {
	req := remoting.NewRequest(namesrv.CodeUnregisterBroker, nil)
	l.r.header(req, addr, id)
	if _, err := l.invoke(ctx, req); err != nil {
		l.r.s.log.Warn("unregister broker from name server", "namesrv", l.addr, "err", err)
	}
}

// invoke sends req on the link's connection, dialing one if needed, all
// within RegisterTimeout; a failed connection is dropped so that the next
// call redials.
func (l *nsLink) invoke(ctx context.Context, req *remoting.RemotingCommand) (*remoting.RemotingCommand, error) {
	ctx, cancel := context.WithTimeout(ctx, l.r.s.cfg.RegisterTimeout)
	defer cancel()
	cl, err := l.client(ctx)
	if err != nil {
		return nil, err
	}
	resp, err := cl.Invoke(ctx, req)
	if err != nil {
		l.drop(cl)
		return nil, err
	}
	if resp.Code != remoting.CodeSuccess {
		return resp, fmt.Errorf("name server %s answered code %d: %s", l.addr, resp.Code, resp.Remark)
	}
	return resp, nil
}

// client returns the link's connection, dialing without holding the
// link's lock: only the link's goroutine (or close, after it ended)
// dials, and a dial to a host that drops packets lasts until ctx ends.
func (l *nsLink) client(ctx context.Context) (*remoting.Client, error) {
	l.mu.Lock()
	cl, closed := l.cl, l.closed
	l.mu.Unlock()
	if closed {
		return nil, errShuttingDown
	}
	if cl != nil {
		select {
		case <-cl.Conn().Done():
			l.drop(cl)
		default:
			return cl, nil
		}
	}
	cl, err := remoting.Dial(ctx, l.addr, remoting.ClientOptions{Options: remoting.Options{Logger: l.r.s.log}})
	if err != nil {
		return nil, err
	}
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		_ = cl.Close()
		return nil, errShuttingDown
	}
	l.cl = cl
	l.mu.Unlock()
	go l.watch(cl)
	return cl, nil
}

// watch registers again at once when cl closes: the name server may have
// restarted and forgotten the broker.
func (l *nsLink) watch(cl *remoting.Client) {
	select {
	case <-cl.Conn().Done():
	case <-l.r.ctx.Done():
		return
	}
	l.mu.Lock()
	if l.registered != nil && l.cl == cl {
		l.registered = nil
	}
	l.mu.Unlock()
	if round := l.r.latest(); round != nil {
		l.offer(round, true)
	}
}

func (l *nsLink) drop(cl *remoting.Client) {
	l.mu.Lock()
	if l.cl == cl {
		l.cl = nil
	}
	l.mu.Unlock()
	_ = cl.Close()
}

// close closes the link's connection; the link dials no more.
func (l *nsLink) close() {
	l.mu.Lock()
	l.closed = true
	cl := l.cl
	l.cl = nil
	l.mu.Unlock()
	if cl != nil {
		_ = cl.Close()
	}
}
