package server_test

import (
	"os/exec"
	"strings"
	"testing"
)

// deps lists the packages pkg imports, directly or not (go list -deps).
func deps(t *testing.T, pkg string) []string {
	t.Helper()
	out, err := exec.Command("go", "list", "-deps", pkg).CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps %s: %v\n%s", pkg, err, out)
	}
	return strings.Fields(string(out))
}

// TestLayers: the broker front does not link the Prometheus client,
// protobuf or gRPC (metrics enter as the Metrics interface, the 5.x
// endpoint is package proxy), and the admin API and the name server's
// handlers import neither the server package nor each other.
func TestLayers(t *testing.T) {
	const mod = "github.com/rocketstore/rocketstore/"
	for _, d := range deps(t, mod+"server") {
		for _, banned := range []string{"prometheus", "protobuf", "grpc"} {
			if strings.Contains(d, banned) {
				t.Errorf("package server depends on %s", d)
			}
		}
	}
	for pkg, banned := range map[string][]string{
		"server/adminapi": {"server", "server/namesrv"},
		"server/namesrv":  {"server", "server/adminapi"},
	} {
		for _, d := range deps(t, mod+pkg) {
			for _, b := range banned {
				if d == mod+b {
					t.Errorf("package %s depends on %s", pkg, b)
				}
			}
		}
	}
}
