package accelerator

import (
	"runtime"
	"strings"
	"sync"

	"github.com/goaccel/goaccel/internal/envvar"
	"github.com/goaccel/goaccel/internal/half"
)

// gradCodec is the 16-bit float format of the compressed gradient all-reduce
// (Config.GradientCompression): "bf16" or "fp16".
type gradCodec struct {
	name string
	fp16 bool
}

// gradientCompression resolves Config.GradientCompression: cfg, else
// $GOACCEL_GRADIENT_COMPRESSION, else "no" (nil: the exact float32 all-reduce). verify is
// Config.Verify resolved, which checks the exact update and so excludes compression.
func gradientCompression(cfg string, verify int) (*gradCodec, error) {
	s := resolveSetting("GradientCompression", cfg, envvar.GradientCompression.Var)
	var c *gradCodec
	switch strings.ToLower(s.value) {
	case "", "no":
		return nil, nil
	case "bf16":
		c = &gradCodec{name: "bf16"}
	case "fp16":
		c = &gradCodec{name: "fp16", fp16: true}
	default:
		return nil, s.refuse(`unknown gradient compression: valid values are "no", "bf16" and "fp16"`)
	}
	if verify > 0 {
		return nil, s.refuse("Verify %d checks the exact float32 update, which a compressed all-reduce does not "+
			"compute; use one or the other", verify)
	}
	return c, nil
}

// encode writes x*scale, rounded to the codec's 16 bits (nearest even), into dst as
// little-endian pairs of bytes (len(dst) >= 2*len(x)).
func (c *gradCodec) encode(dst []byte, x []float32, scale float32) {
	if c.fp16 {
		half.EncodeFP16(dst, x, scale)
	} else {
		half.EncodeBF16(dst, x, scale)
	}
}

// decode is encode's inverse (exact): len(src) >= 2*len(x).
func (c *gradCodec) decode(x []float32, src []byte) {
	if c.fp16 {
		half.DecodeFP16(x, src)
	} else {
		half.DecodeBF16(x, src)
	}
}

// compressor holds the buffers of the compressed all-reduce of one step's gradients: n
// elements in all, padded to size chunks of chunk elements, chunk r owned by rank r.
type compressor struct {
	c     *gradCodec
	size  int
	chunk int
	wire  []byte    // this rank's 16-bit gradients, then every rank's 16-bit sums
	recv  []byte    // every rank's 16-bit values of the chunk this rank owns
	sum   []float32 // the float32 sums of this rank's chunk
	part  []float32 // one rank's decoded values of that chunk
	mine  []byte    // the sums in 16 bit
}

func newCompressor(c *gradCodec, n, size int) *compressor {
	chunk := (n + size - 1) / size
	return &compressor{c: c, size: size, chunk: chunk,
		wire: make([]byte, 2*chunk*size), recv: make([]byte, 2*chunk*size),
		sum: make([]float32, chunk), part: make([]float32, chunk), mine: make([]byte, 2*chunk)}
}

// bytes is the size of the 16-bit buffer each process contributes per update (padding
// included): the counterpart of the exact all-reduce's 4 bytes per element.
func (k *compressor) bytes() int64 { return int64(len(k.wire)) }

// reduce replaces bufs, on every process, by the sum over all processes of bufs x scale, as
// 16-bit values decoded to float32: every process encodes its bufs x scale to 16 bit, an
// all-to-all hands each chunk's values to the rank that owns it, which adds them in float32 in
// rank order and rounds the sum to 16 bit, and an all-gather of those 16-bit sums gives every
// process, the owners included, the same bits. Inf and NaN stay non-finite; an fp16 sum beyond
// 65504 becomes Inf. Every process passes the same lengths and the same scale. The host
// passes run on several goroutines for large buffers; each element's sum is in rank order
// whatever the split.
func (k *compressor) reduce(g group, bufs [][]float32, scale float32) error {
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
		sum, part := k.sum[lo:hi], k.part[lo:hi]
		clear(sum)
		for r := range k.size {
			k.c.decode(part, k.recv[2*(r*k.chunk+lo):])
			for i, v := range part {
				sum[i] += v
			}
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

// allreduceCompressed is the update's all-reduce under Config.GradientCompression: the loss
// and the weight first, exact (float64, into p.pair), then the gradients divided by the total
// weight of the update (so they are the mean gradient, the range fp16 needs) through the
// compressor. run reads the loss from p.pair and does not divide the gradients again.
func (p *hostReducedStep) allreduceCompressed() error {
	if err := p.grp.AllreduceFloat64(p.pair, OpSum); err != nil {
		return err
	}
	total := p.window + p.pair[1]
	if total <= 0 {
		return nil // no real example anywhere: run fails the batch, on every process alike
	}
	return p.comp.reduce(p.grp, p.bufs[:len(p.vars)], float32(1/total))
}

// lossBytes is the bytes of the update's loss and weight: 2 float32 in the exact all-reduce's
// buckets, 2 float64 on their own under compression.
func (p *hostReducedStep) lossBytes() int64 {
	if p.comp != nil {
		return 16
	}
	return 8
}
