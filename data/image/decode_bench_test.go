package image

import (
	"bytes"
	"image/jpeg"
	"os"
	"testing"
)

// benchJPEG is the JPEG photo the decode benchmarks read: $GOACCEL_IMAGE_JPEG, or a fixture.
func benchJPEG(b *testing.B) []byte {
	p := os.Getenv("GOACCEL_IMAGE_JPEG")
	if p == "" {
		p = "testdata/decode/q420.jpg"
	}
	data, err := os.ReadFile(p)
	if err != nil {
		b.Fatal(err)
	}
	return data
}

// BenchmarkDecodeJPEG is Decoder.Decode of a JPEG: image/jpeg's decoding, then libjpeg's
// upsampling and colour conversion.
func BenchmarkDecodeJPEG(b *testing.B) {
	data := benchJPEG(b)
	for b.Loop() {
		if _, err := (Decoder{}).Decode("bench.jpg", data); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkStdJPEG is image/jpeg.Decode alone (YCbCr planes, no conversion).
func BenchmarkStdJPEG(b *testing.B) {
	data := benchJPEG(b)
	for b.Loop() {
		if _, err := jpeg.Decode(bytes.NewReader(data)); err != nil {
			b.Fatal(err)
		}
	}
}
