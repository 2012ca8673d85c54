package namesrv

import (
	"context"
	"fmt"
	"maps"
	"sync"

	"github.com/rocketstore/rocketstore/admin"
	"github.com/rocketstore/rocketstore/remoting"
)

// kvTable is the name server's KV config (KVConfigManager): namespace →
// key → value. It lives in memory; RocketMQ's name server persists it to
// kvConfig.json, which rocketstore does not (nothing of ours reads it).
type kvTable struct {
	mu    sync.Mutex
	table map[string]map[string]string
}

func newKVTable() *kvTable { return &kvTable{table: map[string]map[string]string{}} }

// Bounds on the KV table, so that a client cannot grow it without end.
const (
	maxKVEntries   = 10000
	maxKVValueSize = 64 << 10
)

func (t *kvTable) size() int {
	n := 0
	for _, ns := range t.table {
		n += len(ns)
	}
	return n
}

// putKVConfig answers PUT_KV_CONFIG (100): header namespace, key, value.
func (h *Handlers) putKVConfig(_ context.Context, _ *remoting.Conn, req *remoting.RemotingCommand) (*remoting.RemotingCommand, error) {
	f := req.Fields()
	ns, key, value := f.String("namespace"), f.String("key"), f.String("value")
	if err := f.Err(); err != nil {
		return badRequest(req, err)
	}
	if len(ns)+len(key)+len(value) > maxKVValueSize {
		return badRequest(req, fmt.Errorf("KV config %s/%s: %d bytes, at most %d", ns, key, len(ns)+len(key)+len(value), maxKVValueSize))
	}
	h.kv.mu.Lock()
	defer h.kv.mu.Unlock()
	if _, exists := h.kv.table[ns][key]; !exists && h.kv.size() >= maxKVEntries {
		return req.NewResponse(remoting.CodeSystemError, fmt.Sprintf("the KV config holds %d entries, the most it takes", maxKVEntries)), nil
	}
	if h.kv.table[ns] == nil {
		h.kv.table[ns] = map[string]string{}
	}
	h.kv.table[ns][key] = value
	return req.NewResponse(remoting.CodeSuccess, ""), nil
}

// getKVConfig answers GET_KV_CONFIG (101): ext value, or QUERY_NOT_FOUND.
func (h *Handlers) getKVConfig(_ context.Context, _ *remoting.Conn, req *remoting.RemotingCommand) (*remoting.RemotingCommand, error) {
	f := req.Fields()
	ns, key := f.String("namespace"), f.String("key")
	if err := f.Err(); err != nil {
		return badRequest(req, err)
	}
	h.kv.mu.Lock()
	v, ok := h.kv.table[ns][key]
	h.kv.mu.Unlock()
	if !ok {
		return req.NewResponse(remoting.CodeQueryNotFound, "No config item, Namespace: "+ns+" Key: "+key), nil
	}
	resp := req.NewResponse(remoting.CodeSuccess, "")
	resp.SetExt("value", v)
	return resp, nil
}

// deleteKVConfig answers DELETE_KV_CONFIG (102): header namespace, key.
func (h *Handlers) deleteKVConfig(_ context.Context, _ *remoting.Conn, req *remoting.RemotingCommand) (*remoting.RemotingCommand, error) {
	f := req.Fields()
	ns, key := f.String("namespace"), f.String("key")
	if err := f.Err(); err != nil {
		return badRequest(req, err)
	}
	h.kv.mu.Lock()
	delete(h.kv.table[ns], key)
	if len(h.kv.table[ns]) == 0 {
		delete(h.kv.table, ns)
	}
	h.kv.mu.Unlock()
	return req.NewResponse(remoting.CodeSuccess, ""), nil
}

// getKVListByNamespace answers GET_KVLIST_BY_NAMESPACE (219): KVTable of
// the namespace, or QUERY_NOT_FOUND.
func (h *Handlers) getKVListByNamespace(_ context.Context, _ *remoting.Conn, req *remoting.RemotingCommand) (*remoting.RemotingCommand, error) {
	f := req.Fields()
	ns := f.String("namespace")
	if err := f.Err(); err != nil {
		return badRequest(req, err)
	}
	h.kv.mu.Lock()
	t, ok := h.kv.table[ns]
	t = maps.Clone(t)
	h.kv.mu.Unlock()
	if !ok {
		return req.NewResponse(remoting.CodeQueryNotFound, "No config item, Namespace: "+ns), nil
	}
	return adminBody(req, admin.KVTable{Table: t})
}

// orderTopicConfig returns the ORDER_TOPIC_CONFIG namespace of the KV
// config as a KVTable, the body of a REGISTER_BROKER answer; nil when the
// namespace is empty (the Java name server answers a null body then).
func (h *Handlers) orderTopicConfig() []byte {
	h.kv.mu.Lock()
	t := maps.Clone(h.kv.table["ORDER_TOPIC_CONFIG"])
	h.kv.mu.Unlock()
	if len(t) == 0 {
		return nil
	}
	b, err := admin.Marshal(admin.KVTable{Table: t})
	if err != nil {
		return nil
	}
	return b
}
