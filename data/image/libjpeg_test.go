//go:build goaccel_libjpeg && cgo

package image_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/goaccel/goaccel/data/image"
)

// TestLibjpegEqualsPillow: with libjpeg-turbo, every JPEG fixture but the CMYK one (left to
// image/jpeg) decodes to Pillow's bytes exactly, the EXIF-rotated ones included; a truncated
// file is an error naming it.
func TestLibjpegEqualsPillow(t *testing.T) {
	files, err := filepath.Glob("testdata/decode/*.jpg")
	if err != nil || len(files) < 8 {
		t.Fatalf("%d fixtures: %v", len(files), err)
	}
	for _, f := range files {
		if strings.HasSuffix(f, "cmyk.jpg") {
			continue
		}
		want, err := os.ReadFile(f + ".rgb")
		if err != nil {
			t.Fatal(err)
		}
		got, err := image.Load(f)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got.Pix, want) {
			t.Errorf("%s: not Pillow's pixels", f)
		}
	}
	if _, err := image.Load("testdata/bad/truncated.jpg"); err == nil || !strings.Contains(err.Error(), "testdata/bad/truncated.jpg: corrupt or truncated jpeg file") {
		t.Errorf("truncated before its scan: %v", err)
	}
	b, err := os.ReadFile("testdata/decode/q420.jpg")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := (image.Decoder{}).Decode("cut.jpg", b[:len(b)*7/10]); err == nil || !strings.Contains(err.Error(), "cut.jpg: truncated jpeg file") {
		t.Errorf("truncated in its scan: %v", err)
	}
	b[len(b)/2] ^= 0xff // a corrupt entropy segment: libjpeg's warning, not a crash
	if _, err := (image.Decoder{}).Decode("x.jpg", b); err != nil && !strings.Contains(err.Error(), "x.jpg") {
		t.Errorf("corrupt: %v", err)
	}
}
