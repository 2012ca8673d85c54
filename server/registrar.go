package server

import (
	"context"
	"encoding/json"
	"sync"
	"time"

	"github.com/rocketstore/rocketstore/broker/config"
	"github.com/rocketstore/rocketstore/remoting"
)

// registrar is the broker role's side of the name servers (RocketMQ's
// BrokerOuterAPI.registerBrokerAll): it registers the broker and its topic
// table with every name server of Config.NamesrvAddr at start, every
// RegisterInterval, within a second of a topic-table change or a failed
// registration, and at once on SetBrokerID; Shutdown unregisters it.
//
// Each name server has its own link (registrar_link.go): its own
// connection, goroutine, deadline and retry, so that a name server that
// does not answer (a host whose packets are dropped) delays no
// registration with the others. The registrar only builds rounds and
// offers them to the links; no lock of the registrar is held across I/O.
type registrar struct {
	s     *Server
	links []*nsLink

	// mu guards the latest round and the topics it holds. A round is
	// built under mu, so that gen orders rounds as they were built and a
	// round built with an old broker id never replaces one built with the
	// new id.
	mu    sync.Mutex
	gen   uint64
	round *regRound
	// sent holds the topics of the latest round, so that a send to a
	// topic the name servers have not been told about registers at once
	// (RocketMQ registers from createTopicInSendMessageMethod).
	sent map[string]bool

	// ctx bounds every registration; close cancels it so that a name
	// server that does not answer cannot hold Close up.
	ctx    context.Context
	cancel context.CancelFunc
	linkWG sync.WaitGroup
	stop   chan struct{}
	done   chan struct{}
}

// regRound is one registration: what every name server is told.
type regRound struct {
	gen     uint64
	id      int64
	addr    string
	version config.DataVersion
	body    []byte
}

// topicCheckInterval is how often the topic table's version is compared
// with the registered one and failed registrations are retried (RocketMQ
// registers from the code path that changed the table; polling the
// version finds every change).
const topicCheckInterval = time.Second

func newRegistrar(s *Server, addrs []string) *registrar {
	ctx, cancel := context.WithCancel(context.Background())
	r := &registrar{s: s, ctx: ctx, cancel: cancel, stop: make(chan struct{}), done: make(chan struct{})}
	for _, a := range addrs {
		r.links = append(r.links, newNSLink(r, a))
	}
	return r
}

func (r *registrar) run() {
	defer close(r.done)
	for _, l := range r.links {
		r.linkWG.Add(1)
		go func() {
			defer r.linkWG.Done()
			l.run(r.ctx)
		}()
	}
	period := r.s.cfg.Clock.NewTicker(r.s.cfg.RegisterInterval)
	defer period.Stop()
	check := r.s.cfg.Clock.NewTicker(topicCheckInterval)
	defer check.Stop()
	r.registerAll(false, false)
	for {
		select {
		case <-r.stop:
			return
		case <-period.Chan():
			r.registerAll(true, false)
		case <-check.Chan():
			r.registerAll(false, false)
		}
	}
}

// registerAll builds a round and offers it to every name server's link;
// unless force, a link takes it only when the topic table or the broker
// id changed since its last registration, or that registration failed.
// With wait it returns once every link whose last registration did not
// fail has answered this round, or RegisterTimeout passed: a name server
// whose last registration failed is retried in the background, never
// waited for.
func (r *registrar) registerAll(force, wait bool) {
	round := r.build()
	if round == nil {
		return
	}
	var waitFor []*nsLink
	for _, l := range r.links {
		if l.offer(round, force) && wait {
			waitFor = append(waitFor, l)
		}
	}
	if len(waitFor) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(r.ctx, r.s.cfg.RegisterTimeout)
	defer cancel()
	for _, l := range waitFor {
		l.await(ctx, round.gen)
	}
}

// build returns the broker's current registration, or nil before the
// broker listens.
func (r *registrar) build() *regRound {
	r.mu.Lock()
	defer r.mu.Unlock()
	addr := r.s.BrokerAddr()
	if addr == "" {
		return nil // not listening yet
	}
	topics, version := r.s.b.Topics().All()
	for name, tc := range topics {
		tc.Perm = r.s.routePerm(tc.Perm)
		topics[name] = tc
	}
	body, err := json.Marshal(registerBrokerJSON{
		TopicConfigSerializeWrapper: topicWrapperJSON{TopicConfigTable: topics, DataVersion: version},
		FilterServerList:            []string{},
	})
	if err != nil {
		r.s.log.Error("encode registration", "err", err)
		return nil
	}
	names := make(map[string]bool, len(topics))
	for n := range topics {
		names[n] = true
	}
	r.sent = names
	r.gen++
	r.round = &regRound{gen: r.gen, id: r.s.BrokerID(), addr: addr, version: version, body: body}
	return r.round
}

// latest returns the last round built, nil before the first.
func (r *registrar) latest() *regRound {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.round
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

func (r *registrar) header(req *remoting.RemotingCommand, addr string, id int64) {
	req.SetExt("brokerName", r.s.cfg.BrokerName)
	req.SetExt("brokerAddr", addr)
	req.SetExt("clusterName", r.s.cfg.ClusterName)
	req.SetExtInt("brokerId", id)
}

// close stops the loop and every link; with unregister it then tells
// every name server, in parallel, that the broker is leaving
// (unregisterBrokerAll), bounded by ctx.
func (r *registrar) close(ctx context.Context, unregister bool) {
	select {
	case <-r.stop:
	default:
		close(r.stop)
	}
	<-r.done
	// Registrations in flight are cancelled: an unregistration follows,
	// or the server is closing.
	r.cancel()
	r.linkWG.Wait()
	if unregister {
		addr, id := r.s.BrokerAddr(), r.s.BrokerID()
		var wg sync.WaitGroup
		for _, l := range r.links {
			wg.Add(1)
			go func() {
				defer wg.Done()
				l.unregister(ctx, addr, id)
			}()
		}
		wg.Wait()
	}
	for _, l := range r.links {
		l.close()
	}
}

// topicUsed registers with the name servers before it returns when topic
// is not in the last registered topic table (a topic a send just created).
func (r *registrar) topicUsed(topic string) {
	r.mu.Lock()
	known := r.sent[topic]
	r.mu.Unlock()
	if !known {
		if _, ok := r.s.b.Topics().Get(topic); ok {
			r.registerAll(false, true)
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
// returns when each name server whose last registration did not fail has
// answered, or RegisterTimeout passed; a name server whose last
// registration failed (it is down, or its host drops packets) is retried
// in the background every second and is not waited for. Registrations
// with the other name servers never wait for a silent one.
// Without name servers to register with, the local name server's routes
// show the new id.
func (s *Server) SetBrokerID(id int64) {
	s.brokerID.Store(id)
	if s.reg != nil {
		s.reg.registerAll(true, true)
	}
}

// BrokerID returns the broker id the server registers with.
func (s *Server) BrokerID() int64 { return s.brokerID.Load() }
