package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/rocketstore/rocketstore/internal/testport"
	"github.com/rocketstore/rocketstore/remoting"
)

// freePort returns a loopback port reserved for this test process, outside
// the ephemeral range, so that a restarted serve finds it free.
func freePort(t testing.TB) int {
	t.Helper()
	return testport.Port(t, "127.0.0.1")
}

// startServe starts `rocketstore serve` with args and stops it (SIGTERM)
// at the end of the test.
func startServe(t *testing.T, args ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(binary(t), append([]string{"serve", "--log-level", "warn"}, args...)...)
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stopServe(t, cmd) })
	return cmd
}

func stopServe(t *testing.T, cmd *exec.Cmd) {
	if cmd.ProcessState != nil {
		return
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("serve %v: %v", cmd.Args, err)
		}
	case <-time.After(20 * time.Second):
		_ = cmd.Process.Kill()
		t.Errorf("serve %v did not stop", cmd.Args)
	}
}

// routeGroups returns the broker groups (name → master address) of
// topic's route at the name server ns, nil when it has none yet.
func routeGroups(t *testing.T, ns, topic string) map[string]string {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	cl, err := remoting.Dial(ctx, ns, remoting.ClientOptions{})
	if err != nil {
		return nil
	}
	defer cl.Close()
	req := remoting.NewRequest(remoting.CodeGetRouteInfoByTopic, nil)
	req.SetExt("topic", topic)
	resp, err := cl.Invoke(ctx, req)
	if err != nil || resp.Code != remoting.CodeSuccess {
		return nil
	}
	var rd struct {
		BrokerDatas []struct {
			BrokerName  string            `json:"brokerName"`
			BrokerAddrs map[string]string `json:"brokerAddrs"`
		} `json:"brokerDatas"`
	}
	if err := json.Unmarshal(resp.Body, &rd); err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, bd := range rd.BrokerDatas {
		out[bd.BrokerName] = bd.BrokerAddrs["0"]
	}
	return out
}

func waitRoute(t *testing.T, ns, topic string, want map[string]string) {
	t.Helper()
	var got map[string]string
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if got = routeGroups(t, ns, topic); fmt.Sprint(got) == fmt.Sprint(want) {
			return
		}
	}
	t.Fatalf("route of %s: %v, want %v", topic, got, want)
}

// TestServeRoles: a `serve --role namesrv` process and two `serve --role
// broker` processes whose YAML names it in namesrvAddr; the name server
// routes TBW102 to both groups, and a broker that shuts down leaves the
// route at once.
func TestServeRoles(t *testing.T) {
	dir := t.TempDir()
	ns := "127.0.0.1:" + strconv.Itoa(freePort(t))
	startServe(t, "--role", "namesrv", "--listen", ns)
	brokers := map[string]*exec.Cmd{}
	want := map[string]string{}
	for _, name := range []string{"broker-a", "broker-b"} {
		port := freePort(t)
		cfg := filepath.Join(dir, name+".yaml")
		yaml := fmt.Sprintf("brokerName: %s\nbrokerIP1: 127.0.0.1\nlistenPort: %d\nnamesrvAddr: %s;\nhaListenPort: %d\n", name, port, ns, port+1)
		if err := os.WriteFile(cfg, []byte(yaml), 0o644); err != nil {
			t.Fatal(err)
		}
		brokers[name] = startServe(t, "--role", "broker", "--dir", filepath.Join(dir, name), "--config", cfg)
		want[name] = "127.0.0.1:" + strconv.Itoa(port)
	}
	waitRoute(t, ns, "TBW102", want)
	stopServe(t, brokers["broker-b"])
	delete(want, "broker-b")
	if got := routeGroups(t, ns, "TBW102"); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("after broker-b's shutdown: %v", got)
	}
}
