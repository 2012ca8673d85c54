package e2e

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// LazyFS (github.com/dsrhaslab/lazyfs, MIT; what Jepsen uses) is a FUSE
// file system with its own page cache: file data reaches the directory
// underneath (root) only on fsync, fdatasync or msync, so that killing
// the daemon loses exactly what a power cut loses. The power-cut tests
// run `rocketstore serve` with its store on a LazyFS mount.
//
// ROCKETSTORE_LAZYFS names a LazyFS build (the OUTDIR of
// e2e/lazyfs/build.sh: bin/lazyfs and lib/); .ci/run builds one and
// sets it. Without it the power-cut tests skip, saying so; with it, a
// mount that fails fails the test.

// errLazyFSDead reports a command sent to a daemon that has exited.
var errLazyFSDead = errors.New("lazyfs has exited")

// lazyFSEnv is the variable that names a LazyFS build.
const lazyFSEnv = "ROCKETSTORE_LAZYFS"

// requireLazyFS returns the LazyFS binary of ROCKETSTORE_LAZYFS, or skips
// the test, loudly, when the variable is unset (the e2e step of .ci/run
// leaves it unset; the power-cut step sets it). A build that is missing,
// or no FUSE on the machine, fails the test under CI (CI=true: CI has
// FUSE) and skips it elsewhere.
func requireLazyFS(t *testing.T) string {
	t.Helper()
	dir := os.Getenv(lazyFSEnv)
	if dir == "" {
		t.Skipf("POWER-CUT TEST NOT RUN: %s is unset (build LazyFS with e2e/lazyfs/build.sh DIR and set %s=DIR; .ci/run's power-cut step does)", lazyFSEnv, lazyFSEnv)
	}
	fail := t.Skipf
	if os.Getenv("CI") == "true" {
		fail = t.Fatalf
	}
	bin := filepath.Join(dir, "bin", "lazyfs")
	if _, err := os.Stat(bin); err != nil {
		fail("POWER-CUT TEST NOT RUN: %s=%s: %v", lazyFSEnv, dir, err)
	}
	if _, err := os.Stat("/dev/fuse"); err != nil {
		fail("POWER-CUT TEST NOT RUN: no FUSE on this machine: %v", err)
	}
	if _, err := exec.LookPath("stdbuf"); err != nil {
		fail("POWER-CUT TEST NOT RUN: stdbuf (coreutils) not found: %v", err)
	}
	return bin
}

// lazyFS is one LazyFS mount: mnt shows root through LazyFS's cache.
type lazyFS struct {
	bin             string
	mnt, root, fifo string
	cfg, log        string
	logOps          bool // log every operation (ROCKETSTORE_LAZYFS_LOGOPS)
	cmd             *exec.Cmd
	exited          chan struct{}
}

// newLazyFS prepares a mount of root on mnt under dir; mount starts it.
func newLazyFS(bin, dir string) *lazyFS {
	return &lazyFS{bin: bin, mnt: filepath.Join(dir, "mnt"), root: filepath.Join(dir, "root"),
		fifo: filepath.Join(dir, "faults.fifo"), cfg: filepath.Join(dir, "lazyfs.toml"), log: filepath.Join(dir, "lazyfs.log")}
}

// mount starts the daemon and waits until the mount is live. The cache is
// 256 MiB, far more than a test writes between two syncs; eviction is off
// (unsynced data stays unsynced until a sync or a cut).
func (l *lazyFS) mount() error {
	for _, d := range []string{l.mnt, l.root} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	cfg := fmt.Sprintf(`[faults]
fifo_path=%q
[cache]
apply_eviction=false
[cache.simple]
custom_size="256mb"
blocks_per_page=1
[filesystem]
log_all_operations=%v
logfile=%q
`, l.fifo, l.logOps, l.log)
	if err := os.WriteFile(l.cfg, []byte(cfg), 0o644); err != nil {
		return err
	}
	out, err := os.OpenFile(l.log+".stdout", os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	// The -o options are comma-joined: LazyFS's main() keeps only ten
	// arguments. subdir makes the mount show root.
	// stdbuf: the fault worker answers on standard output, which
	// would otherwise sit in a buffer until the daemon exits.
	cmd := exec.Command("stdbuf", "-oL", "-eL", l.bin, l.mnt, "--config-path", l.cfg, "-o", "allow_other,modules=subdir,subdir="+l.root, "-f")
	cmd.Env = append(os.Environ(), "LD_LIBRARY_PATH="+filepath.Join(filepath.Dir(l.bin), "..", "lib"))
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		out.Close()
		return fmt.Errorf("start lazyfs: %w", err)
	}
	l.cmd, l.exited = cmd, make(chan struct{})
	go func() { _ = cmd.Wait(); out.Close(); close(l.exited) }()
	// Polling: the daemon says nothing when the mount is live.
	for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		select {
		case <-l.exited:
			b, _ := os.ReadFile(l.log + ".stdout")
			return fmt.Errorf("lazyfs exited before mounting %s: %s", l.mnt, tail(string(b), 20))
		default:
		}
		if l.mounted() {
			return nil
		}
	}
	_ = l.cut()
	return fmt.Errorf("lazyfs did not mount %s within 15 s", l.mnt)
}

// mounted reports whether mnt is a FUSE mount point.
func (l *lazyFS) mounted() bool {
	b, err := os.ReadFile("/proc/mounts")
	return err == nil && strings.Contains(string(b), " "+l.mnt+" fuse")
}

// dead reports whether the daemon has exited (a torn-write fault makes
// it kill itself once it has persisted the parts it was told to).
func (l *lazyFS) dead() bool {
	select {
	case <-l.exited:
		return true
	default:
		return false
	}
}

// cut is the power cut: SIGKILL the daemon, which loses its cache (every
// write not yet synced) and fails every later operation on the mount,
// then detach the dead mount. Data the kernel still held for the mount
// (dirty pages of a live mapping) dies with it.
func (l *lazyFS) cut() error {
	if l.cmd == nil {
		return nil
	}
	_ = l.cmd.Process.Kill()
	<-l.exited
	l.cmd = nil
	if err := syscall.Unmount(l.mnt, syscall.MNT_DETACH); err != nil && !errors.Is(err, syscall.EINVAL) {
		return fmt.Errorf("detach %s: %w", l.mnt, err)
	}
	return nil
}

// command sends a fault command ("lazyfs::torn-op::…") to the daemon and
// waits until the daemon has taken it. The daemon reads the FIFO in
// chunks and parses a chunk as one command, so commands sent back to back
// would merge; it also reports a command with an attribute it does not
// know as configured while dropping it, so the wait checks the echo.
func (l *lazyFS) command(c string) error {
	ok := "configured successfully '" + c + "'"
	before := strings.Count(l.logged(), ok)
	if l.dead() {
		return errLazyFSDead
	}
	// Non-blocking: a daemon that died has no reader on the FIFO.
	f, err := os.OpenFile(l.fifo, os.O_WRONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return err
	}
	_, err = f.WriteString(c + "\n")
	if err = errors.Join(err, f.Close()); err != nil {
		return err
	}
	// Polling: the daemon answers only in its log.
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if l.dead() {
			return errLazyFSDead // an earlier fault fired meanwhile
		}
		logged := l.logged()
		if strings.Count(logged, ok) > before {
			return nil
		}
		if strings.Contains(logged, "INVALID") {
			return fmt.Errorf("lazyfs refused %q: %s", c, tail(logged, 5))
		}
	}
	return fmt.Errorf("lazyfs did not take %q within 10 s", c)
}

// logged returns the daemon's log (its log file and its standard output,
// where the fault worker writes).
func (l *lazyFS) logged() string {
	a, _ := os.ReadFile(l.log)
	b, _ := os.ReadFile(l.log + ".stdout")
	return string(a) + string(b)
}

// tail returns the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
