package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"

	"github.com/rocketstore/rocketstore/backend/mmap"
	"github.com/rocketstore/rocketstore/verify"
)

// verifyOptions are the flags of `rocketstore verify`.
type verifyOptions struct {
	dir           string
	progress      bool
	maxViolations int
	json          bool
}

func newVerifyCmd() *cobra.Command {
	var o verifyOptions
	cmd := &cobra.Command{
		Use:   "verify --dir DIR [--json]",
		Short: "Check a store directory offline",
		Long: `verify checks a store directory without opening it as a store (nothing is
written): every CommitLog record valid and contiguous, BLANK records only at
file ends, every ConsumeQueue unit pointing at a matching record, no
dispatchable record missing from its queue, and a sane checkpoint.

Sizes print in binary units (64.0 MiB), offsets exactly; --json prints every
count exactly (bytes, offsets, milliseconds since the epoch) for a program.

Exit status: 0 clean, 1 violations found, 2 usage or I/O error (including a
store that a running process holds).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return faultsAsErrors(func() error { return runVerify(cmd.OutOrStdout(), cmd.ErrOrStderr(), o) })
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.dir, "dir", "", "store directory (required)")
	f.BoolVar(&o.progress, "progress", false, "show a progress bar even when stderr is not a terminal")
	f.IntVar(&o.maxViolations, "max-violations", 1000, "list at most this many violations (all are counted)")
	f.BoolVar(&o.json, "json", false, "print the report as JSON, every count exact")
	cmd.MarkFlagRequired("dir")
	return cmd
}

func runVerify(out, errOut io.Writer, o verifyOptions) error {
	if err := checkStoreDir(o.dir); err != nil {
		return fmt.Errorf("verify: %w", err)
	}
	fs, err := mmap.NewReadOnly(o.dir)
	if err != nil {
		return fmt.Errorf("verify %s: %w", o.dir, err)
	}
	opts := verify.Options{MaxViolations: o.maxViolations}
	var bar *progressbar.ProgressBar
	if o.progress || isTerminal(errOut) {
		opts.Progress = func(done, total int64) {
			if bar == nil {
				bar = newBar(errOut, total)
			}
			bar.Set64(done)
		}
	}
	rep, err := verify.Run(fs, opts)
	if bar != nil {
		bar.Finish()
		fmt.Fprintln(errOut)
	}
	if err != nil {
		return fmt.Errorf("verify %s: %w", o.dir, err)
	}
	if o.json {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		if err := enc.Encode(verifyJSONOf(o.dir, &rep)); err != nil {
			return err
		}
	} else {
		for _, v := range rep.Violations {
			fmt.Fprintln(out, v)
		}
		if n := rep.ViolationCount - len(rep.Violations); n > 0 {
			fmt.Fprintf(out, "... and %d more\n", n)
		}
		fmt.Fprintf(out, "store %s\n%s", o.dir, rep.Summary())
	}
	if !rep.OK() {
		return &exitCodeError{code: exitFailed}
	}
	return nil
}

// verifyJSON is verify --json: the report with every count exact.
type verifyJSON struct {
	Dir                string              `json:"dir"`
	OK                 bool                `json:"ok"`
	Unclean            bool                `json:"unclean"`
	CommitLogFiles     int                 `json:"commitLogFiles"`
	CommitLogFileSize  int64               `json:"commitLogFileSize"`
	MinOffset          int64               `json:"minOffset"`
	MaxOffset          int64               `json:"maxOffset"`
	Records            int64               `json:"records"`
	Dispatchable       int64               `json:"dispatchable"`
	Blanks             int                 `json:"blanks"`
	LastStoreTimestamp int64               `json:"lastStoreTimestamp"`
	Queues             int                 `json:"queues"`
	ConsumeQueueFiles  int                 `json:"consumeQueueFiles"`
	Units              int64               `json:"units"`
	Checkpoint         *verifyCheckpoint   `json:"checkpoint"`
	ViolationCount     int                 `json:"violationCount"`
	Violations         []verifyViolationJS `json:"violations"`
	Ignored            []string            `json:"ignored,omitempty"`
}

// verifyCheckpoint is the checkpoint's times, ms since the epoch (0:
// never set); nil when there is no checkpoint file.
type verifyCheckpoint struct {
	PhysicMsgTimestamp int64 `json:"physicMsgTimestamp"`
	LogicsMsgTimestamp int64 `json:"logicsMsgTimestamp"`
	IndexMsgTimestamp  int64 `json:"indexMsgTimestamp"`
}

// verifyViolationJS is one listed violation.
type verifyViolationJS struct {
	Kind   string `json:"kind"`
	File   string `json:"file"`
	Offset int64  `json:"offset"`
	Detail string `json:"detail"`
}

func verifyJSONOf(dir string, r *verify.Report) verifyJSON {
	v := verifyJSON{Dir: dir, OK: r.OK(), Unclean: r.Unclean, CommitLogFiles: r.CommitLogFiles,
		CommitLogFileSize: r.CommitLogFileSize, MinOffset: r.MinOffset, MaxOffset: r.MaxOffset,
		Records: r.Records, Dispatchable: r.Dispatchable, Blanks: r.Blanks, LastStoreTimestamp: r.LastStoreTimestamp,
		Queues: r.Queues, ConsumeQueueFiles: r.ConsumeQueueFiles, Units: r.Units,
		ViolationCount: r.ViolationCount, Violations: []verifyViolationJS{}, Ignored: r.Ignored}
	if cp := r.Checkpoint; cp.Present {
		v.Checkpoint = &verifyCheckpoint{cp.PhysicMsgTimestamp, cp.LogicsMsgTimestamp, cp.IndexMsgTimestamp}
	}
	for _, x := range r.Violations {
		v.Violations = append(v.Violations, verifyViolationJS{Kind: string(x.Kind), File: x.File, Offset: x.Offset, Detail: x.Detail})
	}
	return v
}

// checkStoreDir refuses a --dir that is not a directory with the reason,
// before the backend's own error (an mmap call's) can hide it.
func checkStoreDir(dir string) error {
	fi, err := os.Stat(dir)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return fmt.Errorf("store directory %s does not exist (--dir is the directory serve --dir wrote): %w", dir, err)
	case err != nil:
		return fmt.Errorf("store directory %s: %w", dir, err)
	case !fi.IsDir():
		return fmt.Errorf("store directory %s is a file, not a directory", dir)
	}
	return nil
}

func newBar(w io.Writer, total int64) *progressbar.ProgressBar {
	return progressbar.NewOptions64(total,
		progressbar.OptionSetWriter(w),
		progressbar.OptionSetDescription("verifying"),
		progressbar.OptionShowBytes(true),
		progressbar.OptionSetWidth(30),
		progressbar.OptionThrottle(100*time.Millisecond),
	)
}

// isTerminal reports whether w is a character device (a terminal), where a
// progress bar helps; in a pipe or a log it would only add noise.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}
