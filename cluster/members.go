package cluster

import (
	"context"
	"time"
)

// MemberStatus is one member of a group as an operator sees it: its role,
// its Raft state as it reports it over its own Raft port, and how far it
// is behind the leader.
type MemberStatus struct {
	ID   string `json:"nodeId"`
	Addr string `json:"addr"`
	// Role is "leader" or "follower", as the asked node knows the leader.
	Role string `json:"role"`
	// Status is what the member reports (nil when unreachable, or from a
	// version that reports none).
	Status *Status `json:"status,omitempty"`
	// LagEntries and LagBytes are the Raft entries and CommitLog bytes
	// the leader has applied and the member has not (0 without a
	// reachable leader).
	LagEntries int64 `json:"lagEntries"`
	LagBytes   int64 `json:"lagBytes"`
	// LeaderView is the leader's view of the member (its confirmed
	// entries, lag and last answer; nil for the leader, or without a
	// reachable leader).
	LeaderView *FollowerStatus `json:"leaderView,omitempty"`
	// Health is "ok", "no contact with the leader" (StaleContact without
	// a heartbeat) or "unreachable: " and the reason.
	Health string `json:"health"`
}

// StaleContact is how long a follower may go without hearing from the
// leader before Members calls it unhealthy (several heartbeats).
const StaleContact = 10 * time.Second

// Members asks the node at raftAddr for its group, then every member for
// its status, one after the other (a group has 3 or 5).
func (d Dialer) Members(ctx context.Context, raftAddr string) (GroupInfo, []MemberStatus, error) {
	gi, err := d.QueryGroup(ctx, raftAddr)
	if err != nil {
		return gi, nil, err
	}
	rows := make([]MemberStatus, len(gi.Members))
	var leader *Status
	for i, m := range gi.Members {
		r := MemberStatus{ID: m.ID, Addr: m.Addr, Role: "follower"}
		if m.Addr == gi.Leader {
			r.Role = "leader"
		}
		info, err := d.QueryGroup(ctx, m.Addr)
		switch {
		case err != nil:
			r.Health = "unreachable: " + err.Error()
		case info.Status == nil:
			r.Health = "ok (reports no status: an older version)"
		default:
			r.Status, r.Health = info.Status, "ok"
			if r.Role == "leader" {
				leader = info.Status
			} else if c := info.Status.LastContactMs; c < 0 || time.Duration(c)*time.Millisecond > StaleContact {
				r.Health = "no contact with the leader"
			}
		}
		rows[i] = r
	}
	if leader != nil {
		for i := range rows {
			if s := rows[i].Status; s != nil {
				rows[i].LagEntries = max(0, int64(leader.AppliedIndex)-int64(s.AppliedIndex))
				rows[i].LagBytes = max(0, leader.AppliedOffset-s.AppliedOffset)
			}
			for j := range leader.Followers {
				if leader.Followers[j].ID == rows[i].ID {
					rows[i].LeaderView = &leader.Followers[j]
				}
			}
		}
	}
	return gi, rows, nil
}
