package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/rocketstore/rocketstore/cluster"
)

type repairOptions struct {
	dir, from string
	dryRun    bool
	timeout   time.Duration
	tls       peerTLSFlags
}

// newRepairCmd is `rocketstore repair`: a stopped replica's store
// repaired from a healthy replica of its group.
func newRepairCmd() *cobra.Command {
	var o repairOptions
	cmd := &cobra.Command{
		Use:   "repair --dir DIR --from HOST:PORT|DIR",
		Short: "Repair a stopped replica's CommitLog from a healthy replica of its group",
		Long: `repair rewrites the damaged records (flipped bits, torn or zeroed sectors, damaged
headers) of a stopped replica's CommitLog in --dir from a healthy replica of the same
replicated broker group, so that --dir is byte-identical to it over the committed range.
--from is a running replica's Raft address (raft.bind; it serves what it has applied)
or a stopped replica's store directory (with raft.logStore records, only up to what it
knows committed: its own newest snapshot, or the furthest record its ConsumeQueues
index; the tail past that may be uncommitted Raft entries). Every record of the source is checked against
its own CRC and compared with --dir; a differing one is written over --dir's. A source
of another group (raft/group.json) or with another CommitLog file size is refused, and
so is a --dir that a running process holds. Only --dir's own extent is repaired: a
replica that is behind is caught up by the group when it starts. Run verify afterwards.

Exit status: 0 repaired or nothing to repair, 1 refused or not repairable (e.g. the
source's record is damaged too), 2 usage or I/O error.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runRepair(cmd.OutOrStdout(), o) },
	}
	f := cmd.Flags()
	f.StringVar(&o.dir, "dir", "", "the stopped replica's store directory (required)")
	f.StringVar(&o.from, "from", "", "a healthy replica: its Raft address host:port, or its store directory (required)")
	f.BoolVar(&o.dryRun, "dry-run", false, "report the records that differ; write nothing")
	f.DurationVar(&o.timeout, "timeout", time.Hour, "give up after this long")
	o.tls.add(f)
	_ = cmd.MarkFlagRequired("dir")
	_ = cmd.MarkFlagRequired("from")
	return cmd
}

func runRepair(out io.Writer, o repairOptions) (err error) {
	ctx, cancel := context.WithTimeout(context.Background(), o.timeout)
	defer cancel()
	var src cluster.RepairSource
	if fi, err := os.Stat(o.from); err == nil && fi.IsDir() {
		if src, err = cluster.DirSource(o.from); err != nil {
			return failed(fmt.Errorf("repair: source %s: %w", o.from, err))
		}
	} else {
		d, err := o.tls.dialer()
		if err != nil {
			return err
		}
		src = d.PeerSource(o.from)
	}
	defer closeInto(&err, src)
	rep, err := cluster.RepairStore(ctx, o.dir, src, o.dryRun)
	verb := "repaired"
	if o.dryRun {
		verb = "differing (dry run, not written)"
	}
	for _, off := range rep.Repaired {
		fmt.Fprintf(out, "record at CommitLog offset %d %s\n", off, verb)
	}
	if rep.GroupID != "" {
		fmt.Fprintf(out, "store %s, group %s: %d records compared over [%d, %d), %d %s; data ends at %d\n",
			o.dir, rep.GroupID, rep.Records, rep.From, rep.To, len(rep.Repaired), verb, rep.TargetEnd)
	}
	if err != nil {
		if errors.Is(err, cluster.ErrNotSameGroup) || errors.Is(err, cluster.ErrNoRepair) {
			return failed(fmt.Errorf("repair %s: %w", o.dir, err))
		}
		return fmt.Errorf("repair %s: %w", o.dir, o.tls.hint(err))
	}
	return nil
}
