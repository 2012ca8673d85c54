package configfile

// QuoteBareKeys returns src with every bare integer object key quoted:
// {0:250,-1:3} becomes {"0":250,"-1":3}. Strings (with their escapes) are
// copied untouched, and a number is treated as a key only when it follows
// '{' or ',' and is followed by ':', so valid JSON comes back unchanged.
func QuoteBareKeys(src []byte) []byte {
	out := make([]byte, 0, len(src)+16)
	inString, escaped, keyPos := false, false, false
	for i := 0; i < len(src); i++ {
		c := src[i]
		if inString {
			out = append(out, c)
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
			continue
		}
		switch {
		case c == '"':
			inString, keyPos = true, false
		case c == '{' || c == ',':
			keyPos = true
		case isSpace(c):
		case keyPos && (c == '-' || isDigit(c)):
			if end, ok := bareKeyEnd(src, i); ok {
				out = append(out, '"')
				out = append(out, src[i:end]...)
				out = append(out, '"')
				i = end - 1
				keyPos = false
				continue
			}
			keyPos = false
		default:
			keyPos = false
		}
		out = append(out, c)
	}
	return out
}

// bareKeyEnd returns the end of the integer starting at i if a ':'
// follows it (after optional spaces).
func bareKeyEnd(src []byte, i int) (int, bool) {
	j := i
	if src[j] == '-' {
		j++
	}
	start := j
	for j < len(src) && isDigit(src[j]) {
		j++
	}
	if j == start {
		return 0, false
	}
	k := j
	for k < len(src) && isSpace(src[k]) {
		k++
	}
	return j, k < len(src) && src[k] == ':'
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }
func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }
