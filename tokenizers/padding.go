package tokenizers

// Padding is how Pad makes the encodings of a batch one length, as the tokenizers library
// pads for transformers' padding=..., max_length, pad_to_multiple_of and padding_side.
type Padding struct {
	// Length is the length to pad to (padding="max_length"); 0 is the longest encoding of
	// the batch (padding=True). A longer encoding is left as it is.
	Length int
	// MultipleOf rounds the length up to a multiple of it (pad_to_multiple_of); 0: none.
	MultipleOf int
	// Left pads before the ids (padding_side="left") instead of after them.
	Left bool
	// ID is the padding token's id, TypeID the type id of padding (transformers': 0).
	ID, TypeID int32
}

// Pad returns the encodings padded to one length as p says, each with its AttentionMask: 1
// for its own ids, 0 for the padding, whose word ids are -1.
func Pad(encs []Encoding, p Padding) []Encoding {
	length := p.Length
	if length <= 0 {
		for _, e := range encs {
			length = max(length, len(e.IDs))
		}
	}
	if m := p.MultipleOf; m > 0 && length%m != 0 {
		length += m - length%m
	}
	out := make([]Encoding, len(encs))
	for i, e := range encs {
		n := max(length-len(e.IDs), 0)
		mask := make([]int32, len(e.IDs))
		for j := range mask {
			mask[j] = 1
		}
		if e.AttentionMask != nil {
			copy(mask, e.AttentionMask)
		}
		fill := func(v int32) []int32 {
			s := make([]int32, n)
			for j := range s {
				s[j] = v
			}
			return s
		}
		join := func(own []int32, v int32) []int32 {
			if p.Left {
				return append(fill(v), own...)
			}
			return append(append(make([]int32, 0, len(own)+n), own...), fill(v)...)
		}
		out[i] = Encoding{IDs: join(e.IDs, p.ID), TypeIDs: join(e.TypeIDs, p.TypeID), WordIDs: join(e.WordIDs, -1),
			AttentionMask: join(mask, 0)}
	}
	return out
}
