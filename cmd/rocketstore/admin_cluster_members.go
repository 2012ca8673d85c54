package main

import (
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/rocketstore/rocketstore/cluster"
	"github.com/rocketstore/rocketstore/internal/units"
)

// membersView is the --json document of `admin cluster members`: the
// group as the asked node knows it, and each member's row.
type membersView struct {
	cluster.GroupInfo
	MemberStatus []cluster.MemberStatus `json:"memberStatus"`
}

// printMembers writes the members table.
func printMembers(tw *tabwriter.Writer, gi cluster.GroupInfo, rows []cluster.MemberStatus) {
	fmt.Fprintf(tw, "group %s (brokerName %s, CommitLog file size %s); asked %s, applied to %d; leader %s\n",
		gi.GroupID, gi.BrokerName, units.Size(gi.CommitLogFileSize), gi.NodeID, gi.Applied, gi.Leader)
	fmt.Fprintln(tw, "#NodeId\t#Raft address\t#Role\t#Term\t#Elections started/won\t#Applied index\t#Confirmed to leader"+
		"\t#Lag entries\t#Lag bytes\t#Last contact\t#Health")
	for _, r := range rows {
		term, elections, applied, confirmed, lagE, lagB, contact := "-", "-", "-", "-", "-", "-", "-"
		if v := r.LeaderView; v != nil {
			confirmed = fmt.Sprint(v.MatchIndex)
		}
		if s := r.Status; s != nil {
			term, applied = fmt.Sprint(s.Term), fmt.Sprint(s.AppliedIndex)
			elections = fmt.Sprintf("%d/%d", s.ElectionsStarted, s.ElectionsWon)
			lagE, lagB = fmt.Sprint(r.LagEntries), fmt.Sprint(r.LagBytes)
			switch {
			case r.Role == "leader":
			case s.LastContactMs < 0:
				contact = "never"
			default:
				contact = (time.Duration(s.LastContactMs) * time.Millisecond).String() + " ago"
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.ID, r.Addr, r.Role, term, elections, applied, confirmed,
			lagE, lagB, contact, r.Health)
	}
}
