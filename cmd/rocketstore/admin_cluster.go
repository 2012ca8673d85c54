package main

import (
	"context"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
)

// newAdminClusterCmd is `rocketstore admin cluster`: membership of a
// replicated broker group, over a member's Raft port (not the remoting
// protocol; -n is not used).
func newAdminClusterCmd(g *adminGlobals) *cobra.Command {
	var raftAddr string
	cmd := &cobra.Command{
		Use:   "cluster COMMAND --raft HOST:PORT",
		Short: "Membership and leadership of a replicated broker group: members, add-node, remove-node, transfer-leader",
		Long: `cluster changes and shows the membership of a replicated broker group (raft: in
the config). --raft is any member's Raft address (raft.bind): a follower points the
request to the leader. A node to add is started first with an empty --dir and
raft.join: true; it then asks the nodes in its raft.peers by itself, so add-node is
only needed when its peers list names none of the group's nodes.`,
	}
	cmd.PersistentFlags().StringVar(&raftAddr, "raft", "", "Raft address of a member of the group (required)")
	_ = cmd.MarkPersistentFlagRequired("raft")
	var tf peerTLSFlags
	tf.add(cmd.PersistentFlags())
	ctx := func() (context.Context, context.CancelFunc) {
		// A membership change commits a Raft configuration entry.
		return context.WithTimeout(context.Background(), max(g.timeout, 30*time.Second))
	}

	var id, addr string
	add := &cobra.Command{
		Use:   "add-node --raft HOST:PORT --id ID --addr HOST:PORT",
		Short: "Add a node (started empty with raft.join) as a voter",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, cancel := ctx()
			defer cancel()
			d, err := tf.dialer()
			if err != nil {
				return err
			}
			if err := d.AddNode(c, raftAddr, id, addr); err != nil {
				return failed(tf.hint(err))
			}
			fmt.Fprintf(cmd.OutOrStdout(), "added %s@%s\n", id, addr)
			return nil
		},
	}
	add.Flags().StringVar(&id, "id", "", "the node's raft.nodeId (required)")
	add.Flags().StringVar(&addr, "addr", "", "the node's Raft address, as the others dial it (required)")
	_ = add.MarkFlagRequired("id")
	_ = add.MarkFlagRequired("addr")

	var rid string
	remove := &cobra.Command{
		Use:   "remove-node --raft HOST:PORT --id ID",
		Short: "Remove a node from the group (stop it afterwards)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, cancel := ctx()
			defer cancel()
			d, err := tf.dialer()
			if err != nil {
				return err
			}
			if err := d.RemoveNode(c, raftAddr, rid); err != nil {
				return failed(tf.hint(err))
			}
			fmt.Fprintf(cmd.OutOrStdout(), "removed %s\n", rid)
			return nil
		},
	}
	remove.Flags().StringVar(&rid, "id", "", "the node's raft.nodeId (required)")
	_ = remove.MarkFlagRequired("id")

	members := &cobra.Command{
		Use:   "members --raft HOST:PORT",
		Short: "Show the group's identity, leader and members, each member's term, applied index, lag, last contact and health",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, cancel := ctx()
			defer cancel()
			d, err := tf.dialer()
			if err != nil {
				return err
			}
			gi, rows, err := d.Members(c, raftAddr)
			if err != nil {
				return failed(tf.hint(err))
			}
			return g.output(cmd.OutOrStdout(), membersView{GroupInfo: gi, MemberStatus: rows}, func(tw *tabwriter.Writer) {
				printMembers(tw, gi, rows)
			})
		},
	}
	var to string
	transfer := &cobra.Command{
		Use:   "transfer-leader --raft HOST:PORT [--to NODE_ID]",
		Short: "Hand the leadership to another member (before stopping the leader for maintenance)",
		Long: `transfer-leader has the leader bring a follower up to date and start an election at
once, so that sends pause for about one replication round instead of an election timeout
(sends refused meanwhile are answered as by a slave, and clients send them again). Without
--to, Raft picks the most up-to-date follower. It prints the leader before and after;
stop the old leader afterwards.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if cmd.Flags().Changed("to") && to == "" {
				return usageError("--to names a member's raft.nodeId; leave it out to let Raft pick")
			}
			c, cancel := ctx()
			defer cancel()
			d, err := tf.dialer()
			if err != nil {
				return err
			}
			tr, err := d.TransferLeader(c, raftAddr, to)
			if err != nil {
				return failed(tf.hint(err))
			}
			fmt.Fprintf(cmd.OutOrStdout(), "leader was %s@%s, is now %s@%s\n", tr.From, tr.FromAddr, tr.To, tr.ToAddr)
			if to != "" && tr.To != to {
				fmt.Fprintf(cmd.ErrOrStderr(), "warning: %s was asked to lead, %s won the election\n", to, tr.To)
			}
			return nil
		},
	}
	transfer.Flags().StringVar(&to, "to", "", "the member (raft.nodeId) to lead; left out: Raft's pick")
	cmd.AddCommand(add, remove, members, transfer)
	return cmd
}
