package namesrv

// The name server's JSON bodies, with RocketMQ's field names as the
// clients parse them.
type (
	// TopicRouteData is a topic's route (GET_ROUTEINFO_BY_TOPIC).
	TopicRouteData struct {
		OrderTopicConf string         `json:"orderTopicConf"`
		QueueDatas     []QueueData    `json:"queueDatas"`
		BrokerDatas    []BrokerData   `json:"brokerDatas"`
		FilterServer   map[string]any `json:"filterServerTable"`
	}
	// QueueData is one broker group's queues of a topic.
	QueueData struct {
		BrokerName     string `json:"brokerName"`
		ReadQueueNums  int    `json:"readQueueNums"`
		WriteQueueNums int    `json:"writeQueueNums"`
		Perm           int    `json:"perm"`
		TopicSynFlag   int    `json:"topicSynFlag"`
	}
	// BrokerData is one broker group: its cluster and members.
	BrokerData struct {
		Cluster     string            `json:"cluster"`
		BrokerName  string            `json:"brokerName"`
		BrokerAddrs map[string]string `json:"brokerAddrs"` // broker id → "ip:port"; "0" is the master
	}
	// ClusterInfo is every group and cluster (GET_BROKER_CLUSTER_INFO).
	ClusterInfo struct {
		BrokerAddrTable  map[string]BrokerData `json:"brokerAddrTable"`
		ClusterAddrTable map[string][]string   `json:"clusterAddrTable"`
	}
	// TopicList is a list of topics (GET_ALL_TOPIC_LIST_FROM_NAMESERVER).
	TopicList struct {
		TopicList  []string `json:"topicList"`
		BrokerAddr string   `json:"brokerAddr,omitempty"`
	}
)
