package index

// IndexFile layout (all integers big-endian, RocketMQ's format):
//
//	header (40 B):
//	   0 beginTimestamp int64 | 8 endTimestamp int64 | 16 beginPhyOffset int64
//	  24 endPhyOffset int64   | 32 hashSlotCount int32 | 36 indexCount int32
//	slots (hashSlotNum × 4 B) from 40: the newest item number of the slot,
//	  0 = empty
//	items (indexNum × 20 B) from 40 + hashSlotNum×4; item 0 is never used:
//	   0 keyHash int32 | 4 phyOffset int64 | 12 timeDiff int32 (seconds
//	  since beginTimestamp) | 16 prevIndex int32 (older item of the slot)
//
// These values are RocketMQ's format: never change them.
const (
	headerSize         = 40
	offBeginTimestamp  = 0
	offEndTimestamp    = 8
	offBeginPhyOffset  = 16
	offEndPhyOffset    = 24
	offHashSlotCount   = 32
	offIndexCount      = 36
	slotSize           = 4
	itemSize           = 20
	itemOffKeyHash     = 0
	itemOffPhyOffset   = 4
	itemOffTimeDiff    = 12
	itemOffPrevIndex   = 16
	invalidIndex       = 0
	maxMsgsNumBatch    = 64
	fileNameLayout     = "20060102150405.000"
	keySeparator       = "#"
	defaultHashSlotNum = 5000000
	defaultIndexNum    = 5000000 * 4
	msPerSecond        = 1000
	maxInt32           = 1<<31 - 1
	firstIndex         = 1
)

// fileSize returns the size of an index file with the given geometry.
func fileSize(hashSlotNum, indexNum int) int64 {
	return headerSize + int64(hashSlotNum)*slotSize + int64(indexNum)*itemSize
}

// isFileName reports whether name is an IndexFile's: its creation time as
// fileNameLayout without the dot, 17 digits (RocketMQ's
// UtilAll.timeMillisToHumanString).
func isFileName(name string) bool {
	if len(name) != len(fileNameLayout)-1 {
		return false
	}
	for i := range len(name) {
		if name[i] < '0' || name[i] > '9' {
			return false
		}
	}
	return true
}
