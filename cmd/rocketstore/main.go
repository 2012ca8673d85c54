// Command rocketstore runs and inspects rocketstore message stores.
//
//	rocketstore demo   [--dir DIR]   write, consume, reopen: a tour of the store
//	rocketstore verify --dir DIR     check a store directory offline
//	rocketstore read   --dir DIR ... print a queue's messages
//	rocketstore stats  --dir DIR     queues, offsets and consumer lag
//	rocketstore bench  [--quick]     throughput and latency against machine limits
//	rocketstore serve  [--dir DIR]   a RocketMQ 4.x name server and broker over the store
//	rocketstore admin  COMMAND ...   mqadmin's commands over the remoting protocol
//
// Each subcommand lives in its own file (demo.go, verify.go, read.go,
// stats.go, bench.go, serve.go) and registers in newRootCmd.
// Exit codes: 0 success, 1 the check failed (a demo mismatch, verify
// violations), 2 usage or I/O errors.
package main

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"
)

// Exit codes.
const (
	exitOK     = 0
	exitFailed = 1 // the command ran and found something wrong
	exitError  = 2 // bad usage, or the command could not run
)

// exitCodeError makes a command exit with a given code. A nil err means
// the command already printed why.
type exitCodeError struct {
	code int
	err  error
}

func (e *exitCodeError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit status %d", e.code)
	}
	return e.err.Error()
}

func (e *exitCodeError) Unwrap() error { return e.err }

// failed returns an error that exits with exitFailed.
func failed(err error) error { return &exitCodeError{code: exitFailed, err: err} }

// closeInto closes c and, when that fails, adds its error to *err: a
// deferred Close of something the command wrote must not fail silently.
func closeInto(err *error, c io.Closer) {
	if cerr := c.Close(); cerr != nil {
		*err = errors.Join(*err, cerr)
	}
}

func main() {
	os.Exit(execute(os.Args[1:], os.Stdout, os.Stderr))
}

// execute runs the command line args and returns the exit code.
func execute(args []string, stdout, stderr io.Writer) int {
	root := newRootCmd()
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	err := root.Execute()
	if err == nil {
		return exitOK
	}
	var ec *exitCodeError
	if errors.As(err, &ec) {
		if ec.err != nil {
			fmt.Fprintln(stderr, "rocketstore:", ec.err)
		}
		return ec.code
	}
	// Anything else is cobra's usage error or an I/O error from a command.
	fmt.Fprintln(stderr, "rocketstore:", err)
	return exitError
}

func newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:   "rocketstore",
		Short: "A Go implementation of the Apache RocketMQ 4.x broker message store",
		Long: `rocketstore stores messages in Apache RocketMQ 4.x's on-disk format: a CommitLog,
one ConsumeQueue per topic queue, and a checkpoint, with RocketMQ's recovery and
getMessage semantics.`,
		// Errors are printed once, by execute, with the right exit code.
		SilenceErrors: true,
		SilenceUsage:  true,
	}
	root.AddCommand(newDemoCmd(), newVerifyCmd(), newReadCmd(), newStatsCmd(), newBenchCmd(), newServeCmd(), newAdminCmd(), newRepairCmd(),
		newClusterDemoCmd())
	return root
}
