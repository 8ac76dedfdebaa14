package collective

import (
	"runtime"
	"sync"

	"github.com/goaccel/goaccel/internal/half"
)

// Codec is the 16-bit float format of the compressed gradient all-reduce
// (Config.GradientCompression): bf16 or fp16.
type Codec struct {
	name string
	fp16 bool
}

// CodecNamed returns the codec named "bf16" or "fp16", or nil for any other name.
func CodecNamed(name string) *Codec {
	switch name {
	case "bf16":
		return &Codec{name: "bf16"}
	case "fp16":
		return &Codec{name: "fp16", fp16: true}
	}
	return nil
}

// Name is "bf16" or "fp16".
func (c *Codec) Name() string { return c.name }

// encode writes x*scale, rounded to the codec's 16 bits (nearest even), into dst as
// little-endian pairs of bytes (len(dst) >= 2*len(x)).
func (c *Codec) encode(dst []byte, x []float32, scale float32) {
	if c.fp16 {
		half.EncodeFP16(dst, x, scale)
	} else {
		half.EncodeBF16(dst, x, scale)
	}
}

// decode is encode's inverse (exact): len(src) >= 2*len(x).
func (c *Codec) decode(x []float32, src []byte) {
	if c.fp16 {
		half.DecodeFP16(x, src)
	} else {
		half.DecodeBF16(x, src)
	}
}

// decodeAdd adds the len(sum) values that src holds, as encode wrote them, to sum.
func (c *Codec) decodeAdd(sum []float32, src []byte) {
	if c.fp16 {
		half.DecodeAddFP16(sum, src)
	} else {
		half.DecodeAddBF16(sum, src)
	}
}

// Compressor holds the buffers of the compressed all-reduce of one step's gradients: n
// elements in all, padded to size chunks of chunk elements, chunk r owned by rank r.
type Compressor struct {
	c     *Codec
	size  int
	chunk int
	wire  []byte    // this rank's 16-bit gradients, then every rank's 16-bit sums
	recv  []byte    // every rank's 16-bit values of the chunk this rank owns
	sum   []float32 // the float32 sums of this rank's chunk
	mine  []byte    // the sums in 16 bit
}

// NewCompressor returns the compressor of n elements with codec c over size processes.
func NewCompressor(c *Codec, n, size int) *Compressor {
	chunk := (n + size - 1) / size
	return &Compressor{c: c, size: size, chunk: chunk,
		wire: make([]byte, 2*chunk*size), recv: make([]byte, 2*chunk*size),
		sum: make([]float32, chunk), mine: make([]byte, 2*chunk)}
}

// Bytes is the size of the 16-bit buffer each process contributes per update (padding
// included): the counterpart of the exact all-reduce's 4 bytes per element.
func (k *Compressor) Bytes() int64 { return int64(len(k.wire)) }

// Reduce replaces bufs, on every process, by the sum over all processes of bufs x scale, as
// 16-bit values decoded to float32: every process encodes its bufs x scale to 16 bit, an
// all-to-all hands each chunk's values to the rank that owns it, which adds them in float32 in
// rank order and rounds the sum to 16 bit, and an all-gather of those 16-bit sums gives every
// process, the owners included, the same bits. Inf and NaN stay non-finite; an fp16 sum beyond
// 65504 becomes Inf. Every process passes the same lengths and the same scale. The host
// passes run on several goroutines for large buffers; each element's sum is in rank order
// whatever the split.
func (k *Compressor) Reduce(g Group, bufs [][]float32, scale float32) error {
	off := 0
	for _, b := range bufs {
		w := k.wire[2*off:]
		inPieces(len(b), func(lo, hi int) { k.c.encode(w[2*lo:], b[lo:hi], scale) })
		off += len(b)
	}
	clear(k.wire[2*off:]) // the padding of the last chunk: zeros
	if err := g.AlltoallBytes(k.wire, k.recv); err != nil {
		return err
	}
	inPieces(k.chunk, func(lo, hi int) {
		sum := k.sum[lo:hi]
		clear(sum) // from +0, so that the sum of -0s is +0 as in a plain loop
		for r := range k.size {
			k.c.decodeAdd(sum, k.recv[2*(r*k.chunk+lo):])
		}
		k.c.encode(k.mine[2*lo:], sum, 1)
	})
	if err := g.AllgatherBlocks(k.mine, k.wire); err != nil {
		return err
	}
	off = 0
	for _, b := range bufs {
		w := k.wire[2*off:]
		inPieces(len(b), func(lo, hi int) { k.c.decode(b[lo:hi], w[2*lo:]) })
		off += len(b)
	}
	return nil
}

// inPieces calls fn on [0, n) split into pieces, on GOMAXPROCS goroutines when n is large
// enough for the goroutines to pay (a machine with more cores than local processes would
// otherwise leave them idle during these passes), else once, on this goroutine.
func inPieces(n int, fn func(lo, hi int)) {
	const piece = 1 << 16 // elements a goroutine is worth starting for
	parts := min(runtime.GOMAXPROCS(0), n/piece)
	if parts <= 1 {
		fn(0, n)
		return
	}
	var wg sync.WaitGroup
	step := (n + parts - 1) / parts
	for lo := 0; lo < n; lo += step {
		wg.Go(func() { fn(lo, min(lo+step, n)) })
	}
	wg.Wait()
}
