package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rocketstore/rocketstore/broker/config"
	"github.com/rocketstore/rocketstore/remoting"
)

// registrar is the broker role's side of the name servers (RocketMQ's
// BrokerOuterAPI.registerBrokerAll): it registers the broker and its topic
// table with every name server of Config.NamesrvAddr at start, every
// RegisterInterval, within a second of a topic-table change, and at once
// on SetBrokerID; Shutdown unregisters it.
type registrar struct {
	s     *Server
	addrs []string

	// regMu serializes registration rounds, so that a round built with an
	// old broker id never lands after one built with the new id.
	regMu sync.Mutex
	// registered is the topic-table version of the last round that
	// reached every name server; nil forces the next check to register.
	registered *config.DataVersion
	// sent holds the topics of the last round attempted, so that a send
	// to a topic the name servers have not been told about registers at
	// once (RocketMQ registers from createTopicInSendMessageMethod).
	sentMu sync.RWMutex
	sent   map[string]bool

	mu      sync.Mutex
	clients map[string]*remoting.Client
	closed  bool
	// lost is set when a name server connection closes: the name server
	// forgets the brokers registered on it (as RocketMQ's does on a
	// channel close), so the next check registers again instead of
	// waiting for RegisterInterval.
	lost atomic.Bool

	// ctx bounds every registration; close cancels it so that a name
	// server that does not answer cannot hold Close up.
	ctx    context.Context
	cancel context.CancelFunc
	stop   chan struct{}
	done   chan struct{}
}

// topicCheckInterval is how often the topic table's version is compared
// with the registered one (RocketMQ registers from the code path that
// changed the table; polling the version finds every change).
const topicCheckInterval = time.Second

func newRegistrar(s *Server, addrs []string) *registrar {
	ctx, cancel := context.WithCancel(context.Background())
	return &registrar{s: s, addrs: addrs, clients: map[string]*remoting.Client{},
		ctx: ctx, cancel: cancel, stop: make(chan struct{}), done: make(chan struct{})}
}

func (r *registrar) run() {
	defer close(r.done)
	period := time.NewTicker(r.s.cfg.RegisterInterval)
	defer period.Stop()
	check := time.NewTicker(topicCheckInterval)
	defer check.Stop()
	r.registerAll(false)
	for {
		select {
		case <-r.stop:
			return
		case <-period.C:
			r.registerAll(true)
		case <-check.C:
			r.registerAll(false)
		}
	}
}

// registerAll registers with every name server, in parallel; unless force,
// only when the topic table changed or the last round failed somewhere.
func (r *registrar) registerAll(force bool) {
	r.regMu.Lock()
	defer r.regMu.Unlock()
	topics, version := r.s.b.Topics().All()
	lost := r.lost.Swap(false)
	if !force && !lost && r.registered != nil && *r.registered == version {
		return
	}
	for name, tc := range topics {
		tc.Perm = r.s.routePerm(tc.Perm)
		topics[name] = tc
	}
	addr := r.s.BrokerAddr()
	if addr == "" {
		return // not listening yet
	}
	body, err := json.Marshal(registerBrokerJSON{
		TopicConfigSerializeWrapper: topicWrapperJSON{TopicConfigTable: topics, DataVersion: version},
		FilterServerList:            []string{},
	})
	if err != nil {
		r.s.log.Error("encode registration", "err", err)
		return
	}
	names := make(map[string]bool, len(topics))
	for n := range topics {
		names[n] = true
	}
	r.sentMu.Lock()
	r.sent = names
	r.sentMu.Unlock()
	id := r.s.BrokerID()
	var wg sync.WaitGroup
	errs := make([]error, len(r.addrs))
	for i, ns := range r.addrs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = r.registerOne(ns, addr, id, body)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		r.registered = nil
		return
	}
	r.registered = &version
}

// registerBrokerJSON is RegisterBrokerBody as the Java broker encodes it
// when compressedRegister is off.
type registerBrokerJSON struct {
	TopicConfigSerializeWrapper topicWrapperJSON `json:"topicConfigSerializeWrapper"`
	FilterServerList            []string         `json:"filterServerList"`
}

type topicWrapperJSON struct {
	TopicConfigTable map[string]config.TopicConfig `json:"topicConfigTable"`
	DataVersion      config.DataVersion            `json:"dataVersion"`
}

func (r *registrar) registerOne(ns, addr string, id int64, body []byte) error {
	req := remoting.NewRequest(codeRegisterBroker, body)
	r.header(req, addr, id)
	req.SetExt("haServerAddr", r.s.cfg.HAServerAddr)
	req.SetExtBool("compressed", false)
	req.SetExtInt("bodyCrc32", int64(bodyCRC32(body)))
	resp, err := r.invoke(r.ctx, ns, req)
	if err != nil {
		r.s.log.Warn("register broker with name server", "namesrv", ns, "brokerId", id, "err", err)
		return err
	}
	r.s.log.Debug("registered with name server", "namesrv", ns, "brokerId", id, "masterAddr", resp.ExtFields["masterAddr"])
	return nil
}

func (r *registrar) header(req *remoting.RemotingCommand, addr string, id int64) {
	req.SetExt("brokerName", r.s.cfg.BrokerName)
	req.SetExt("brokerAddr", addr)
	req.SetExt("clusterName", r.s.cfg.ClusterName)
	req.SetExtInt("brokerId", id)
}

// invoke sends req to name server ns on its cached connection, dialing
// one if needed; a failed connection is dropped so the next call redials.
func (r *registrar) invoke(ctx context.Context, ns string, req *remoting.RemotingCommand) (*remoting.RemotingCommand, error) {
	ctx, cancel := context.WithTimeout(ctx, r.s.cfg.RegisterTimeout)
	defer cancel()
	cl, err := r.client(ctx, ns)
	if err != nil {
		return nil, err
	}
	resp, err := cl.Invoke(ctx, req)
	if err != nil {
		r.drop(ns, cl)
		return nil, err
	}
	if resp.Code != remoting.CodeSuccess {
		return resp, fmt.Errorf("name server %s answered code %d: %s", ns, resp.Code, resp.Remark)
	}
	return resp, nil
}

func (r *registrar) client(ctx context.Context, ns string) (*remoting.Client, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil, errShuttingDown
	}
	if cl := r.clients[ns]; cl != nil {
		select {
		case <-cl.Conn().Done():
			_ = cl.Close()
			delete(r.clients, ns)
		default:
			return cl, nil
		}
	}
	cl, err := remoting.Dial(ctx, ns, remoting.ClientOptions{Options: remoting.Options{Logger: r.s.log}})
	if err != nil {
		return nil, err
	}
	r.clients[ns] = cl
	go func() {
		select {
		case <-cl.Conn().Done():
			r.lost.Store(true)
		case <-r.ctx.Done():
		}
	}()
	return cl, nil
}

func (r *registrar) drop(ns string, cl *remoting.Client) {
	r.mu.Lock()
	if r.clients[ns] == cl {
		delete(r.clients, ns)
	}
	r.mu.Unlock()
	_ = cl.Close()
}

// close stops the loop; with unregister it first tells every name server
// that the broker is leaving (unregisterBrokerAll), bounded by ctx.
func (r *registrar) close(ctx context.Context, unregister bool) {
	select {
	case <-r.stop:
	default:
		close(r.stop)
	}
	if !unregister {
		r.cancel()
	}
	<-r.done
	if unregister {
		r.regMu.Lock()
		addr, id := r.s.BrokerAddr(), r.s.BrokerID()
		var wg sync.WaitGroup
		for _, ns := range r.addrs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				req := remoting.NewRequest(codeUnregisterBroker, nil)
				r.header(req, addr, id)
				if _, err := r.invoke(ctx, ns, req); err != nil {
					r.s.log.Warn("unregister broker from name server", "namesrv", ns, "err", err)
				}
			}()
		}
		wg.Wait()
		r.regMu.Unlock()
	}
	r.cancel()
	r.mu.Lock()
	r.closed = true
	cls := r.clients
	r.clients = map[string]*remoting.Client{}
	r.mu.Unlock()
	for _, cl := range cls {
		_ = cl.Close()
	}
}

// topicUsed registers with the name servers before it returns when topic
// is not in the last registered topic table (a topic a send just created).
func (r *registrar) topicUsed(topic string) {
	r.sentMu.RLock()
	known := r.sent[topic]
	r.sentMu.RUnlock()
	if !known {
		if _, ok := r.s.b.Topics().Get(topic); ok {
			r.registerAll(false)
		}
	}
}

// routePerm is the perm a topic is routed with: a broker that is not both
// readable and writable (brokerPermission) registers its own permission
// for every topic, as RocketMQ's registerBrokerAll, so that clients stop
// sending to (or pulling from) it.
func (s *Server) routePerm(topicPerm int) int {
	bp := s.b.Config().BrokerPermission
	if !config.IsWritable(bp) || !config.IsReadable(bp) {
		return bp
	}
	return topicPerm
}

// SetBrokerID changes the broker id the server registers with (0 is the
// group's master, RocketMQ's MixAll.MASTER_ID; 1, 2, ... its slaves) and
// re-registers with every name server of Config.NamesrvAddr at once. It
// returns when each name server has answered or RegisterTimeout passed
// (failures are logged and retried within a second). Without name servers
// to register with, the local name server's routes show the new id.
func (s *Server) SetBrokerID(id int64) {
	s.brokerID.Store(id)
	if s.reg != nil {
		s.reg.registerAll(true)
	}
}

// BrokerID returns the broker id the server registers with.
func (s *Server) BrokerID() int64 { return s.brokerID.Load() }
