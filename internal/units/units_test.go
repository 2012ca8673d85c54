package units

import "testing"

func TestBytes(t *testing.T) {
	for n, want := range map[int64]string{
		0: "0 B", 1023: "1023 B", 1024: "1.0 KiB", 1536: "1.5 KiB",
		64 << 20: "64.0 MiB", 1 << 30: "1.0 GiB", 3 << 40: "3.0 TiB", -1: "-1 B",
	} {
		if got := Size(n); got != want {
			t.Errorf("Size(%d) = %q, want %q", n, got, want)
		}
	}
}
