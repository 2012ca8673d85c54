// Package consoletest starts a server node with the console in front of
// it, the setup that the console's tests and its browser test (the nested
// module console/browsertest, which may import it because it lives below
// console/) share.
package consoletest

import (
	"io"
	"log/slog"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/rocketstore/rocketstore/admin"
	"github.com/rocketstore/rocketstore/broker"
	"github.com/rocketstore/rocketstore/console"
	"github.com/rocketstore/rocketstore/engine"
	"github.com/rocketstore/rocketstore/server"
)

// Quiet is a logger that drops everything.
var Quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// Config says what Start starts. The zero value is a node without
// security and a console with default settings.
type Config struct {
	// Console configures the console; Start sets NameServers and Logger,
	// and ACL to the node's validator when Security is set.
	Console console.Config
	// Security, when set, secures the node (ACL, TLS).
	Security *server.Security
	// CommitLogFileSize is the node's CommitLog file size (1 MiB).
	CommitLogFileSize int64
}

// Env is a running node and console; Start stops them when the test ends.
type Env struct {
	// Node is the rocketstore server (name server and broker).
	Node *server.Node
	// Console is the console, served by HTTP.
	Console *console.Console
	// HTTP serves the console; HTTP.URL is its address.
	HTTP *httptest.Server
	// Admin is an admin client of Node's name server, to set data up.
	Admin *admin.Client
}

// Start starts a node on a temporary directory and the console in front
// of it; a failure fails t.
func Start(t testing.TB, cfg Config) *Env {
	t.Helper()
	if cfg.CommitLogFileSize == 0 {
		cfg.CommitLogFileSize = 1 << 20
	}
	sc := server.Config{Logger: Quiet}
	if cfg.Security != nil {
		sc.Security = *cfg.Security
	}
	n, err := server.StartNode(server.NodeConfig{Dir: t.TempDir(), Listen: "127.0.0.1:0",
		Broker: broker.Config{Store: engine.Config{CommitLogFileSize: cfg.CommitLogFileSize, ConsumeQueueUnits: 1000, Logger: Quiet}},
		Server: sc})
	if err != nil {
		t.Fatal(err)
	}
	cc := cfg.Console
	cc.NameServers = []string{n.Addr}
	if cfg.Security != nil {
		cc.ACL = n.Server.ACLValidator()
	}
	cc.Logger = Quiet
	c, err := console.New(cc)
	if err != nil {
		_ = n.Close()
		t.Fatal(err)
	}
	hs := httptest.NewServer(c)
	adm, err := admin.NewClient([]string{n.Addr}, 5*time.Second)
	if err != nil {
		hs.Close()
		_ = c.Close()
		_ = n.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		hs.Close()
		_ = c.Close()
		_ = adm.Close()
		_ = n.Close()
	})
	return &Env{Node: n, Console: c, HTTP: hs, Admin: adm}
}
