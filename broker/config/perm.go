package config

import "github.com/rocketstore/rocketstore/record"

// IsReadable reports whether perm allows reading.
func IsReadable(perm int) bool { return perm&record.PermRead == record.PermRead }

// IsWritable reports whether perm allows writing.
func IsWritable(perm int) bool { return perm&record.PermWrite == record.PermWrite }
