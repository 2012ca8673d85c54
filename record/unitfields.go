package record

// QueueFields returns, without decoding rec, the fields a ConsumeQueue unit
// is checked against on the read path: TOTALSIZE, QUEUEID, QUEUEOFFSET and
// the TOPIC bytes (a view into rec). ok is false when rec does not start
// with a v1 message header or its topic does not lie inside rec. It reads
// the fixed-offset fields and follows BODYLEN to the topic; it checks no
// CRC (Check does).
func QueueFields(rec []byte) (size, queueID int32, queueOffset int64, topic []byte, ok bool) {
	if len(rec) < FixedOverhead || be.Uint32(rec[offMagic:]) != magicMessageBits {
		return 0, 0, 0, nil, false
	}
	size = int32(be.Uint32(rec[offTotalSize:]))
	_, _, bodyLenAt := hostOffsets(int32(be.Uint32(rec[offSysFlag:])))
	if bodyLenAt+4 > len(rec) {
		return 0, 0, 0, nil, false
	}
	topicLenAt := bodyLenAt + 4 + int(int32(be.Uint32(rec[bodyLenAt:])))
	if topicLenAt < bodyLenAt+4 || topicLenAt >= len(rec) {
		return 0, 0, 0, nil, false
	}
	topicLen := int(int8(rec[topicLenAt]))
	end := topicLenAt + 1 + topicLen
	if topicLen < 0 || end > len(rec) {
		return 0, 0, 0, nil, false
	}
	return size, int32(be.Uint32(rec[offQueueID:])), int64(be.Uint64(rec[offQueueOffset:])), rec[topicLenAt+1 : end], true
}
