package broker

// EarliestMessageTime returns the store timestamp (ms) of the first message
// held in a queue, or -1 when the queue is unknown, empty or its first
// message cannot be read (DefaultMessageStore.getEarliestMessageTime, the
// answer to GET_EARLIEST_MSG_STORETIME).
func (b *Broker) EarliestMessageTime(topic string, queueID int32) int64 {
	s := b.store
	first := s.MinOffsetInQueue(topic, queueID)
	if first >= s.MaxOffsetInQueue(topic, queueID) {
		return -1
	}
	off, err := s.CommitLogOffsetInQueue(topic, queueID, first)
	if err != nil {
		return -1
	}
	m, err := s.LookMessageByOffset(off)
	if err != nil {
		return -1
	}
	return m.StoreTimestamp
}
