package main

import (
	"context"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/rocketstore/rocketstore/cluster"
)

// memberRow is one member as `admin cluster members` shows it: its role
// and Raft state as it reports them over its own Raft port, and how far
// it is behind the leader.
type memberRow struct {
	ID   string `json:"nodeId"`
	Addr string `json:"addr"`
	Role string `json:"role"`
	// Status is what the member reports (nil when unreachable).
	Status *cluster.Status `json:"status,omitempty"`
	// LagEntries and LagBytes are the Raft entries and CommitLog bytes
	// the member has not applied yet that the leader has.
	LagEntries int64 `json:"lagEntries"`
	LagBytes   int64 `json:"lagBytes"`
	// Health is "ok", "no contact with the leader" or "unreachable: ...".
	Health string `json:"health"`
}

// membersView is the --json document: the group as the asked node knows
// it, and each member's row.
type membersView struct {
	cluster.GroupInfo
	MemberStatus []memberRow `json:"memberStatus"`
}

// staleContact is how long a follower may go without hearing from the
// leader before it is reported unhealthy (several heartbeats).
const staleContact = 10 * time.Second

// memberRows asks every member of gi for its status.
func memberRows(ctx context.Context, d cluster.Dialer, gi cluster.GroupInfo) []memberRow {
	rows := make([]memberRow, len(gi.Members))
	var leader *cluster.Status
	for i, m := range gi.Members {
		r := memberRow{ID: m.ID, Addr: m.Addr, Role: "follower"}
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
			r.Status = info.Status
			r.Health = "ok"
			if r.Role == "leader" {
				leader = info.Status
			} else if c := info.Status.LastContactMs; c < 0 || time.Duration(c)*time.Millisecond > staleContact {
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
		}
	}
	return rows
}

// printMembers writes the members table.
func printMembers(tw *tabwriter.Writer, gi cluster.GroupInfo, rows []memberRow) {
	fmt.Fprintf(tw, "group %s (brokerName %s, CommitLog file size %d); asked %s, applied to %d; leader %s\n",
		gi.GroupID, gi.BrokerName, gi.CommitLogFileSize, gi.NodeID, gi.Applied, gi.Leader)
	fmt.Fprintln(tw, "#NodeId\t#Raft address\t#Role\t#Term\t#Applied index\t#Lag entries\t#Lag bytes\t#Last contact\t#Health")
	for _, r := range rows {
		term, applied, lagE, lagB, contact := "-", "-", "-", "-", "-"
		if s := r.Status; s != nil {
			term, applied = fmt.Sprint(s.Term), fmt.Sprint(s.AppliedIndex)
			lagE, lagB = fmt.Sprint(r.LagEntries), fmt.Sprint(r.LagBytes)
			switch {
			case r.Role == "leader":
				contact = "-"
			case s.LastContactMs < 0:
				contact = "never"
			default:
				contact = (time.Duration(s.LastContactMs) * time.Millisecond).String() + " ago"
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.ID, r.Addr, r.Role, term, applied, lagE, lagB, contact, r.Health)
	}
}
