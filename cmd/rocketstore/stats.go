package main

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/rocketstore/rocketstore/broker/offset"
	"github.com/rocketstore/rocketstore/broker/timer"
	"github.com/rocketstore/rocketstore/engine"
	"github.com/rocketstore/rocketstore/internal/units"
)

func newStatsCmd() *cobra.Command {
	var dir string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "stats --dir DIR [--json]",
		Short: "Show topics, queues with min/max offsets, and consumer groups with their lag",
		Long: `stats opens the store read-only (nothing on disk is changed) and prints the
CommitLog's extent, every queue with its min and max offsets, and every
consumer group's committed offset and lag from config/consumerOffset.json.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var st *storeStats
			err := faultsAsErrors(func() (err error) {
				st, err = collectStats(dir, cmd.ErrOrStderr())
				return err
			})
			if err != nil {
				return err
			}
			if asJSON {
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				return enc.Encode(st)
			}
			return printStats(cmd.OutOrStdout(), st)
		},
	}
	cmd.Flags().StringVar(&dir, "dir", "", "store directory (required)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	cmd.MarkFlagRequired("dir")
	return cmd
}

// storeStats is what stats reports.
type storeStats struct {
	Dir             string        `json:"dir"`
	CommitLogMin    int64         `json:"commitLogMinOffset"`
	CommitLogMax    int64         `json:"commitLogMaxOffset"`
	CommitLogFile   int64         `json:"commitLogFileSize"`
	AbnormalExit    bool          `json:"abnormalExit"`
	RecoveryDropped int           `json:"recoveryDroppedBytes"`
	Queues          []queueStats  `json:"queues"`
	Consumers       []consumerLag `json:"consumers"`
	// TimersPending counts the pending timer messages of each topic, as
	// of the timer service's last checkpoint.
	TimersPending map[string]int64 `json:"timersPending,omitempty"`
}

type queueStats struct {
	Topic   string `json:"topic"`
	QueueID int32  `json:"queueId"`
	Min     int64  `json:"minOffset"`
	Max     int64  `json:"maxOffset"`
}

type consumerLag struct {
	Group   string `json:"group"`
	Topic   string `json:"topic"`
	QueueID int32  `json:"queueId"`
	Offset  int64  `json:"offset"`
	Max     int64  `json:"maxOffset"`
	Lag     int64  `json:"lag"`
}

func collectStats(dir string, errOut io.Writer) (_ *storeStats, err error) {
	s, fs, err := openReadOnlyFS(dir, errOut)
	if err != nil {
		return nil, err
	}
	defer closeInto(&err, s)
	rep := s.Recovery()
	st := &storeStats{Dir: dir, CommitLogMin: s.CommitLog().MinOffset(), CommitLogMax: s.CommitLog().MaxOffset(),
		CommitLogFile: s.Config().CommitLogFileSize, AbnormalExit: rep.Abnormal, RecoveryDropped: rep.DroppedBytes}
	for topic, ids := range s.Topics() {
		for _, id := range ids {
			st.Queues = append(st.Queues, queueStats{topic, id, s.MinOffsetInQueue(topic, id), s.MaxOffsetInQueue(topic, id)})
		}
	}
	slices.SortFunc(st.Queues, func(a, b queueStats) int {
		return cmpTopicQueue(a.Topic, a.QueueID, b.Topic, b.QueueID)
	})
	offsets, err := offset.Load(fs, "", slog.New(slog.NewTextHandler(errOut, nil)))
	if err != nil {
		return nil, fmt.Errorf("consumer offsets: %w", err)
	}
	st.Consumers = consumerLags(s, offsets.Table())
	if st.TimersPending, err = timer.PendingOnDisk(fs); err != nil {
		return nil, fmt.Errorf("timer checkpoint: %w", err)
	}
	return st, nil
}

// consumerLags turns the "topic@group" offset table into rows with lag.
func consumerLags(s *engine.Store, table map[string]map[int32]int64) []consumerLag {
	var out []consumerLag
	for key, queues := range table {
		topic, group, ok := strings.Cut(key, "@")
		if !ok {
			continue
		}
		for id, off := range queues {
			maxOff := s.MaxOffsetInQueue(topic, id)
			out = append(out, consumerLag{Group: group, Topic: topic, QueueID: id, Offset: off, Max: maxOff,
				Lag: max(0, maxOff-off)})
		}
	}
	slices.SortFunc(out, func(a, b consumerLag) int {
		if c := strings.Compare(a.Group, b.Group); c != 0 {
			return c
		}
		return cmpTopicQueue(a.Topic, a.QueueID, b.Topic, b.QueueID)
	})
	return out
}

func cmpTopicQueue(t1 string, q1 int32, t2 string, q2 int32) int {
	if c := strings.Compare(t1, t2); c != 0 {
		return c
	}
	return int(q1) - int(q2)
}

func printStats(out io.Writer, st *storeStats) error {
	fmt.Fprintf(out, "store %s\n  commitlog offsets [%d, %d) (%s), file size %s\n", st.Dir, st.CommitLogMin, st.CommitLogMax,
		units.Size(st.CommitLogMax-st.CommitLogMin), units.Size(st.CommitLogFile))
	if st.AbnormalExit {
		fmt.Fprintf(out, "  last exit was not clean (recovered in memory; dropped %s of non-zero bytes)\n", units.Size(int64(st.RecoveryDropped)))
	}
	tw := tabwriter.NewWriter(out, 2, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "\nTOPIC\tQUEUE\tMIN\tMAX\n")
	for _, q := range st.Queues {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\n", q.Topic, q.QueueID, q.Min, q.Max)
	}
	fmt.Fprintf(tw, "\nGROUP\tTOPIC\tQUEUE\tOFFSET\tMAX\tLAG\n")
	for _, c := range st.Consumers {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%d\n", c.Group, c.Topic, c.QueueID, c.Offset, c.Max, c.Lag)
	}
	if len(st.TimersPending) > 0 {
		fmt.Fprintf(tw, "\nTIMER TOPIC\tPENDING\n")
		for _, t := range slices.Sorted(maps.Keys(st.TimersPending)) {
			fmt.Fprintf(tw, "%s\t%d\n", t, st.TimersPending[t])
		}
	}
	return tw.Flush()
}
