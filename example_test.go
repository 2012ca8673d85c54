package rocketstore_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"sync"

	"github.com/rocketstore/rocketstore"
)

// Example stores a message in a directory and consumes it with a tag
// filter.
func Example() {
	dir, err := os.MkdirTemp("", "rocketstore-example-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	// Zero Config fields mean RocketMQ's defaults (1 GiB CommitLog files,
	// ASYNC_FLUSH, ...); a small file size keeps the example light.
	s, err := rocketstore.Open(dir, rocketstore.Config{CommitLogFileSize: 1 << 20})
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	res, err := s.Put(ctx, &rocketstore.Message{Topic: "orders", QueueID: 0, Body: []byte("order 42 created"),
		Properties: map[string]string{"TAGS": "created", "KEYS": "order-42"}})
	if err != nil {
		log.Fatal(err)
	}
	// GetMessage sees a message once the dispatcher has indexed it in
	// its ConsumeQueue.
	if err := s.WaitDispatched(ctx, res.WroteOffset+int64(res.WroteBytes)); err != nil {
		log.Fatal(err)
	}
	filter, err := rocketstore.NewTagFilter("created || paid")
	if err != nil {
		log.Fatal(err)
	}
	got, err := s.GetMessage("orders", 0, 0, 32, rocketstore.WithFilter(filter))
	if err != nil {
		log.Fatal(err)
	}
	for _, v := range got.Messages { // views into the mapped files
		m, err := rocketstore.DecodeMessage(v.Record)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(got.Status, v.QueueOffset, m.Tags(), m.Keys(), string(m.Body))
	}
	fmt.Println("next offset:", got.NextBeginOffset)
	got.Release() // the views are valid until Release
	if err := s.Close(); err != nil {
		log.Fatal(err)
	}
	// Output:
	// FOUND 0 created order-42 order 42 created
	// next offset: 1
}

// ExampleOpenFS runs a store in memory (backend/memfs): nothing touches the
// disk.
func ExampleOpenFS() {
	s, err := rocketstore.OpenFS(nil, rocketstore.Config{CommitLogFileSize: 64 << 10})
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()
	res, err := s.Put(context.Background(), &rocketstore.Message{Topic: "t", Body: []byte("hi")})
	if err != nil {
		log.Fatal(err)
	}
	m, err := s.LookMessageByMsgID(res.MsgID())
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%s at commitlog offset %d: %s\n", m.Topic, m.CommitLogOffset, m.Body)
	// Output:
	// t at commitlog offset 0: hi
}

// keyIndex is a Dispatcher that indexes messages by their KEYS property.
type keyIndex struct {
	mu      sync.Mutex
	offsets map[string]int64
}

func (x *keyIndex) Dispatch(req *rocketstore.DispatchRequest) error {
	if !req.Dispatchable() || len(req.Keys) == 0 {
		return nil
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	x.offsets[string(req.Keys)] = req.CommitLogOffset // idempotent: replays write the same value
	return nil
}

// ExampleWithDispatcher builds an index of one's own from every stored
// record, as the store dispatches it.
func ExampleWithDispatcher() {
	idx := &keyIndex{offsets: map[string]int64{}}
	s, err := rocketstore.OpenFS(nil, rocketstore.Config{CommitLogFileSize: 64 << 10}, rocketstore.WithDispatcher(idx))
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	for _, key := range []string{"order-1", "order-2"} {
		res, err := s.Put(ctx, &rocketstore.Message{Topic: "orders", Body: []byte(key),
			Properties: map[string]string{"KEYS": key}})
		if err != nil {
			log.Fatal(err)
		}
		if err := s.WaitDispatched(ctx, res.WroteOffset+int64(res.WroteBytes)); err != nil {
			log.Fatal(err)
		}
	}
	idx.mu.Lock()
	off := idx.offsets["order-2"]
	idx.mu.Unlock()
	m, err := s.LookMessageByOffset(off)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("order-2 at commitlog offset %d: %s\n", off, m.Body)
	// Output:
	// order-2 at commitlog offset 116: order-2
}
