package record

import "unicode/utf8"

// JavaStringHashCode returns Java's String.hashCode of s: s[0]*31^(n-1) + ...
// over UTF-16 code units, wrapping at 32 bits. RocketMQ stores it (sign-
// extended to 64 bits) as a message's tagsCode and hashes index keys with it,
// so it must match Java bit for bit, including for non-ASCII text.
func JavaStringHashCode(s string) int32 {
	var h int32
	for _, r := range s {
		if r >= 0x10000 {
			// Outside the BMP Java sees a surrogate pair.
			r -= 0x10000
			h = 31*h + int32(0xD800+(r>>10))
			h = 31*h + int32(0xDC00+(r&0x3FF))
			continue
		}
		h = 31*h + int32(r)
	}
	return h
}

// TagsCode returns the ConsumeQueue tagsCode of a message's TAGS property:
// the Java hash code sign-extended to 64 bits, or 0 when there are no tags.
func TagsCode(tags string) int64 {
	if tags == "" {
		return 0
	}
	return int64(JavaStringHashCode(tags))
}

// JavaStringHashCodeBytes is JavaStringHashCode of the UTF-8 text b, without
// converting it to a string (which may allocate on the dispatch hot path).
// Invalid UTF-8 bytes hash as U+FFFD, as Java's decoder maps them.
func JavaStringHashCodeBytes(b []byte) int32 {
	var h int32
	for len(b) > 0 {
		r, n := rune(b[0]), 1
		if r >= utf8.RuneSelf {
			r, n = utf8.DecodeRune(b)
		}
		b = b[n:]
		if r >= 0x10000 {
			r -= 0x10000
			h = 31*h + int32(0xD800+(r>>10))
			h = 31*h + int32(0xDC00+(r&0x3FF))
			continue
		}
		h = 31*h + int32(r)
	}
	return h
}
