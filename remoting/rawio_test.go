package remoting

import (
	"bytes"
	"testing"

	"pgregory.net/rapid"
)

// consume leaves exactly the bytes after the first n, whatever the
// buffers' sizes (empty ones included) and wherever n falls.
func TestConsume(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		sizes := rapid.SliceOfN(rapid.IntRange(0, 9), 0, 8).Draw(t, "sizes")
		var bufs [][]byte
		var all []byte
		next := byte(0)
		for _, s := range sizes {
			b := make([]byte, s)
			for i := range b {
				next++
				b[i] = next
			}
			bufs = append(bufs, b)
			all = append(all, b...)
		}
		n := rapid.IntRange(0, len(all)).Draw(t, "n")
		rest := consume(bufs, n)
		if got := bytes.Join(rest, nil); !bytes.Equal(got, all[n:]) {
			t.Fatalf("consume(%v, %d) left %v, want %v", sizes, n, got, all[n:])
		}
		if len(rest) > 0 && len(rest[0]) == 0 {
			t.Fatalf("consume(%v, %d) left an empty first buffer", sizes, n)
		}
	})
}
