package record

import "bytes"

// Property names RocketMQ gives a meaning to.
const (
	PropertyKeys              = "KEYS"
	PropertyTags              = "TAGS"
	PropertyWaitStoreMsgOK    = "WAIT"
	PropertyDelayTimeLevel    = "DELAY"
	PropertyRetryTopic        = "RETRY_TOPIC"
	PropertyRealTopic         = "REAL_TOPIC"
	PropertyRealQueueID       = "REAL_QID"
	PropertyTransactionPrep   = "TRAN_MSG"
	PropertyOriginMessageID   = "ORIGIN_MESSAGE_ID"
	PropertyReconsumeTime     = "RECONSUME_TIME"
	PropertyMaxReconsumeTimes = "MAX_RECONSUME_TIMES"
	PropertyUniqClientMsgID   = "UNIQ_KEY"
	PropertyCluster           = "CLUSTER"
)

// Separators of the encoded property string.
const (
	nameValueSeparator = 1
	propertySeparator  = 2
)

// maxSortedOnStack is how many keys are sorted without allocating.
const maxSortedOnStack = 32

// AppendProperties appends RocketMQ's encoding of props to dst:
// k\x01v\x02k\x01v (no trailing separator, as RocketMQ 4.9.4 writes it).
// Keys are emitted in sorted order so that encoding is deterministic; empty
// values are skipped, as RocketMQ skips nulls. It does not allocate for up
// to 32 properties beyond growing dst.
func AppendProperties(dst []byte, props map[string]string) []byte {
	if len(props) == 0 {
		return dst
	}
	var stack [maxSortedOnStack]string
	keys := stack[:0]
	if len(props) > maxSortedOnStack {
		keys = make([]string, 0, len(props))
	}
	for k := range props {
		keys = insertSorted(keys, k)
	}
	start := len(dst)
	for _, k := range keys {
		v := props[k]
		if v == "" || k == "" {
			continue
		}
		if len(dst) > start {
			dst = append(dst, propertySeparator)
		}
		dst = append(dst, k...)
		dst = append(dst, nameValueSeparator)
		dst = append(dst, v...)
	}
	return dst
}

// insertSorted inserts k into the sorted slice keys (insertion sort: the
// property maps are small, and sort.Strings would make keys escape).
func insertSorted(keys []string, k string) []string {
	keys = append(keys, k)
	i := len(keys) - 1
	for ; i > 0 && keys[i-1] > k; i-- {
		keys[i] = keys[i-1]
	}
	keys[i] = k
	return keys
}

// ParseProperties decodes an encoded property string the way RocketMQ's
// string2messageProperties does: entries shorter than 3 bytes and entries
// without a non-empty name and value are ignored, and a trailing \x02 (as
// older brokers wrote) is accepted.
func ParseProperties(b []byte) map[string]string {
	m := make(map[string]string, 4)
	ForEachProperty(b, func(k, v []byte) bool {
		m[string(k)] = string(v)
		return true
	})
	return m
}

// ForEachProperty calls fn for each valid name/value pair of the encoded
// properties b until fn returns false. It does not allocate.
func ForEachProperty(b []byte, fn func(k, v []byte) bool) {
	for len(b) > 0 {
		item := b
		if i := bytes.IndexByte(b, propertySeparator); i >= 0 {
			item, b = b[:i], b[i+1:]
		} else {
			b = nil
		}
		if len(item) < 3 {
			continue
		}
		kv := bytes.IndexByte(item, nameValueSeparator)
		if kv <= 0 || kv >= len(item)-1 {
			continue
		}
		if !fn(item[:kv], item[kv+1:]) {
			return
		}
	}
}

// PropertyValue returns the value of key in the encoded properties b without
// allocating. Later duplicates win, as in a Java HashMap.
func PropertyValue(b []byte, key string) (v []byte, ok bool) {
	ForEachProperty(b, func(k, val []byte) bool {
		if string(k) == key {
			v, ok = val, true
		}
		return true
	})
	return v, ok
}
