package namesrv

import (
	"context"
	"fmt"

	"github.com/rocketstore/rocketstore/remoting"
)

// registerBroker answers REGISTER_BROKER (103): header brokerName,
// brokerAddr, clusterName, haServerAddr, brokerId, compressed, bodyCrc32;
// body RegisterBrokerBody. The answer's ext haServerAddr and masterAddr
// tell a slave its master.
func (h *Handlers) registerBroker(_ context.Context, c *remoting.Conn, req *remoting.RemotingCommand) (*remoting.RemotingCommand, error) {
	f := req.Fields()
	r := Registration{Name: f.String("brokerName"), Addr: f.String("brokerAddr"), Cluster: f.String("clusterName"),
		HAServerAddr: f.String("haServerAddr"), ID: f.Int64("brokerId"), Conn: c}
	compressed := f.OptBool("compressed", false)
	crc := f.OptInt32("bodyCrc32", 0)
	if err := f.Err(); err != nil {
		return h.host.Refuse(req, c, err)
	}
	switch {
	case r.ID < 0:
		return h.host.Refuse(req, c, fmt.Errorf("%w: brokerId %d < 0", remoting.ErrBadField, r.ID))
	case crc != 0 && crc != BodyCRC32(req.Body):
		return h.host.Refuse(req, c, fmt.Errorf("crc32 not match: header bodyCrc32 %d, body %d", crc, BodyCRC32(req.Body)))
	}
	topics, dv, err := h.host.ParseRegisterBody(req.Body, compressed && len(req.Body) > 0)
	if err != nil {
		return h.host.Refuse(req, c, err)
	}
	r.Topics, r.DataVersion = topics, dv
	master, ha := h.routes.Register(r)
	h.log.Debug("broker registered", "cluster", r.Cluster, "brokerName", r.Name, "brokerId", r.ID,
		"brokerAddr", r.Addr, "topics", len(r.Topics), "remote", c.RemoteAddrString())
	resp := req.NewResponse(remoting.CodeSuccess, "")
	resp.Body = h.orderTopicConfig()
	if master != "" {
		resp.SetExt("masterAddr", master)
	}
	if ha != "" {
		resp.SetExt("haServerAddr", ha)
	}
	return resp, nil
}

// unregisterBroker answers UNREGISTER_BROKER (104): header brokerName,
// brokerAddr, clusterName, brokerId.
func (h *Handlers) unregisterBroker(_ context.Context, c *remoting.Conn, req *remoting.RemotingCommand) (*remoting.RemotingCommand, error) {
	f := req.Fields()
	name, addr, cluster, id := f.String("brokerName"), f.String("brokerAddr"), f.String("clusterName"), f.Int64("brokerId")
	if err := f.Err(); err != nil {
		return h.host.Refuse(req, c, err)
	}
	h.routes.Unregister(cluster, name, addr, id)
	h.log.Info("broker unregistered", "cluster", cluster, "brokerName", name, "brokerId", id, "brokerAddr", addr)
	return req.NewResponse(remoting.CodeSuccess, ""), nil
}
