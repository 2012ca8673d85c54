package console

import (
	"context"
	"net/http"

	"github.com/rocketstore/rocketstore/admin"
	"github.com/rocketstore/rocketstore/cluster"
)

// Replication is the answer of /api/replication: the replicated broker
// group this console's node belongs to, and each member's state (see
// cluster.Dialer.Members). Enabled is false for a node without a group.
type Replication struct {
	Enabled    bool                   `json:"enabled"`
	GroupID    string                 `json:"groupId,omitempty"`
	BrokerName string                 `json:"brokerName,omitempty"`
	Leader     string                 `json:"leader,omitempty"`
	Members    []cluster.MemberStatus `json:"members,omitempty"`
}

// replication answers /api/replication from Config.Replication.
func (c *Console) replication(r *http.Request, _ *admin.Client) (any, error) {
	if c.cfg.Replication == nil {
		return Replication{}, nil
	}
	ctx, cancel := context.WithTimeout(r.Context(), c.cfg.Timeout)
	defer cancel()
	gi, rows, err := c.cfg.Replication(ctx)
	if err != nil {
		return nil, err
	}
	return Replication{Enabled: true, GroupID: gi.GroupID, BrokerName: gi.BrokerName, Leader: gi.Leader, Members: rows}, nil
}
