package bench

import "testing"

// TestTF32Setting: tf32 asks for TF32, fp32 on CUDA turns it off (PyTorch's fp32), and nothing
// is set where goaccel would refuse it (the CPU) or where it means nothing (bf16).
func TestTF32Setting(t *testing.T) {
	for _, tc := range []struct{ precision, backend, want string }{
		{"tf32", "xla:cuda", "on"}, {"fp32", "xla:cuda", "off"}, {"fp32", "/x/jax_plugins/xla_cuda12/xla_cuda_plugin.so", "off"},
		{"fp32", "xla:cpu", ""}, {"fp32", "", ""}, {"bf16", "xla:cuda", ""},
	} {
		if got := tf32Setting(Spec{Precision: tc.precision, Backend: tc.backend}); got != tc.want {
			t.Errorf("%s on %q: TF32 %q, want %q", tc.precision, tc.backend, got, tc.want)
		}
	}
}
