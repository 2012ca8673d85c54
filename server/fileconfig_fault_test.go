package server_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/rocketstore/rocketstore/engine"
	"github.com/rocketstore/rocketstore/server"
)

// TestFileConfigRejectsWhatCannotWork: settings that cannot work are
// refused with a message that says why, before anything is resolved or opened.
func TestFileConfigRejectsWhatCannotWork(t *testing.T) {
	for _, tc := range []struct{ yaml, want string }{
		{"brokerIP1: broker.example.com\nlistenPort: 10911\n", "must be an IP literal"},
		{"brokerIP1: localhost\n", "must be an IP literal"},
		{"maxMessageSize: 0\n", "maxMessageSize 0 must be positive"},
		{"maxMessageSize: -1\n", "must be positive"},
		{"recoverUndecidableDamage: maybe\n", "not refuse, truncate or skip"},
	} {
		fc, err := server.ParseFileConfig([]byte(tc.yaml))
		if err != nil {
			t.Fatalf("%q: parse: %v", tc.yaml, err)
		}
		err = fc.Apply(&server.NodeConfig{})
		if !errors.Is(err, server.ErrConfig) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: err = %v, want ErrConfig saying %q", tc.yaml, err, tc.want)
		}
	}
	for v, want := range map[string]engine.DamagePolicy{"refuse": engine.DamageRefuse, "truncate": engine.DamageTruncate, "skip": engine.DamageSkip} {
		fc, _ := server.ParseFileConfig([]byte("recoverUndecidableDamage: " + v + "\nbrokerIP1: 192.0.2.10\n"))
		var nc server.NodeConfig
		if err := fc.Apply(&nc); err != nil || nc.Broker.Store.OnUndecidableDamage != want {
			t.Errorf("recoverUndecidableDamage %s: %v, policy %v", v, err, nc.Broker.Store.OnUndecidableDamage)
		}
	}
}
