package collective

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"

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

// CompressBucket is the number of gradient elements in one bucket of the compressed
// all-reduce's pipeline: 2M, 8 MiB of float32 gradients and 4 MiB of 16-bit values per
// process. Compressor.Reduce encodes, sums and decodes some buckets while others' collectives
// are on the wire.
const CompressBucket = 1 << 21

// Compressor holds the buffers of the compressed all-reduce of one step's gradients: n
// elements in all, in buckets of at most bucket elements; each bucket is padded to size
// chunks of equal length, and chunk r of every bucket is owned by rank r.
type Compressor struct {
	c       *Codec
	size    int
	n       int
	buckets []span    // the buckets, in elements of the gradients laid end to end
	wire    []byte    // this rank's 16-bit gradients, then every rank's 16-bit sums, bucket after bucket
	recv    []byte    // every rank's 16-bit values of the chunks this rank owns, bucket after bucket
	sum     []float32 // the float32 sums of this rank's chunk of one bucket
	mine    []byte    // the sums of this rank's chunks in 16 bit, bucket after bucket
}

// span is one bucket: elements [lo, hi) of the gradients, chunks of chunk elements; its
// 16-bit values start at byte at of wire and recv, its sums at byte at/size of mine.
type span struct{ lo, hi, chunk, at int }

// NewCompressor returns the compressor of n elements with codec c over size processes, in
// buckets of bucket elements (CompressBucket when bucket <= 0).
func NewCompressor(c *Codec, n, size, bucket int) *Compressor {
	k := &Compressor{c: c, size: size, n: n, buckets: bucketsOf(n, size, bucket)}
	at, most := 0, 0
	if nb := len(k.buckets); nb > 0 {
		last := k.buckets[nb-1]
		at = last.at + 2*last.chunk*size
		most = k.buckets[0].chunk // the first bucket is the largest
	}
	k.wire, k.recv = make([]byte, at), make([]byte, at)
	k.sum, k.mine = make([]float32, most), make([]byte, at/size)
	return k
}

// bucketsOf lays n elements out in buckets of bucket elements (CompressBucket when bucket <=
// 0), each padded to size chunks.
func bucketsOf(n, size, bucket int) []span {
	if bucket <= 0 {
		bucket = CompressBucket
	}
	var spans []span
	at := 0
	for lo := 0; lo < n; lo += bucket {
		hi := min(lo+bucket, n)
		chunk := (hi - lo + size - 1) / size
		spans = append(spans, span{lo: lo, hi: hi, chunk: chunk, at: at})
		at += 2 * chunk * size
	}
	return spans
}

// CompressedBytes is what a Compressor of n elements over size processes in buckets of
// bucket elements (CompressBucket when bucket <= 0) sends per update: 2 bytes an element,
// each bucket padded to a multiple of size elements.
func CompressedBytes(n, size, bucket int) int64 {
	var total int64
	for _, s := range bucketsOf(n, size, bucket) {
		total += 2 * int64(s.chunk) * int64(size)
	}
	return total
}

// Bytes is the size of the 16-bit buffer each process contributes per update (padding
// included): the counterpart of the exact all-reduce's 4 bytes per element.
func (k *Compressor) Bytes() int64 { return int64(len(k.wire)) }

// Reduce replaces bufs, on every process, by the sum over all processes of bufs x scale, as
// 16-bit values decoded to float32: every process encodes its bufs x scale to 16 bit, an
// all-to-all hands each chunk's values to the rank that owns it, which adds them in float32 in
// rank order and rounds the sum to 16 bit, and an all-gather of those 16-bit sums gives every
// process, the owners included, the same bits. Inf and NaN stay non-finite; an fp16 sum beyond
// 65504 becomes Inf. Every process passes the same lengths, n elements in all, and the same
// scale.
//
// It runs bucket by bucket as a pipeline. The collectives run on the calling goroutine in
// rounds, the same on every process: round r is bucket r's all-to-all and bucket r-2's
// all-gather, in flight together (Group.AlltoallAllgatherBlocks). Meanwhile another goroutine
// sums bucket r-1's chunk, encodes bucket r+1 and decodes bucket r-3. So the host's passes
// overlap the wire, and the update takes about the longer of the two rather than their sum.
// The bits do not depend on the buckets: each element's sum is in rank order whatever the
// split; the host passes run on several goroutines for large buckets. When a collective fails, Reduce
// returns its error once no pass is running; bufs then hold the sums for some buckets and this
// process's values for others, and must not be used.
func (k *Compressor) Reduce(g Group, bufs [][]float32, scale float32) error {
	total := 0
	for _, b := range bufs {
		total += len(b)
	}
	if total != k.n {
		return fmt.Errorf("accelerator: the compressed all-reduce was given %d gradient elements, made for %d", total, k.n)
	}
	nb := len(k.buckets)
	if nb == 0 {
		return nil
	}
	var stop atomic.Bool
	tasks := make(chan func(), 3*nb)
	idle := make(chan struct{})
	go func() {
		defer close(idle)
		for f := range tasks {
			if !stop.Load() {
				f()
			}
			runtime.Gosched() // the collectives' goroutine is ready to post the next one
		}
	}()
	defer func() {
		close(tasks)
		<-idle
	}()
	encoded, summed := make([]chan struct{}, nb), make([]chan struct{}, nb)
	for b := range nb {
		encoded[b], summed[b] = make(chan struct{}), make(chan struct{})
	}
	encode := func(b int) func() {
		return func() {
			s := k.buckets[b]
			w := k.wire[s.at : s.at+2*s.chunk*k.size]
			pad := 2 * (s.hi - s.lo)
			k.each(bufs, s, func(x []float32, off int) {
				inPieces(len(x), func(lo, hi int) { k.c.encode(w[2*(off+lo):], x[lo:hi], scale) })
			})
			clear(w[pad:]) // the padding of the last chunk: zeros
			close(encoded[b])
		}
	}
	sum := func(b int) func() {
		return func() {
			s := k.buckets[b]
			recv, mine := k.recv[s.at:], k.mine[s.at/k.size:]
			inPieces(s.chunk, func(lo, hi int) {
				sum := k.sum[lo:hi]
				clear(sum) // from +0, so that the sum of -0s is +0 as in a plain loop
				for r := range k.size {
					k.c.decodeAdd(sum, recv[2*(r*s.chunk+lo):])
				}
				k.c.encode(mine[2*lo:], sum, 1)
			})
			close(summed[b])
		}
	}
	decode := func(b int) func() {
		return func() {
			s := k.buckets[b]
			w := k.wire[s.at:]
			k.each(bufs, s, func(x []float32, off int) {
				inPieces(len(x), func(lo, hi int) { k.c.decode(x[lo:hi], w[2*(off+lo):]) })
			})
		}
	}
	fail := func(err error) error {
		stop.Store(true)
		return err
	}
	// Round r posts bucket r's all-to-all and bucket r-2's all-gather together; the other
	// goroutine sums bucket r-1's chunk and encodes bucket r+1 meanwhile.
	tasks <- encode(0)
	for r := 0; r < nb+2; r++ {
		a, ag := r < nb, r >= 2 && r-2 < nb
		if !a && !ag {
			continue // one bucket: nothing to overlap in round 1
		}
		if r+1 < nb {
			tasks <- encode(r + 1)
		}
		var send, recv, mine, gathered []byte
		if a {
			<-encoded[r]
			s := k.buckets[r]
			send, recv = k.wire[s.at:s.at+2*s.chunk*k.size], k.recv[s.at:s.at+2*s.chunk*k.size]
		}
		if ag {
			<-summed[r-2]
			s := k.buckets[r-2]
			mine, gathered = k.mine[s.at/k.size:s.at/k.size+2*s.chunk], k.wire[s.at:s.at+2*s.chunk*k.size]
		}
		if err := g.AlltoallAllgatherBlocks(send, recv, mine, gathered); err != nil {
			return fail(err)
		}
		if a {
			tasks <- sum(r)
		}
		if ag {
			tasks <- decode(r - 2)
		}
	}
	return nil
}

// each calls fn for every part of bufs (laid end to end) that falls in bucket s: the part,
// and its offset from the bucket's start.
func (k *Compressor) each(bufs [][]float32, s span, fn func(x []float32, off int)) {
	start := 0
	for _, b := range bufs {
		end := start + len(b)
		if lo, hi := max(start, s.lo), min(end, s.hi); lo < hi {
			fn(b[lo-start:hi-start], lo-s.lo)
		}
		start = end
	}
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
