package proxy

import (
	"context"
	"sync"

	"google.golang.org/grpc"

	"github.com/rocketstore/rocketstore/broker"
	"github.com/rocketstore/rocketstore/filter"
	"github.com/rocketstore/rocketstore/proxy/rmqpb"
)

// client is a 5.x client known by its x-mq-client-id: its last settings
// and its open telemetry streams (through which orphaned transactions
// are recovered).
type client struct {
	id       string
	settings *rmqpb.Settings
	sessions map[*session]struct{}
}

// session is one open Telemetry stream; commands to the client go
// through out, written by the stream's goroutine.
type session struct {
	out  chan *rmqpb.TelemetryCommand
	done chan struct{}
}

// clientTable holds the clients with settings or an open stream.
type clientTable struct {
	mu      sync.Mutex
	clients map[string]*client
	stop    chan struct{}
	stopped bool
}

func newClientTable() *clientTable {
	return &clientTable{clients: map[string]*client{}, stop: make(chan struct{})}
}

func (t *clientTable) get(id string) *client {
	c := t.clients[id]
	if c == nil {
		c = &client{id: id, sessions: map[*session]struct{}{}}
		t.clients[id] = c
	}
	return c
}

// setSettings records a client's settings.
func (t *clientTable) setSettings(id string, s *rmqpb.Settings) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.get(id).settings = s
}

func (t *clientTable) settings(id string) *rmqpb.Settings {
	t.mu.Lock()
	defer t.mu.Unlock()
	if c := t.clients[id]; c != nil {
		return c.settings
	}
	return nil
}

// open registers a telemetry stream; false once the proxy stops.
func (t *clientTable) open(id string, s *session) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.stopped {
		return false
	}
	t.get(id).sessions[s] = struct{}{}
	return true
}

func (t *clientTable) closeSession(id string, s *session) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if c := t.clients[id]; c != nil {
		delete(c.sessions, s)
	}
}

// remove forgets a client (NotifyClientTermination) and returns it.
func (t *clientTable) remove(id string) *client {
	t.mu.Lock()
	defer t.mu.Unlock()
	c := t.clients[id]
	delete(t.clients, id)
	return c
}

// publishers returns a session of each producer publishing topic.
func (t *clientTable) publishers(topic string) []*session {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []*session
	for _, c := range t.clients {
		pub := c.settings.GetPublishing()
		if pub == nil {
			continue
		}
		for _, r := range pub.GetTopics() {
			if r.GetName() == topic {
				for s := range c.sessions {
					out = append(out, s)
					break
				}
				break
			}
		}
	}
	return out
}

// closeAll ends every telemetry stream (the proxy is stopping).
func (t *clientTable) closeAll() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.stopped {
		t.stopped = true
		close(t.stop)
	}
}

// Heartbeat registers a consumer's group with the broker, as a 4.x
// heartbeat does (so that the admin tools list it and its retry topic
// exists); producers need nothing.
func (p *Proxy) Heartbeat(ctx context.Context, req *rmqpb.HeartbeatRequest) (*rmqpb.HeartbeatResponse, error) {
	group := req.GetGroup().GetName()
	if group == "" {
		return &rmqpb.HeartbeatResponse{Status: okStatus}, nil
	}
	if st := p.authorize(ctx, groupNeed(group)); st != nil {
		return &rmqpb.HeartbeatResponse{Status: st}, nil
	}
	ci := infoFrom(ctx)
	if ci.clientID == "" {
		return &rmqpb.HeartbeatResponse{Status: status(rmqpb.Code_CLIENT_ID_REQUIRED, "x-mq-client-id metadata is required")}, nil
	}
	if st := p.registerConsumer(ci.clientID, group); st != nil {
		return &rmqpb.HeartbeatResponse{Status: st}, nil
	}
	return &rmqpb.HeartbeatResponse{Status: okStatus}, nil
}

// registerConsumer registers clientID in group with the subscriptions of
// its settings.
func (p *Proxy) registerConsumer(clientID, group string) *rmqpb.Status {
	cd := broker.ConsumerData{GroupName: group, MessageModel: broker.Clustering}
	if s := p.clients.settings(clientID); s != nil {
		for _, e := range s.GetSubscription().GetSubscriptions() {
			cd.Subscriptions = append(cd.Subscriptions, subscriptionData(e))
		}
	}
	if code, remark := p.b.Heartbeat(clientID, []broker.ConsumerData{cd}); code != broker.Success {
		return brokerStatus(code, remark)
	}
	return nil
}

// subscriptionData converts a 5.x subscription entry to the broker's
// (a malformed tag expression subscribes to all: filtering is done on
// receive, where the expression is checked).
func subscriptionData(e *rmqpb.SubscriptionEntry) *filter.SubscriptionData {
	topic, expr := e.GetTopic().GetName(), e.GetExpression().GetExpression()
	if e.GetExpression().GetType() == rmqpb.FilterType_SQL {
		return &filter.SubscriptionData{Topic: topic, SubString: expr, ExpressionType: filter.ExpressionTypeSQL92}
	}
	sd, err := filter.BuildSubscriptionData(topic, expr)
	if err != nil {
		sd, _ = filter.BuildSubscriptionData(topic, filter.SubAll)
	}
	return sd
}

// NotifyClientTermination forgets the client and unregisters it from its
// group.
func (p *Proxy) NotifyClientTermination(ctx context.Context, req *rmqpb.NotifyClientTerminationRequest) (*rmqpb.NotifyClientTerminationResponse, error) {
	ci := infoFrom(ctx)
	if st := p.authorize(ctx); st != nil {
		return &rmqpb.NotifyClientTerminationResponse{Status: st}, nil
	}
	p.clients.remove(ci.clientID)
	if g := req.GetGroup().GetName(); g != "" && ci.clientID != "" {
		p.b.Unregister(ci.clientID, g)
	}
	return &rmqpb.NotifyClientTerminationResponse{Status: okStatus}, nil
}

// Telemetry is the client's command stream: its Settings are answered
// with the server's, and the server sends RecoverOrphanedTransaction
// commands through it.
func (p *Proxy) Telemetry(stream grpc.BidiStreamingServer[rmqpb.TelemetryCommand, rmqpb.TelemetryCommand]) error {
	ctx := stream.Context()
	ci := infoFrom(ctx)
	if st := p.authorize(ctx); st != nil {
		return stream.Send(&rmqpb.TelemetryCommand{Status: st})
	}
	if ci.clientID == "" {
		return stream.Send(&rmqpb.TelemetryCommand{Status: status(rmqpb.Code_CLIENT_ID_REQUIRED, "x-mq-client-id metadata is required")})
	}
	s := &session{out: make(chan *rmqpb.TelemetryCommand, 16), done: make(chan struct{})}
	if !p.clients.open(ci.clientID, s) {
		return nil
	}
	defer p.clients.closeSession(ci.clientID, s)
	recvErr := make(chan error, 1)
	go func() {
		defer close(s.done)
		for {
			cmd, err := stream.Recv()
			if err != nil {
				recvErr <- err
				return
			}
			if reply := p.onTelemetry(ci.clientID, cmd); reply != nil {
				select {
				case s.out <- reply:
				case <-ctx.Done():
					return
				}
			}
		}
	}()
	for {
		select {
		case cmd := <-s.out:
			if err := stream.Send(cmd); err != nil {
				return err
			}
		case <-recvErr: //nolint:errcheck // the client closed its stream or the connection broke: the session ends either way
			return nil
		case <-p.clients.stop:
			return nil
		case <-ctx.Done():
			return nil
		}
	}
}

// onTelemetry handles one command from a client and returns the reply.
func (p *Proxy) onTelemetry(clientID string, cmd *rmqpb.TelemetryCommand) *rmqpb.TelemetryCommand {
	switch c := cmd.GetCommand().(type) {
	case *rmqpb.TelemetryCommand_Settings:
		p.clients.setSettings(clientID, c.Settings)
		merged := p.serverSettings(c.Settings)
		if g := c.Settings.GetSubscription().GetGroup().GetName(); g != "" {
			if st := p.registerConsumer(clientID, g); st != nil {
				return &rmqpb.TelemetryCommand{Status: st}
			}
		}
		return &rmqpb.TelemetryCommand{Status: okStatus, Command: &rmqpb.TelemetryCommand_Settings{Settings: merged}}
	case *rmqpb.TelemetryCommand_ThreadStackTrace:
		p.log.Info("client thread stack trace", "client", clientID, "nonce", c.ThreadStackTrace.GetNonce(),
			"trace", c.ThreadStackTrace.GetThreadStackTrace())
	case *rmqpb.TelemetryCommand_VerifyMessageResult:
		p.log.Info("client verify message result", "client", clientID, "nonce", c.VerifyMessageResult.GetNonce(),
			"status", cmd.GetStatus().GetCode().String())
	default:
		if cmd.GetStatus() != nil && cmd.GetStatus().GetCode() != rmqpb.Code_OK {
			p.log.Warn("client telemetry status", "client", clientID, "code", cmd.GetStatus().GetCode().String(),
				"message", cmd.GetStatus().GetMessage())
		}
	}
	return nil
}
