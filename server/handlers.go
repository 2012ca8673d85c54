package server

import (
	"context"
	"encoding/json"
	"net"
	"net/netip"

	"github.com/rocketstore/rocketstore/broker"
	"github.com/rocketstore/rocketstore/remoting"
	"github.com/rocketstore/rocketstore/server/adminapi"
)

// handlerFunc is the signature of every request handler.
type handlerFunc = func(ctx context.Context, c *remoting.Conn, req *remoting.RemotingCommand) (*remoting.RemotingCommand, error)

// register routes every supported request code to its handler; the mux
// answers all others REQUEST_CODE_NOT_SUPPORTED.
func (s *Server) register() {
	for code, h := range map[int32]handlerFunc{
		// producer
		remoting.CodeSendMessage:      s.sendMessage,
		remoting.CodeSendMessageV2:    s.sendMessage,
		remoting.CodeSendBatchMessage: s.sendMessage,
		// consumer
		remoting.CodePullMessage:             s.pullMessage,
		remoting.CodeQueryConsumerOffset:     s.queryConsumerOffset,
		remoting.CodeUpdateConsumerOffset:    s.updateConsumerOffset,
		remoting.CodeSearchOffsetByTimestamp: s.searchOffsetByTimestamp,
		remoting.CodeGetMaxOffset:            s.getMaxOffset,
		remoting.CodeGetMinOffset:            s.getMinOffset,
		remoting.CodeHeartBeat:               s.heartbeat,
		remoting.CodeUnregisterClient:        s.unregisterClient,
		remoting.CodeConsumerSendMsgBack:     s.consumerSendMsgBack,
		remoting.CodeGetConsumerListByGroup:  s.getConsumerList,
		remoting.CodeLockBatchMQ:             s.lockBatchMQ,
		remoting.CodeUnlockBatchMQ:           s.unlockBatchMQ,
		// tools
		remoting.CodeQueryMessage:         s.queryMessage,
		remoting.CodeViewMessageByID:      s.viewMessageByID,
		remoting.CodeUpdateAndCreateTopic: s.updateAndCreateTopic,
		remoting.CodeDeleteTopicInBroker:  s.deleteTopicInBroker,
		codeGetEarliestMsgStoretime:       s.getEarliestMsgStoretime,
		// clients
		codeCheckClientConfig:       s.checkClientConfig,
		codeSendReplyMessage:        s.sendReplyMessage,
		codeSendReplyMessageV2:      s.sendReplyMessage,
		remoting.CodeEndTransaction: s.endTransaction,
		remoting.CodeRecallMessage:  s.recallMessage,
	} {
		if !s.plays(code) {
			continue
		}
		s.mux.RegisterFunc(code, h)
	}
	// The name server's codes (package namesrv), in the name-server role.
	if s.ns != nil {
		for code, h := range s.ns.ByCode() {
			s.mux.RegisterFunc(code, h)
		}
	}
	// The broker's admin codes (package adminapi).
	for code, h := range s.admin.Handlers() {
		if s.plays(code) {
			s.mux.RegisterFunc(code, h)
		}
	}
	for code, h := range adminapi.Unsupported() {
		s.mux.RegisterFunc(code, h)
	}
}

// badRequest answers a request whose header or body cannot be used, as
// the Java broker answers a RemotingCommandException: SYSTEM_ERROR with the
// reason.
func badRequest(req *remoting.RemotingCommand, err error) (*remoting.RemotingCommand, error) {
	return req.NewResponse(remoting.CodeSystemError, err.Error()), nil
}

// reply answers with a broker response code and remark.
func reply(req *remoting.RemotingCommand, code broker.ResponseCode, remark string) *remoting.RemotingCommand {
	return req.NewResponse(int32(code), remark)
}

// jsonBody answers SUCCESS with v as the JSON body.
func jsonBody(req *remoting.RemotingCommand, v any) (*remoting.RemotingCommand, error) {
	body, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	resp := req.NewResponse(remoting.CodeSuccess, "")
	resp.Body = body
	return resp, nil
}

// peer returns the connection's remote address as an AddrPort (the zero
// value for non-TCP connections).
func peer(c *remoting.Conn) netip.AddrPort {
	if a, ok := c.RemoteAddr().(*net.TCPAddr); ok {
		ap := a.AddrPort()
		return netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())
	}
	return netip.AddrPort{}
}

// peerString returns the connection's remote address for logs and offsets.
func peerString(c *remoting.Conn) string { return c.RemoteAddrString() }
