// Package safetensors reads and writes the safetensors tensor file format used by Hugging Face,
// PyTorch and others, for GoMLX tensors.
//
// The format is simple: an 8-byte little-endian unsigned header length N, then N bytes of a JSON
// object (the header), then the raw tensor data. The header maps each tensor name to its dtype,
// shape and the [begin, end) byte range of its data, counted from the first byte after the header:
//
//	{"w": {"dtype": "F32", "shape": [2, 3], "data_offsets": [0, 24]},
//	 "__metadata__": {"format": "pt"}}
//
// Data is stored row-major and little-endian. This package writes tensors contiguously in the
// order they are given and pads the header with spaces to a multiple of 8 bytes, as the reference
// implementation does, so the files it writes load with Python's safetensors package. It reads
// files whose tensors are in any order and tolerates unused gaps between them.
//
// Supported dtypes (safetensors name: GoMLX dtype): BOOL: Bool, U8: Uint8, I8: Int8, I16: Int16,
// U16: Uint16, I32: Int32, U32: Uint32, I64: Int64, U64: Uint64, F16: Float16, BF16: BFloat16,
// F32: Float32, F64: Float64. Other dtypes (complex, sub-byte, float8) are rejected with an error
// naming the tensor.
//
// Reading streams: [NewReader] parses the header and [Reader.Next] returns the tensors one at a
// time in file order, so a caller can hash or check the bytes as they pass without holding the
// file twice in memory. [Open] reads the header of a file and [File.Read] then loads tensors by
// name, in any order, through their offsets, so a caller holds only the tensors it keeps.
// [ConvertFloat] changes the precision of a loaded floating-point tensor (F16, BF16, F32, F64).
package safetensors
