package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"strings"

	"github.com/rocketstore/rocketstore/console"
	"github.com/rocketstore/rocketstore/server"
)

// serveExtra is a service `serve` runs beside the node; it returns a
// function that stops it.
type serveExtra func(ctx context.Context, n *server.Node, nc server.NodeConfig, log *slog.Logger) (stop func(), err error)

// consoleAddr resolves --console: a bare ":port" or "port" listens on
// loopback, the default; another host is taken as given.
func consoleAddr(flag string) (string, error) {
	if !strings.Contains(flag, ":") {
		flag = ":" + flag
	}
	host, port, err := net.SplitHostPort(flag)
	if err != nil {
		return "", fmt.Errorf("--console %q: want host:port, e.g. 127.0.0.1:8080: %w", flag, err)
	}
	if host == "" {
		host = "127.0.0.1"
	}
	return net.JoinHostPort(host, port), nil
}

// withConsole serves the web console on addr.
func withConsole(flag string) serveExtra {
	return func(ctx context.Context, n *server.Node, nc server.NodeConfig, log *slog.Logger) (func(), error) {
		namesrv := nc.Server.NamesrvAddr
		if len(namesrv) == 0 {
			namesrv = []string{n.Addr}
		}
		// With aclEnable the console requires an admin account of the
		// server's ACL and signs its requests with it.
		return startConsole(ctx, flag, console.Config{NameServers: namesrv, Logger: log, ACL: n.Server.ACLValidator()}, log)
	}
}

// startConsole serves the console of cfg on --console's address until
// the returned stop is called.
func startConsole(ctx context.Context, flag string, cfg console.Config, log *slog.Logger) (func(), error) {
	addr, err := consoleAddr(flag)
	if err != nil {
		return nil, err
	}
	c, err := console.New(cfg)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		_ = c.Close()
		return nil, fmt.Errorf("--console: %w", err)
	}
	if ap, err := netip.ParseAddrPort(ln.Addr().String()); err == nil && !ap.Addr().IsLoopback() {
		log.Warn("the console listens beyond loopback; anyone who can reach it can change topics and offsets", "addr", ln.Addr().String())
	}
	cctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := c.Serve(cctx, ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("console", "err", err)
		}
	}()
	log.Info("console", "url", "http://"+ln.Addr().String()+"/")
	return func() {
		cancel()
		<-done
		_ = c.Close()
	}, nil
}
