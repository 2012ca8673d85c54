package server

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/rocketstore/rocketstore/acl"
	"github.com/rocketstore/rocketstore/record"
	"github.com/rocketstore/rocketstore/remoting"
)

// Security configures access control, TLS and the limits that keep one
// client from hurting the others. The zero value is RocketMQ's default:
// no ACL, no TLS, no limits, and the server behaves exactly as without it.
type Security struct {
	// ACLEnable turns on RocketMQ plain ACL (aclEnable): every request
	// but the name server's route queries must be signed by an account of
	// ACLFile and hold the permissions its request code needs.
	ACLEnable bool
	// ACLFile is the plain_acl.yml path (aclFile). A Node defaults it to
	// DIR/config/plain_acl.yml. It is reloaded when it changes.
	ACLFile string
	// ACLReloadInterval is how often ACLFile is checked for changes (1 s).
	ACLReloadInterval time.Duration

	// TLSMode is tlsServerMode: disabled (default), permissive (TLS and
	// plain on one port) or enforcing (TLS only).
	TLSMode remoting.TLSMode
	// TLSCertPath and TLSKeyPath are the PEM certificate chain and key
	// (tlsServerCertPath, tlsServerKeyPath), needed unless TLSConfig is set.
	TLSCertPath, TLSKeyPath string
	// TLSConfig, if set, is used instead of loading TLSCertPath/TLSKeyPath.
	TLSConfig *tls.Config

	// Limits bound what clients may create and how fast they may ask.
	Limits Limits
}

// Limits bound auto-created topics and request rates. Zero fields mean no
// limit, as in RocketMQ.
type Limits struct {
	// AutoCreateTopicMaxPerClient bounds the topics one client may create
	// by sending to them (autoCreateTopicEnable); a client is its ACL
	// access key, or its IP address without ACL. Counted since the server
	// started.
	AutoCreateTopicMaxPerClient int
	// AutoCreateTopicMaxTotal refuses auto-creation once the broker has
	// this many topics (system and retry topics included).
	AutoCreateTopicMaxTotal int
	// AutoCreateTopicMaxQueueNums caps the queues of an auto-created
	// topic (the producer's defaultTopicQueueNums; RocketMQ already caps
	// it at TBW102's count, 8). Each queue that receives a message
	// preallocates a 6 MB ConsumeQueue file.
	AutoCreateTopicMaxQueueNums int
	// ConnRequestRate bounds the requests per second of one connection
	// (a token bucket of ConnRequestBurst tokens, default 2×rate). A
	// request over it waits for its token, which stops the server reading
	// the connection once its MaxConcurrentRequests are waiting (TCP then
	// slows the sender); one that would wait over a second is answered
	// SYSTEM_BUSY.
	ConnRequestRate float64
	// ConnRequestBurst is the token bucket's size.
	ConnRequestBurst int
	// MaxInFlight bounds the requests being handled across all
	// connections. When reached, a request is answered SYSTEM_BUSY if its
	// connection already holds its fair share (MaxInFlight divided by the
	// connections with requests in flight), and admitted otherwise: a
	// light client is never refused because of a heavy one.
	MaxInFlight int
}

func (c Security) validate() error {
	l := c.Limits
	switch {
	case c.TLSMode != remoting.TLSDisabled && c.TLSConfig == nil && (c.TLSCertPath == "" || c.TLSKeyPath == ""):
		return fmt.Errorf("%w: tlsServerMode %s needs tlsServerCertPath and tlsServerKeyPath", ErrConfig, c.TLSMode)
	case c.TLSMode > remoting.TLSEnforcing:
		return fmt.Errorf("%w: TLSMode %d", ErrConfig, c.TLSMode)
	case l.AutoCreateTopicMaxPerClient < 0 || l.AutoCreateTopicMaxTotal < 0 || l.AutoCreateTopicMaxQueueNums < 0 ||
		l.ConnRequestRate < 0 || l.ConnRequestBurst < 0 || l.MaxInFlight < 0 || c.ACLReloadInterval < 0:
		return fmt.Errorf("%w: negative security limit", ErrConfig)
	}
	return nil
}

// security is the server's request interceptor: limits, then ACL, then
// auto-creation rules, then the handler.
type security struct {
	s       *Server
	cfg     Security
	acl     *acl.Validator // nil when off
	tls     *tls.Config    // nil when off
	limiter *limiter       // nil when no rate or in-flight limit

	metrics SecurityMetrics // nil without metrics

	mu      sync.Mutex
	created map[string]int // auto-created topics by client

	wg sync.WaitGroup // Listen's serving goroutines (TLS)

	logMu      sync.Mutex // denial log throttle
	logTokens  float64
	logLast    time.Time
	suppressed int
}

// Denial logs are throttled, so that a refused client retrying in a loop
// cannot flood the log; the metric counts every denial.
const (
	denialLogRate  = 10 // lines per second
	denialLogBurst = 50
)

// logDenial logs a refused request unless the throttle is empty.
func (sec *security) logDenial(msg string, args ...any) {
	sec.logMu.Lock()
	now := sec.s.cfg.Clock.Now()
	if sec.logLast.IsZero() {
		sec.logTokens = denialLogBurst
	} else {
		sec.logTokens = min(denialLogBurst, sec.logTokens+now.Sub(sec.logLast).Seconds()*denialLogRate)
	}
	sec.logLast = now
	if sec.logTokens < 1 {
		sec.suppressed++
		sec.logMu.Unlock()
		return
	}
	sec.logTokens--
	if sec.suppressed > 0 {
		args = append(args, "suppressedSinceLastLine", sec.suppressed)
		sec.suppressed = 0
	}
	sec.logMu.Unlock()
	sec.s.log.Warn(msg, args...)
}

// newSecurity loads the ACL and TLS material of cfg; it returns nil when
// nothing is configured.
func newSecurity(s *Server, cfg Security) (*security, error) {
	if cfg == (Security{}) {
		return nil, nil
	}
	sec := &security{s: s, cfg: cfg, created: map[string]int{}}
	sec.initMetrics()
	if cfg.TLSMode != remoting.TLSDisabled {
		sec.tls = cfg.TLSConfig
		if sec.tls == nil {
			var err error
			if sec.tls, err = remoting.LoadServerTLS(cfg.TLSCertPath, cfg.TLSKeyPath); err != nil {
				return nil, err
			}
		}
	}
	if l := cfg.Limits; l.ConnRequestRate > 0 || l.MaxInFlight > 0 {
		sec.limiter = newLimiter(l, s.cfg.Clock)
	}
	if cfg.ACLEnable {
		if cfg.ACLFile == "" {
			return nil, fmt.Errorf("%w: aclEnable needs aclFile (a Node defaults it to DIR/config/%s)", ErrConfig, DefaultACLFile)
		}
		v, err := acl.Open(acl.Config{File: cfg.ACLFile, ReloadInterval: cfg.ACLReloadInterval, Clock: s.cfg.Clock, Logger: s.log,
			OnReload: sec.reloaded})
		if err != nil {
			return nil, err
		}
		sec.acl = v
	}
	return sec, nil
}

func (sec *security) initMetrics() {
	if sec.s.metrics != nil {
		sec.metrics = sec.s.metrics.Security()
	}
}

func (sec *security) reloaded(err error) {
	if sec.metrics == nil {
		return
	}
	if err != nil {
		sec.metrics.ACLReload("error")
	} else {
		sec.metrics.ACLReload("ok")
	}
}

// count calls f with the security metrics when there are any.
func (sec *security) count(f func(SecurityMetrics)) {
	if sec.metrics != nil {
		f(sec.metrics)
	}
}

// secure wraps next with the security checks; without any configured it
// returns next itself.
func (s *Server) secure(next remoting.Handler) remoting.Handler {
	sec := s.sec
	if sec == nil || (sec.acl == nil && sec.limiter == nil && sec.cfg.Limits == (Limits{})) {
		return next
	}
	return remoting.HandlerFunc(func(ctx context.Context, c *remoting.Conn, req *remoting.RemotingCommand) (*remoting.RemotingCommand, error) {
		if sec.limiter != nil {
			release, which := sec.limiter.admit(ctx, c.ID())
			if release == nil {
				sec.count(func(m SecurityMetrics) { m.Limited(which) })
				return req.NewResponse(remoting.CodeSystemBusy,
					fmt.Sprintf("[TOO_MANY_REQUESTS] %s limit reached; slow down", which)), nil
			}
			defer release()
		}
		if sec.acl != nil {
			if d := sec.acl.Check(req, peer(c).Addr()); d != nil {
				sec.count(func(m SecurityMetrics) { m.Denied(d.Reason) })
				sec.logDenial("acl: request denied", "code", req.Code, "remote", peerString(c),
					"accessKey", d.AccessKey, "reason", d.Reason, "remark", d.Remark)
				return req.NewResponse(remoting.CodeNoPermission, d.Remark), nil
			}
		}
		if isSendCode(req.Code) && s.b != nil {
			resp, done := sec.autoCreate(c, req)
			if resp != nil {
				return resp, nil
			}
			if done != nil {
				defer done()
			}
		}
		resp, err := next.Handle(ctx, c, req)
		if sec.acl != nil && req.Code == remoting.CodeViewMessageByID && err == nil && resp != nil && resp.Code == remoting.CodeSuccess {
			return sec.checkViewed(c, req, resp), nil
		}
		return resp, err
	})
}

// checkViewed withholds a message looked up by id (VIEW_MESSAGE_BY_ID) from
// an account without SUB on its topic: the topic is known only from the
// message itself.
func (sec *security) checkViewed(c *remoting.Conn, req, resp *remoting.RemotingCommand) *remoting.RemotingCommand {
	m, err := record.Decode(resp.Body, req.Fields().Int64("offset"), false)
	if err != nil {
		return req.NewResponse(remoting.CodeSystemError, fmt.Sprintf("viewed message: %v", err))
	}
	if d := sec.acl.CheckResource(req, peer(c).Addr(), acl.TopicNeed(m.Topic, acl.PermSub)); d != nil {
		sec.count(func(m SecurityMetrics) { m.Denied(d.Reason) })
		sec.logDenial("acl: request denied", "code", req.Code, "remote", peerString(c),
			"accessKey", d.AccessKey, "reason", d.Reason, "remark", d.Remark)
		return req.NewResponse(remoting.CodeNoPermission, d.Remark)
	}
	return resp
}

// listener wraps ln for the configured TLS mode.
func (sec *security) listener(ln net.Listener) net.Listener {
	if sec == nil || sec.tls == nil {
		return ln
	}
	return remoting.TLSListener(ln, sec.cfg.TLSMode, sec.tls)
}

func (sec *security) connClosed(c *remoting.Conn) {
	if sec != nil && sec.limiter != nil {
		sec.limiter.forget(c.ID())
	}
}

// close stops the ACL watcher and waits for the serving goroutines; the
// remoting server is closed already.
func (sec *security) close() {
	if sec == nil {
		return
	}
	sec.wg.Wait()
	if sec.acl != nil {
		_ = sec.acl.Close()
	}
}

// DefaultACLFile is the ACL file's name in the store's config directory.
const DefaultACLFile = "plain_acl.yml"

// listenTLS is Listen for a server with TLS: the listener is wrapped
// before the remoting server sees it.
func (s *Server) listenTLS(addr string) (net.Addr, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	s.advertise(ln.Addr())
	s.sec.wg.Add(1)
	go func() {
		defer s.sec.wg.Done()
		_ = s.rs.Serve(s.sec.listener(ln))
	}()
	return ln.Addr(), nil
}

// applySecurity sets the security keys of a FileConfig in sc.
func (fc *FileConfig) applySecurity(sc *Security) error {
	if fc.AclEnable != nil {
		sc.ACLEnable = *fc.AclEnable
	}
	if fc.AclFile != nil {
		sc.ACLFile = *fc.AclFile
	}
	if fc.TLSServerMode != nil {
		m, err := remoting.ParseTLSMode(*fc.TLSServerMode)
		if err != nil {
			return fmt.Errorf("%w: %v", ErrConfig, err)
		}
		sc.TLSMode = m
	}
	if fc.TLSServerCertPath != nil {
		sc.TLSCertPath = *fc.TLSServerCertPath
	}
	if fc.TLSServerKeyPath != nil {
		sc.TLSKeyPath = *fc.TLSServerKeyPath
	}
	l := &sc.Limits
	for _, p := range []struct {
		src *int
		dst *int
	}{{fc.AutoCreateTopicMaxPerClient, &l.AutoCreateTopicMaxPerClient}, {fc.AutoCreateTopicMaxTotal, &l.AutoCreateTopicMaxTotal},
		{fc.AutoCreateTopicMaxQueueNums, &l.AutoCreateTopicMaxQueueNums}, {fc.ConnRequestBurst, &l.ConnRequestBurst},
		{fc.MaxInFlightRequests, &l.MaxInFlight}} {
		if p.src != nil {
			*p.dst = *p.src
		}
	}
	if fc.ConnRequestRateLimit != nil {
		l.ConnRequestRate = *fc.ConnRequestRateLimit
	}
	return nil
}
