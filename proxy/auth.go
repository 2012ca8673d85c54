package proxy

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"

	"github.com/rocketstore/rocketstore/acl"
	"github.com/rocketstore/rocketstore/proxy/rmqpb"
)

// callInfo is what a request's transport and metadata say of its client.
type callInfo struct {
	clientID string
	remote   netip.AddrPort
	cred     acl.V2Credentials
	credErr  error // an authorization header that does not parse
}

// infoFrom reads the transport metadata RocketMQ's clients send
// (x-mq-client-id, authorization, x-mq-date-time) and the peer address
// from a request's context, when a handler needs them: reading them for
// every request in the interceptor, with a context to carry them, cost
// about as much as the proxy's conversion of a send (a CPU profile under
// bench --server --server-grpc).
func infoFrom(ctx context.Context) *callInfo {
	ci := &callInfo{remote: remoteOf(ctx)}
	// ValueFromIncomingContext copies one key's values, where
	// FromIncomingContext would copy the whole metadata of every request.
	first := func(k string) string {
		if v := metadata.ValueFromIncomingContext(ctx, k); len(v) > 0 {
			return v[0]
		}
		return ""
	}
	ci.clientID = first("x-mq-client-id")
	if auth := first("authorization"); auth != "" {
		ci.cred, ci.credErr = acl.ParseV2Authorization(auth, first("x-mq-date-time"))
	}
	return ci
}

// remoteOf is the address of a request's client.
func remoteOf(ctx context.Context) netip.AddrPort {
	if pr, ok := peer.FromContext(ctx); ok {
		if ta, ok := pr.Addr.(*net.TCPAddr); ok {
			return ta.AddrPort()
		}
	}
	return netip.AddrPort{}
}

// admit counts the request in flight; false means it is over MaxInFlight.
func (p *Proxy) admit() bool {
	n := p.inFlight.Add(1)
	if p.cfg.MaxInFlight > 0 && n > int64(p.cfg.MaxInFlight) {
		p.inFlight.Add(-1)
		return false
	}
	return true
}

func (p *Proxy) unaryInterceptor(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
	if !p.admit() {
		return refusal(info.FullMethod, status(rmqpb.Code_TOO_MANY_REQUESTS, "too many requests in flight; retry later"))
	}
	defer p.inFlight.Add(-1)
	return h(ctx, req)
}

// streamInterceptor counts receives and pulls in flight (a held one
// takes a slot, as a request does) but never refuses them: a refused
// stream would have no status for the client to read. Telemetry streams
// live as long as their client and are not counted.
func (p *Proxy) streamInterceptor(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, h grpc.StreamHandler) error {
	if !strings.HasSuffix(info.FullMethod, "/Telemetry") {
		p.inFlight.Add(1)
		defer p.inFlight.Add(-1)
		if streamCounted != nil {
			streamCounted()
		}
	}
	return h(srv, ss)
}

// streamCounted, if set, is called when a stream has been counted in
// flight (a variable for the tests, which stop the proxy at that point).
var streamCounted func()

// authorize checks the request's credentials and the permissions it needs
// when ACL is on; nil means allowed. A refusal is UNAUTHORIZED, as
// RocketMQ 5.x answers both failed authentication and failed
// authorization.
func (p *Proxy) authorize(ctx context.Context, needs ...acl.Need) *rmqpb.Status {
	if p.cfg.ACL == nil {
		return nil
	}
	ci := infoFrom(ctx)
	if ci.credErr != nil {
		p.log.Warn("ACL: bad authorization metadata", "remote", ci.remote, "err", ci.credErr)
		return status(rmqpb.Code_UNAUTHORIZED, ci.credErr.Error())
	}
	if d := p.cfg.ACL.CheckV2(ci.cred, ci.remote.Addr(), needs...); d != nil {
		p.log.Warn("ACL: request refused", "remote", ci.remote, "accessKey", d.AccessKey, "reason", d.Reason)
		return status(rmqpb.Code_UNAUTHORIZED, d.Remark)
	}
	return nil
}

// refusal is the response of method carrying only st, for requests
// refused before their handler runs: every response of the service has a
// status field, which the clients read before anything else.
func refusal(method string, st *rmqpb.Status) (any, error) {
	name := protoreflect.Name(method[strings.LastIndexByte(method, '/')+1:])
	md := rmqpb.File_apache_rocketmq_v2_service_proto.Services().ByName("MessagingService").Methods().ByName(name)
	if md == nil {
		return nil, fmt.Errorf("proxy: unknown method %s", method)
	}
	mt, err := protoregistry.GlobalTypes.FindMessageByName(md.Output().FullName())
	if err != nil {
		return nil, err
	}
	m := mt.New()
	fd := m.Descriptor().Fields().ByName("status")
	m.Set(fd, protoreflect.ValueOfMessage(st.ProtoReflect()))
	return m.Interface(), nil
}

func topicNeed(topic string, perm acl.Perm) acl.Need { return acl.TopicNeed(topic, perm) }
