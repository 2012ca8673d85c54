package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/rocketstore/rocketstore/bench"
)

// This file is the NATS side of `rocketstore bench --server`: nats-server
// with JetStream file storage runs in a child process (this program with
// -nats-serve), so that /proc gives the server's CPU alone, and the driver
// of package bench loads it over TCP loopback exactly as it loads
// rocketstore: producer i publishes to subject load.i with a reply inbox
// per message (what PublishAsync does), consumer i is a pull consumer
// (long polling) on load.i.

// natsServe runs nats-server on 127.0.0.1:port with its store in dir until
// stdin closes.
func natsServe(port int, dir string, syncAlways bool) error {
	opts := &server.Options{Host: "127.0.0.1", Port: port, JetStream: true, StoreDir: dir, NoLog: true, NoSigs: true,
		SyncAlways: syncAlways, JetStreamMaxMemory: 1 << 30, JetStreamMaxStore: 64 << 30}
	srv, err := server.NewServer(opts)
	if err != nil {
		return err
	}
	go srv.Start()
	if !srv.ReadyForConnections(10 * time.Second) {
		return fmt.Errorf("nats-server not ready")
	}
	_, _ = io.Copy(io.Discard, os.Stdin)
	srv.Shutdown()
	srv.WaitForShutdown()
	return nil
}

// serverLoad runs l against a nats-server child process and prints the
// bench.ServerResult as JSON.
func serverLoad(parent string, l bench.ServerLoad) error {
	r := bench.ServerResult{System: "nats", Body: l.Body, Conns: l.Conns, Window: l.Window, Flush: l.Flush, Consumers: l.Consumers}
	if err := serverLoadRun(parent, l, &r); err != nil && r.Err == "" {
		r.Err = err.Error()
	}
	return json.NewEncoder(os.Stdout).Encode(r)
}

func serverLoadRun(parent string, l bench.ServerLoad, r *bench.ServerResult) error {
	dir, err := os.MkdirTemp(parent, "rocketstore-bench-nats-server-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	cmd := exec.Command(exe, "-nats-serve", "-port", strconv.Itoa(port), "-dir", dir, "-sync="+strconv.FormatBool(l.Flush == "sync"))
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	defer func() { _ = stdin.Close(); _ = cmd.Wait() }()
	url := fmt.Sprintf("nats://127.0.0.1:%d", port)
	var nc *nats.Conn
	for deadline := time.Now().Add(15 * time.Second); ; {
		if nc, err = nats.Connect(url); err == nil || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err != nil {
		return err
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "LOAD", Subjects: []string{"load.>"},
		Storage: jetstream.FileStorage}); err != nil {
		return err
	}
	t := &natsTarget{url: url, pid: cmd.Process.Pid}
	*r = bench.RunServerLoad(t, "nats", l)
	r.Shape = "1 subject a stream, pull consumer"
	return nil
}

type natsTarget struct {
	url string
	pid int
}

func (t *natsTarget) ServerCPU() (time.Duration, error) { return bench.ProcessCPU(t.pid) }

func (t *natsTarget) Producer(i int) (bench.LoadProducer, error) {
	nc, err := nats.Connect(t.url)
	if err != nil {
		return nil, err
	}
	p := &natsProducer{nc: nc, subject: "load." + strconv.Itoa(i), inbox: nats.NewInbox(), pending: map[uint64]func(error){}}
	if _, err := nc.Subscribe(p.inbox+".*", p.ack); err != nil {
		nc.Close()
		return nil, err
	}
	return p, nil
}

// natsProducer publishes with a reply subject per message and matches the
// stream's acks by it, as jetstream's PublishAsync does.
type natsProducer struct {
	nc      *nats.Conn
	subject string
	inbox   string

	mu      sync.Mutex
	seq     uint64
	pending map[uint64]func(error)
	reply   []byte
}

func (p *natsProducer) Send(body []byte, done func(error)) error {
	p.mu.Lock()
	p.seq++
	id := p.seq
	p.pending[id] = done
	p.reply = strconv.AppendUint(append(append(p.reply[:0], p.inbox...), '.'), id, 10)
	reply := string(p.reply)
	p.mu.Unlock()
	// PublishRequest copies body into the connection's buffer.
	if err := p.nc.PublishRequest(p.subject, reply, body); err != nil {
		p.mu.Lock()
		delete(p.pending, id)
		p.mu.Unlock()
		return err
	}
	return nil
}

func (p *natsProducer) ack(m *nats.Msg) {
	i := strings.LastIndexByte(m.Subject, '.')
	id, err := strconv.ParseUint(m.Subject[i+1:], 10, 64)
	if err != nil {
		return
	}
	p.mu.Lock()
	done := p.pending[id]
	delete(p.pending, id)
	p.mu.Unlock()
	if done == nil {
		return
	}
	if strings.Contains(string(m.Data), `"error"`) {
		done(fmt.Errorf("nats: publish refused: %s", m.Data))
		return
	}
	done(nil)
}

func (p *natsProducer) Close() error {
	p.nc.Close()
	return nil
}

func (t *natsTarget) Consume(i int, fn func([]byte)) (func(), error) {
	nc, err := nats.Connect(t.url)
	if err != nil {
		return nil, err
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := js.CreateOrUpdateConsumer(ctx, "LOAD", jetstream.ConsumerConfig{Name: "c" + strconv.Itoa(i),
		FilterSubject: "load." + strconv.Itoa(i), AckPolicy: jetstream.AckNonePolicy, DeliverPolicy: jetstream.DeliverAllPolicy})
	if err != nil {
		nc.Close()
		return nil, err
	}
	cc, err := c.Consume(func(m jetstream.Msg) { fn(m.Data()) })
	if err != nil {
		nc.Close()
		return nil, err
	}
	return func() { cc.Stop(); nc.Close() }, nil
}
