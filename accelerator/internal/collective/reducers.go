package collective

// The reducers of the host strategies' mean gradient (strategy.Reducer): Exact, and
// Compressed, which sends 16-bit floats.

// Exact is the exact mean: one bucketed float32 all-reduce of the gradients and, in the same
// buckets, {w x loss, w} (8 bytes); the sums divided by the update's total weight.
type Exact struct{}

// Bytes is 4 bytes per gradient element.
func (Exact) Bytes(n, _ int) int64 { return 4 * int64(n) }

// Mean all-reduces grads and {lossSum, weight} in float32 and divides the gradient sums by
// window plus the summed weight.
func (Exact) Mean(t Timed, g Group, grads [][]float32, lossSum, weight, window float64) (float64, float64, error) {
	n := 0
	for _, b := range grads {
		n += len(b)
	}
	pair := []float32{float32(lossSum), float32(weight)}
	bufs := append(grads[:len(grads):len(grads)], pair)
	if err := t.Do("all-reduce gradients", 4*int64(n)+8, len(grads), func() error { return g.AllreduceSum(bufs) }); err != nil {
		return 0, 0, err
	}
	lossSum, weight = float64(pair[0]), float64(pair[1])
	if total := window + weight; total > 0 {
		if s := float32(1 / total); s != 1 {
			for _, b := range grads {
				Scale(b, s)
			}
		}
	}
	return lossSum, weight, nil
}

// Scale multiplies every element of b by s, in place: each element rounded once, as b[k] *= s.
// It runs four elements an iteration, which keeps a pass over MiniLM's 91 MB of gradients near
// the speed of copying them (the one-element loop took about twice as long: docs/performance.md).
func Scale(b []float32, s float32) {
	k := 0
	for ; k+4 <= len(b); k += 4 {
		c := b[k : k+4 : k+4]
		c[0] *= s
		c[1] *= s
		c[2] *= s
		c[3] *= s
	}
	for ; k < len(b); k++ {
		b[k] *= s
	}
}

// ScaleTo writes src[k] * s into dst[k] (len(dst) == len(src)), four elements an iteration,
// as Scale: the same bits as Scale on a copy, in one pass.
func ScaleTo(dst, src []float32, s float32) {
	dst = dst[:len(src)]
	k := 0
	for ; k+4 <= len(src); k += 4 {
		d, x := dst[k:k+4:k+4], src[k:k+4:k+4]
		d[0] = x[0] * s
		d[1] = x[1] * s
		d[2] = x[2] * s
		d[3] = x[3] * s
	}
	for ; k < len(src); k++ {
		dst[k] = src[k] * s
	}
}

// Compressed is the mean under Config.GradientCompression: the loss and the weight first,
// exact (float64, 16 bytes), then the gradients divided by the total weight of the update
// (so they are the mean gradient, the range fp16 needs) through a Compressor of codec.
func Compressed(codec *Codec) *CompressedMean { return &CompressedMean{codec: codec} }

// CompressedMean is Compressed's reducer: it holds its Compressor, made on the first update,
// when the gradients' size is known (one per training step).
type CompressedMean struct {
	codec *Codec
	comp  *Compressor
	pair  []float64 // this process's {w x loss, w}, then the global batch's
}

// Bytes is the 16-bit buffer each process sends: 2 bytes per element, each of the
// Compressor's buckets padded to a multiple of size elements.
func (c *CompressedMean) Bytes(n, size int) int64 { return CompressedBytes(n, size, 0) }

// Mean all-reduces {lossSum, weight} exactly, then the gradients divided by the total weight
// as 16-bit floats (Compressor.Reduce).
func (c *CompressedMean) Mean(t Timed, g Group, grads [][]float32, lossSum, weight, window float64) (float64, float64, error) {
	if c.comp == nil {
		n := 0
		for _, b := range grads {
			n += len(b)
		}
		c.comp = NewCompressor(c.codec, n, g.Size(), 0)
		c.pair = make([]float64, 2)
	}
	c.pair[0], c.pair[1] = lossSum, weight
	err := t.Do("all-reduce gradients", c.comp.Bytes()+16, len(grads), func() error {
		if err := g.AllreduceFloat64(c.pair, Sum); err != nil {
			return err
		}
		total := window + c.pair[1]
		if total <= 0 {
			return nil // no real example anywhere: the step fails the batch, on every process alike
		}
		return c.comp.Reduce(g, grads, float32(1/total))
	})
	if err != nil {
		return 0, 0, err
	}
	return c.pair[0], c.pair[1], nil
}
