package bytesize

import "testing"

func TestParse(t *testing.T) {
	for in, want := range map[string]int64{"2GiB": 2 << 30, "512 MiB": 512 << 20, "1048576": 1 << 20, "1.5kb": 1500, "3b": 3} {
		if got, err := Parse(in); err != nil || got != want {
			t.Errorf("Parse(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "GiB", "two GiB", "-1MiB", "2 GB RAM"} {
		if _, err := Parse(in); err == nil {
			t.Errorf("Parse(%q): no error", in)
		}
	}
}

func TestFormat(t *testing.T) {
	for n, want := range map[int64]string{512: "512 B", 1536: "1.5 KiB", 2 << 30: "2.0 GiB", -2048: "-2.0 KiB"} {
		if got := Format(n); got != want {
			t.Errorf("Format(%d) = %q, want %q", n, got, want)
		}
	}
}
