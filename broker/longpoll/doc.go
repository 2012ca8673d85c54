// Package longpoll holds pull requests that found nothing until a matching
// message arrives or their suspend timeout passes (RocketMQ's
// PullRequestHoldService, ManyPullRequest and NotifyMessageArrivingListener).
//
// Requests are held per topic@queueId. The Hold is a dispatch.Dispatcher:
// the engine calls it for every record after the ConsumeQueue builder, so a
// woken request finds the new unit. A request is woken when the queue's
// max offset passes its pull offset and the record's tagsCode matches its
// filter.
//
// No lost wake-up (RocketMQ #7358): Wait registers the request first and
// then re-reads the queue's max offset, so an arrival dispatched between
// the caller's "nothing found" and the registration is seen by the
// re-check, and one dispatched after the registration is seen by Dispatch.
//
// Expiry is a timer per request, not a polling loop. The Hold starts no
// goroutine: the caller's goroutine waits, and Close releases every waiter.
//
// Concurrency: all methods are safe for concurrent use; Dispatch runs on
// the engine's dispatch goroutine and never blocks.
package longpoll
