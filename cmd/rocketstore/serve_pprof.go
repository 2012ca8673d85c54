package main

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"time"
)

// pprofListen opens --pprof's listener. A bare port (":6060", "6060")
// binds 127.0.0.1, and any address that is not loopback is refused: the
// profiles show the server's code, command line and heap, and a CPU
// profile costs CPU while it runs, so they are for whoever is on the host.
func pprofListen(addr string) (net.Listener, error) {
	ln, err := net.Listen("tcp", loopbackDefault(addr))
	if err != nil {
		return nil, fmt.Errorf("--pprof %q: %w", addr, err)
	}
	if !isLoopback(ln.Addr()) {
		_ = ln.Close()
		return nil, fmt.Errorf("--pprof %q: listens on %s, not a loopback address; profiles are served on loopback only", addr, ln.Addr())
	}
	return ln, nil
}

// pprofHandler serves net/http/pprof's handlers under /debug/pprof/ on a
// mux of its own, so that nothing else of the process is reachable there.
func pprofHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index) // also the named profiles: heap, goroutine, allocs, ...
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	return mux
}

// startPprof serves the Go profiler on addr (--pprof) until the returned
// stop is called. A CPU profile is taken with
// `go tool pprof http://ADDR/debug/pprof/profile?seconds=10`.
func startPprof(addr string, log *slog.Logger) (stop func(), err error) {
	ln, err := pprofListen(addr)
	if err != nil {
		return nil, err
	}
	// No write timeout: /debug/pprof/profile and /trace answer after the
	// seconds they are asked to sample.
	hs := &http.Server{Handler: pprofHandler(), ReadHeaderTimeout: 10 * time.Second}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := hs.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("pprof server", "err", err)
		}
	}()
	log.Info("pprof", "url", "http://"+ln.Addr().String()+"/debug/pprof/")
	return func() {
		_ = hs.Close() // a profile being taken is cut short: the process is stopping
		<-done
	}, nil
}
