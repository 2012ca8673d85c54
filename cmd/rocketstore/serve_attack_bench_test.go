package main

import (
	"bufio"
	be "encoding/binary"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// serveRSSBound is the peak RSS the README promises for `serve` under the
// half-frame attack below (64 connections each sending half of a 15 MiB
// frame), in bytes.
const serveRSSBound = 225 << 20 // 0.22 GiB

// BenchmarkServeHalfFrameRSS starts `rocketstore serve` with its defaults,
// lets 20 and then 64 connections each announce a 15 MiB frame, send half
// of it and stall for 7 s (longer than the 5 s receive-budget wait), and
// reports the child's peak RSS (VmHWM in /proc) in GiB. It fails when the
// peak exceeds the bound the README documents.
//
//	go test -run '^$' -bench ServeHalfFrameRSS -benchtime 1x ./cmd/rocketstore
func BenchmarkServeHalfFrameRSS(b *testing.B) {
	for _, attackers := range []int{20, 64} {
		b.Run(fmt.Sprintf("attackers=%d", attackers), func(b *testing.B) {
			for range b.N {
				peak := serveUnderHalfFrames(b, attackers)
				b.ReportMetric(float64(peak)/(1<<30), "peak-RSS-GiB")
				if peak > serveRSSBound {
					b.Fatalf("peak RSS %.2f GiB, the README promises at most %.2f", float64(peak)/(1<<30), float64(serveRSSBound)/(1<<30))
				}
			}
		})
	}
}

// serveUnderHalfFrames runs one attack on a new serve process and returns
// its peak RSS in bytes.
func serveUnderHalfFrames(b *testing.B, attackers int) int64 {
	const announced = 15 << 20
	addr := "127.0.0.1:" + strconv.Itoa(freePort(b))
	cmd := exec.Command(binary(b), "serve", "--log-level", "error", "--dir", b.TempDir(), "--listen", addr)
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	defer func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	}()
	// serve is a real external process: poll until it listens.
	deadline := time.Now().Add(30 * time.Second)
	for {
		nc, err := net.Dial("tcp", addr)
		if err == nil {
			_ = nc.Close()
			break
		}
		if time.Now().After(deadline) {
			b.Fatalf("serve did not listen on %s: %v", addr, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	hdr := be.BigEndian.AppendUint32(nil, announced)
	hdr = be.BigEndian.AppendUint32(hdr, 0)
	half := append(hdr, make([]byte, announced/2)...)
	for range attackers {
		nc, err := net.Dial("tcp", addr)
		if err != nil {
			b.Fatal(err)
		}
		defer nc.Close()
		go func() { _, _ = nc.Write(half) }()
	}
	// The attack's length: the serve process holds the half frames this
	// long before its peak RSS is read (the benchmark's load shape).
	time.Sleep(7 * time.Second)
	peak, err := peakRSS(cmd.Process.Pid)
	if err != nil {
		b.Fatal(err)
	}
	return peak
}

// peakRSS reads a process's VmHWM (peak resident set) from /proc, in bytes.
func peakRSS(pid int) (int64, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err != nil {
				return 0, fmt.Errorf("/proc/%d/status: VmHWM %q: %w", pid, v, err)
			}
			return kb << 10, nil
		}
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	return 0, fmt.Errorf("/proc/%d/status has no VmHWM line", pid)
}
