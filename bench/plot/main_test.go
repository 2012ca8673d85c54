package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/rocketstore/rocketstore/bench"
)

// TestRun draws a two-workload report and checks that a PNG comes out,
// and that a file that is not a report is refused.
func TestRun(t *testing.T) {
	dir := t.TempDir()
	rep := &bench.Report{Results: []bench.Result{
		{Group: "put", Backend: bench.Mmap, Body: 128, MsgsPerS: 250000, Bound: &bench.Bound{MsgsPerS: 900000}},
		{Group: "e2e", Backend: bench.Mmap, Body: 128, MsgsPerS: 120000,
			Latency: &bench.Latency{P50: 80, P99: 900, P999: 4000}},
	}}
	var js bytes.Buffer
	if err := rep.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	in, out := filepath.Join(dir, "bench.json"), filepath.Join(dir, "plot.png")
	if err := os.WriteFile(in, js.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := run(in, out); err != nil {
		t.Fatal(err)
	}
	png, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(png, []byte("\x89PNG\r\n\x1a\n")) {
		t.Errorf("%s is not a PNG (%d bytes)", out, len(png))
	}
	if err := os.WriteFile(in, []byte("not json"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := run(in, out); err == nil {
		t.Error("run accepted a file that is not a report")
	}
}
