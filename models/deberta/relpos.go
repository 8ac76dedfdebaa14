package deberta

import (
	"math"
	"slices"
)

// Relative positions. The distance from query position q to key position k is q-k; with
// position_buckets > 0 it is mapped to a log bucket (LogBucket), and its relative embedding
// is row bucket+span of encoder.rel_embeddings (span: position_buckets, or
// max_relative_positions without buckets), clamped to the table's 2·span rows.
//
// With position_buckets 8 and max_relative_positions 64 (mid = 4), distances -4..4 keep their
// value and the longer ones share buckets on a log scale: 5..10 -> 5, 11..25 -> 6, 26..63 -> 7
// (negative distances alike, negated), 64..157 -> 8; the rows are bucket+8, and a bucket
// beyond 7 is clamped to the last row, 15.

// LogBucket is DeBERTa's log bucket of the relative distance rel (transformers'
// make_log_bucket_position) for a bucket count bucketSize and the largest distance
// maxPosition: with mid = bucketSize/2, a distance of magnitude at most mid is kept; a
// longer one d becomes sign(rel)·(mid + ceil(log(d/mid) / log((maxPosition-1)/mid) · (mid-1))),
// so that maxPosition-1 falls in bucket 2·mid-1. The logarithms are taken in float32, as
// PyTorch takes them, so that a distance near a bucket's edge lands where it lands there.
func LogBucket(rel, bucketSize, maxPosition int) int {
	mid := bucketSize / 2
	d := rel
	if d < 0 {
		d = -d
	}
	if d <= mid {
		return rel
	}
	ratio := float32(d) / float32(mid)
	logRatio := float32(math.Log(float64(ratio)))
	logMax := float32(math.Log(float64(float32(float64(maxPosition-1) / float64(mid)))))
	scaled := (logRatio / logMax) * float32(mid-1)
	bucket := int(math.Ceil(float64(scaled))) + mid
	if rel < 0 {
		return -bucket
	}
	return bucket
}

// relativeIndex is the row of the relative embeddings for the distance rel: its bucket (or
// itself without buckets) plus the span, clamped to [0, 2·span-1].
func (c Config) relativeIndex(rel int) int32 {
	if c.PositionBuckets > 0 {
		rel = LogBucket(rel, c.PositionBuckets, c.maxRelativePositions())
	}
	span := c.attSpan()
	return int32(min(max(rel+span, 0), 2*span-1))
}

// relativeColumns returns, for a sequence of seqLen tokens, the column of the per-token
// relative tables [L, 2·span] that each distance reads, indexed by distance + seqLen - 1 for the
// distances -(seqLen-1)..seqLen-1:
//
//   - c2p, by the distance q-k from query to key: index(q-k), the key's relative position
//     seen from the query;
//   - p2c, by the distance k-q from key to query: span - bucket(k-q), clamped, the query's
//     relative position seen from the key (transformers' p2c_pos).
func (c Config) relativeColumns(seqLen int) (c2p, p2c []int32) {
	span := c.attSpan()
	c2p, p2c = make([]int32, 2*seqLen-1), make([]int32, 2*seqLen-1)
	for i := range c2p {
		d := i - (seqLen - 1)
		c2p[i] = c.relativeIndex(d)
		if c.PositionBuckets > 0 {
			d = LogBucket(d, c.PositionBuckets, c.maxRelativePositions())
		}
		p2c[i] = int32(min(max(span-d, 0), 2*span-1))
	}
	return c2p, p2c
}

// readColumns is relativeColumns counted from the first row that some distance of seqLen
// tokens reads, with that range of rows of the relative embeddings, [first, end): the
// distances of L tokens reach at most 2·L-1 of the 2·span rows (127 of 512 for DeBERTa-v3 at
// L 64), so the encoder projects and multiplies only those rows. The range is widened to
// multiples of 16 rows: at DeBERTa-v3-small's shape (L 128) the 255 rows read made the
// training step 0.9x the whole table's, 256 rows 1.1x (docs/performance.md).
func (c Config) readColumns(seqLen int) (c2p, p2c []int32, rows [2]int) {
	c2p, p2c = c.relativeColumns(seqLen)
	first, last := c2p[0], c2p[0]
	for _, col := range slices.Concat(c2p, p2c) {
		first, last = min(first, col), max(last, col)
	}
	const align = 16
	end := min(int32(2*c.attSpan()), (last+align)/align*align)
	first = max(0, min(first/align*align, end-align))
	for i := range c2p {
		c2p[i] -= first
		p2c[i] -= first
	}
	return c2p, p2c, [2]int{int(first), int(end)}
}
