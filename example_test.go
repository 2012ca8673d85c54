package rocketstore_test

import (
	"context"
	"fmt"
	"log"
	"os"

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
	got, err := s.GetMessage("billing", "orders", 0, 0, 32, filter)
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

// ExampleOpenFS runs a store in memory: nothing touches the disk, and data
// reaches the afero file system only when it is synced.
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
