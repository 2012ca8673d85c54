package record

// Names of RocketMQ 5.x's pop consumption and message types.
const (
	// ReviveTopicPrefix starts the system topic that holds pop
	// checkpoints and acks; the cluster name completes it
	// (PopAckConstants.REVIVE_TOPIC: rmq_sys_REVIVE_LOG_<clusterName>).
	ReviveTopicPrefix = "rmq_sys_REVIVE_LOG_"
	// PropertyShardingKey holds a FIFO message's message group
	// (MessageConst.PROPERTY_SHARDING_KEY, which 5.x clients set).
	PropertyShardingKey = "__SHARDINGKEY"
)

// ReviveTopic returns the revive topic of a cluster.
func ReviveTopic(cluster string) string { return ReviveTopicPrefix + cluster }
