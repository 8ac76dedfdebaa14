//go:build !amd64 || purego

package half

// The kernels of the bulk passes: the Go loops everywhere but amd64 (or with the purego tag).

func encodeBF16(w []uint16, x []float32, scale float32) { encodeBF16Go(w, x, scale) }
func encodeFP16(w []uint16, x []float32, scale float32) { encodeFP16Go(w, x, scale) }
func decodeBF16(x []float32, w []uint16)                { decodeBF16Go(x, w) }
func decodeAddBF16(sum []float32, w []uint16)           { decodeAddBF16Go(sum, w) }
func decodeFP16(x []float32, w []uint16)                { decodeFP16Go(x, w) }
func decodeAddFP16(sum []float32, w []uint16)           { decodeAddFP16Go(sum, w) }
