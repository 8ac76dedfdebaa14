package data

// PadTo returns a new slice of exactly length token ids: ids cut to its first length tokens, or
// followed by pad up to length. A negative length counts as 0. Collate functions use it to give
// every row of a batch one length; the caller decides what to keep when cutting (a BERT
// tokenizer, for instance, cuts before appending [SEP]).
func PadTo(ids []int32, length int, pad int32) []int32 {
	length = max(length, 0)
	out := make([]int32, length)
	n := copy(out, ids)
	for i := n; i < length; i++ {
		out[i] = pad
	}
	return out
}

// BucketLength returns the smallest of buckets that is >= n, or the largest bucket when n
// exceeds them all (the sequences are then cut to it). Buckets <= 0 are ignored; with no
// buckets it returns n.
//
// Padding every batch to one of a few lengths (say 32, 64, 128) keeps the number of shapes, and
// so of XLA compilations, small, while short batches stay cheap. GoMLX offers rule-based
// roundings of the same kind in github.com/gomlx/gomlx/core/tensors/bucketing (powers of two,
// multiples of a step); BucketLength takes an explicit list instead, as sequence models usually
// have a maximum length that is not a power of two.
func BucketLength(n int, buckets []int) int {
	best, largest := -1, -1
	for _, b := range buckets {
		if b <= 0 {
			continue // not a length
		}
		if b >= n && (best < 0 || b < best) {
			best = b
		}
		largest = max(largest, b)
	}
	switch {
	case best >= 0:
		return best
	case largest >= 0:
		return largest
	default:
		return n
	}
}
