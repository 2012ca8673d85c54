package record

// Names of RocketMQ 5.x's timer messages (MessageConst, TimerMessageStore).
const (
	// TimerTopic holds timer messages until they are due
	// (TimerMessageStore.TIMER_TOPIC); they are all in queue 0.
	TimerTopic = "rmq_sys_wheel_timer"

	// PropertyTimerDeliverMS is the delivery time of a 5.x timer
	// message, in ms since the epoch (MessageConst.PROPERTY_TIMER_DELIVER_MS).
	PropertyTimerDeliverMS = "TIMER_DELIVER_MS"
	// PropertyTimerDelaySec and PropertyTimerDelayMS are the other two
	// forms of a 5.x timer delay (seconds or ms from its store time).
	PropertyTimerDelaySec = "TIMER_DELAY_SEC"
	PropertyTimerDelayMS  = "TIMER_DELAY_MS"
	// PropertyStartDeliverTime is the delivery time, ms since the epoch,
	// that Alibaba Cloud's ONS clients set.
	PropertyStartDeliverTime = "__STARTDELIVERTIME"
	// PropertyTimerOutMS is the delivery time the broker computed, set
	// when it moves a timer message to TimerTopic.
	PropertyTimerOutMS = "TIMER_OUT_MS"
	// PropertyTimerEnqueueMS and PropertyTimerDequeueMS are the times the
	// timer service enqueued the message in its wheel and delivered it.
	PropertyTimerEnqueueMS = "TIMER_ENQUEUE_MS"
	PropertyTimerDequeueMS = "TIMER_DEQUEUE_MS"
	// PropertyTimerDelUniqKey marks a recall: the message cancels the
	// pending timer whose delete key (TimerDeleteKey) it holds.
	PropertyTimerDelUniqKey = "TIMER_DEL_UNIQKEY"
	// RecallTag is the TAGS of a recall message
	// (RecallMessageProcessor.RECALL_MESSAGE_TAG).
	RecallTag = "_RECALL_TAG_"

	// PropertyTimerSourceOffset is rocketstore's own: on a delivered
	// timer message, the CommitLog offset of the TimerTopic record it was
	// delivered from. Recovery finds the deliveries a crash left
	// unaccounted for by it, so that none is delivered twice.
	PropertyTimerSourceOffset = "TIMER_SOURCE_OFFSET"
)

// TimerDeleteKey is TimerMessageStore.buildDeleteKey: a pending timer is
// named by its real topic and its message id.
func TimerDeleteKey(realTopic, uniqKey string) string { return realTopic + "+" + uniqKey }
