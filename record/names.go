package record

// Topic names RocketMQ gives a meaning to (TopicValidator, MixAll), declared
// once here for the engine, the broker, the server and the tools.
const (
	// ScheduleTopic holds delayed messages until they are due; queue =
	// delay level - 1, and a unit's tagsCode is the deliver time.
	ScheduleTopic = "SCHEDULE_TOPIC_XXXX"
	// TransHalfTopic holds transaction half messages.
	TransHalfTopic = "RMQ_SYS_TRANS_HALF_TOPIC"
	// TransOpHalfTopic holds the op records of transactions.
	TransOpHalfTopic = "RMQ_SYS_TRANS_OP_HALF_TOPIC"
	// TransCheckMaxTimeTopic receives the half messages checked too often.
	TransCheckMaxTimeTopic = "TRANS_CHECK_MAX_TIME_TOPIC"
	// TraceTopic is the default message-trace topic.
	TraceTopic = "RMQ_SYS_TRACE_TOPIC"
	// DefaultTopic is the template for auto-created topics.
	DefaultTopic = "TBW102"
	// SelfTestTopic is created at start, as RocketMQ does.
	SelfTestTopic = "SELF_TEST_TOPIC"
	// OffsetMovedEventTopic receives OffsetMovedEvents.
	OffsetMovedEventTopic = "OFFSET_MOVED_EVENT"
	// BenchmarkTopic is the topic of RocketMQ's benchmark tools.
	BenchmarkTopic = "BenchmarkTest"
	// RetryGroupTopicPrefix + group is a group's retry topic.
	RetryGroupTopicPrefix = "%RETRY%"
	// DLQGroupTopicPrefix + group is a group's dead-letter topic.
	DLQGroupTopicPrefix = "%DLQ%"
)

// Permission bits of a topic or broker (RocketMQ's PermName).
const (
	PermPriority = 0x8
	PermRead     = 0x4
	PermWrite    = 0x2
	PermInherit  = 0x1
)
