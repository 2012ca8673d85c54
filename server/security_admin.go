package server

import (
	"context"
	"encoding/json"
	"strings"

	"github.com/rocketstore/rocketstore/acl"
	"github.com/rocketstore/rocketstore/remoting"
)

// Response codes of the ACL admin requests (Java ResponseCode).
const (
	codeUpdateACLConfigFailed        int32 = 209
	codeDeleteACLConfigFailed        int32 = 210
	codeUpdateGlobalWhiteAddrsFailed int32 = 211
)

// registerACLAdmin routes the ACL admin codes 50–54 when ACL is on (with
// it off they stay unsupported, as before). The interceptor lets only
// admin accounts reach them.
func (s *Server) registerACLAdmin() {
	if s.sec == nil || s.sec.acl == nil {
		return
	}
	for code, h := range map[int32]handlerFunc{
		acl.CodeUpdateAndCreateACLConfig:     s.updateACLConfig,
		acl.CodeDeleteACLConfig:              s.deleteACLConfig,
		acl.CodeGetBrokerClusterACLInfo:      s.getACLInfo,
		acl.CodeUpdateGlobalWhiteAddrsConfig: s.updateGlobalWhiteAddrs,
		acl.CodeGetBrokerClusterACLConfig:    s.getACLConfig,
	} {
		s.mux.RegisterFunc(code, h)
	}
}

// splitList is RocketMQ's UtilAll.split on ",": nil for an absent field.
func splitList(req *remoting.RemotingCommand, name string) ([]string, bool) {
	v, ok := req.ExtFields[name]
	if !ok {
		return nil, false
	}
	var out []string
	for _, p := range strings.Split(v, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out, true
}

func optString(req *remoting.RemotingCommand, name string) *string {
	if v, ok := req.ExtFields[name]; ok {
		return &v
	}
	return nil
}

// updateACLConfig answers UPDATE_AND_CREATE_ACL_CONFIG (50)
// (CreateAccessConfigRequestHeader).
func (s *Server) updateACLConfig(_ context.Context, c *remoting.Conn, req *remoting.RemotingCommand) (*remoting.RemotingCommand, error) {
	f := req.Fields()
	u := acl.AccountUpdate{AccessKey: f.String("accessKey"), SecretKey: f.OptString("secretKey", ""),
		Admin: f.OptBool("admin", false), WhiteRemoteAddress: optString(req, "whiteRemoteAddress"),
		DefaultTopicPerm: optString(req, "defaultTopicPerm"), DefaultGroupPerm: optString(req, "defaultGroupPerm")}
	u.TopicPerms, u.SetTopicPerms = splitList(req, "topicPerms")
	u.GroupPerms, u.SetGroupPerms = splitList(req, "groupPerms")
	if err := f.Err(); err != nil {
		return badRequest(req, err)
	}
	if err := s.sec.acl.UpdateAccount(u); err != nil {
		s.log.Warn("acl: account update refused", "accessKey", u.AccessKey, "remote", peerString(c), "err", err)
		return req.NewResponse(codeUpdateACLConfigFailed, err.Error()), nil
	}
	s.log.Info("acl: account created or updated", "accessKey", u.AccessKey, "admin", u.Admin,
		"by", req.ExtFields[acl.FieldAccessKey], "remote", peerString(c))
	return req.NewResponse(remoting.CodeSuccess, ""), nil
}

// deleteACLConfig answers DELETE_ACL_CONFIG (51).
func (s *Server) deleteACLConfig(_ context.Context, c *remoting.Conn, req *remoting.RemotingCommand) (*remoting.RemotingCommand, error) {
	f := req.Fields()
	ak := f.String("accessKey")
	if err := f.Err(); err != nil {
		return badRequest(req, err)
	}
	if err := s.sec.acl.DeleteAccount(ak); err != nil {
		return req.NewResponse(codeDeleteACLConfigFailed, err.Error()), nil
	}
	s.log.Info("acl: account deleted", "accessKey", ak, "by", req.ExtFields[acl.FieldAccessKey], "remote", peerString(c))
	return req.NewResponse(remoting.CodeSuccess, ""), nil
}

// updateGlobalWhiteAddrs answers UPDATE_GLOBAL_WHITE_ADDRS_CONFIG (53).
// The request's aclFileFullPath is ignored: a client never chooses which
// file the broker writes.
func (s *Server) updateGlobalWhiteAddrs(_ context.Context, c *remoting.Conn, req *remoting.RemotingCommand) (*remoting.RemotingCommand, error) {
	addrs, ok := splitList(req, "globalWhiteAddrs")
	if !ok {
		return req.NewResponse(remoting.CodeSystemError, "missing header field globalWhiteAddrs"), nil
	}
	if err := s.sec.acl.UpdateGlobalWhiteAddrs(addrs); err != nil {
		return req.NewResponse(codeUpdateGlobalWhiteAddrsFailed, err.Error()), nil
	}
	s.log.Info("acl: global white addresses updated", "addresses", addrs, "by", req.ExtFields[acl.FieldAccessKey], "remote", peerString(c))
	return req.NewResponse(remoting.CodeSuccess, ""), nil
}

// getACLInfo answers GET_BROKER_CLUSTER_ACL_INFO (52): the rules' data
// version (GetBrokerAclConfigResponseHeader).
func (s *Server) getACLInfo(_ context.Context, _ *remoting.Conn, req *remoting.RemotingCommand) (*remoting.RemotingCommand, error) {
	_, dv, err := s.sec.acl.Snapshot()
	if err != nil {
		return req.NewResponse(remoting.CodeSystemError, err.Error()), nil
	}
	ver, _ := json.Marshal(dv)
	all, _ := json.Marshal(map[string]acl.DataVersion{s.sec.acl.File(): dv})
	resp := req.NewResponse(remoting.CodeSuccess, "")
	resp.SetExt("version", string(ver))
	resp.SetExt("allAclFileVersion", string(all))
	resp.SetExt("brokerName", s.cfg.BrokerName)
	resp.SetExt("brokerAddr", s.BrokerAddr())
	resp.SetExt("clusterName", s.cfg.ClusterName)
	return resp, nil
}

// plainAccessConfig is RocketMQ's PlainAccessConfig in
// GetBrokerClusterAclConfigResponseBody.
type plainAccessConfig struct {
	AccessKey          string   `json:"accessKey"`
	SecretKey          string   `json:"secretKey"`
	WhiteRemoteAddress string   `json:"whiteRemoteAddress"`
	Admin              bool     `json:"admin"`
	DefaultTopicPerm   string   `json:"defaultTopicPerm"`
	DefaultGroupPerm   string   `json:"defaultGroupPerm"`
	TopicPerms         []string `json:"topicPerms"`
	GroupPerms         []string `json:"groupPerms"`
}

// getACLConfig answers GET_BROKER_CLUSTER_ACL_CONFIG (54) with the rules;
// unlike RocketMQ, secret keys are masked.
func (s *Server) getACLConfig(_ context.Context, _ *remoting.Conn, req *remoting.RemotingCommand) (*remoting.RemotingCommand, error) {
	f, _, err := s.sec.acl.Snapshot()
	if err != nil {
		return req.NewResponse(remoting.CodeSystemError, err.Error()), nil
	}
	body := struct {
		GlobalWhiteAddrs   []string            `json:"globalWhiteAddrs"`
		PlainAccessConfigs []plainAccessConfig `json:"plainAccessConfigs"`
	}{GlobalWhiteAddrs: f.GlobalWhiteRemoteAddresses}
	for _, a := range f.Accounts {
		body.PlainAccessConfigs = append(body.PlainAccessConfigs, plainAccessConfig{
			AccessKey: string(a.AccessKey), SecretKey: string(a.SecretKey), WhiteRemoteAddress: string(a.WhiteRemoteAddress),
			Admin: a.Admin, DefaultTopicPerm: a.DefaultTopicPerm, DefaultGroupPerm: a.DefaultGroupPerm,
			TopicPerms: a.TopicPerms, GroupPerms: a.GroupPerms})
	}
	return jsonBody(req, body)
}
