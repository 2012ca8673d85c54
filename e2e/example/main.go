// Command example produces ten messages to a rocketstore server with the
// official RocketMQ Go client and consumes them with a push consumer. It
// counts only the messages of its own run (a run id in a user property):
// the group may find messages an earlier run left unconsumed.
//
//	go run ./cmd/rocketstore serve            # in the repository root
//	cd e2e && go run ./example -namesrv 127.0.0.1:9876
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"
	"github.com/apache/rocketmq-client-go/v2/rlog"
)

// runProperty is the user property that carries the run id.
const runProperty = "EXAMPLE_RUN"

func main() {
	namesrv := flag.String("namesrv", "127.0.0.1:9876", "name server address (an IP literal)")
	topic := flag.String("topic", "ExampleTopic", "topic")
	count := flag.Int("n", 10, "messages to send")
	flag.Parse()
	rlog.SetLogLevel("error")
	resolver := primitive.NewPassthroughResolver([]string{*namesrv})

	p, err := producer.NewDefaultProducer(producer.WithNsResolver(resolver),
		producer.WithGroupName("ExampleProducer"), producer.WithRetry(2))
	if err != nil {
		log.Fatal(err)
	}
	if err := p.Start(); err != nil {
		log.Fatal(err)
	}
	defer func() {
		if err := p.Shutdown(); err != nil {
			log.Print("producer shutdown: ", err)
		}
	}()
	run := strconv.FormatInt(time.Now().UnixNano(), 36)
	fmt.Printf("run %s\n", run)
	for i := range *count {
		msg := primitive.NewMessage(*topic, []byte(fmt.Sprintf("hello %d", i)))
		msg.WithTag("greeting")
		msg.WithProperty(runProperty, run)
		msg.WithKeys([]string{fmt.Sprintf("order-%d", i)})
		res, err := p.SendSync(context.Background(), msg)
		if err != nil {
			log.Fatalf("send: %v", err)
		}
		fmt.Printf("sent %s to queue %d at offset %d\n", res.MsgID, res.MessageQueue.QueueId, res.QueueOffset)
	}

	var (
		mu   sync.Mutex
		seen = map[string]bool{} // keys of this run's messages received
	)
	done := make(chan struct{})
	c, err := consumer.NewPushConsumer(consumer.WithNsResolver(resolver),
		consumer.WithGroupName("ExampleConsumer"),
		consumer.WithConsumeFromWhere(consumer.ConsumeFromFirstOffset))
	if err != nil {
		log.Fatal(err)
	}
	err = c.Subscribe(*topic, consumer.MessageSelector{Type: consumer.TAG, Expression: "greeting"},
		func(_ context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
			mu.Lock()
			defer mu.Unlock()
			for _, m := range msgs {
				if m.GetProperty(runProperty) != run {
					fmt.Printf("skipped %q of an earlier run (queue %d, offset %d)\n", m.Body, m.Queue.QueueId, m.QueueOffset)
					continue
				}
				fmt.Printf("received %q (tag %s, keys %s, queue %d, offset %d)\n",
					m.Body, m.GetTags(), m.GetKeys(), m.Queue.QueueId, m.QueueOffset)
				if !seen[m.GetKeys()] {
					seen[m.GetKeys()] = true
					if len(seen) == *count {
						close(done)
					}
				}
			}
			return consumer.ConsumeSuccess, nil
		})
	if err != nil {
		log.Fatal(err)
	}
	if err := c.Start(); err != nil {
		log.Fatal(err)
	}
	defer func() {
		if err := c.Shutdown(); err != nil {
			log.Print("consumer shutdown: ", err)
		}
	}()
	select {
	case <-done:
		fmt.Println("all messages received")
	case <-time.After(30 * time.Second):
		mu.Lock()
		fmt.Fprintf(os.Stderr, "received %d of %d messages\n", len(seen), *count)
		mu.Unlock()
		os.Exit(1)
	}
}
