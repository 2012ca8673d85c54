package config

// Permission bits (RocketMQ's PermName).
const (
	PermPriority = 0x8
	PermRead     = 0x4
	PermWrite    = 0x2
	PermInherit  = 0x1
)

// IsReadable reports whether perm allows reading.
func IsReadable(perm int) bool { return perm&PermRead == PermRead }

// IsWritable reports whether perm allows writing.
func IsWritable(perm int) bool { return perm&PermWrite == PermWrite }
