package tfevent

import (
	"errors"
	"hash/crc32"
	"slices"
	"testing"
)

// TestCRC32C: the CRC is Castagnoli's (its check value for "123456789" is 0xE3069283) and the
// mask is TFRecord's rotation plus constant.
func TestCRC32C(t *testing.T) {
	if c := crc32.Checksum([]byte("123456789"), castagnoli); c != 0xe3069283 {
		t.Fatalf("CRC-32C(123456789) = %#x, want 0xe3069283", c)
	}
	c := uint32(0xe3069283)
	if got, want := MaskedCRC([]byte("123456789")), (c>>15|c<<17)+0xa282ead8; got != want {
		t.Errorf("masked CRC %#x, want %#x", got, want)
	}
}

// TestEventRoundTrip: an event with scalars and a text decodes to what was encoded.
func TestEventRoundTrip(t *testing.T) {
	e := Event{WallTime: 1.7e9 + 0.25, Step: 42, Scalars: []Scalar{{"train/loss", 0.5}, {"eval/f1", 0.75}},
		Texts: []Text{{"config", "| a | b |"}}}
	got, err := Unmarshal(e.Marshal())
	if err != nil {
		t.Fatal(err)
	}
	if got.WallTime != e.WallTime || got.Step != e.Step || !slices.Equal(got.Scalars, e.Scalars) ||
		!slices.Equal(got.Texts, e.Texts) {
		t.Errorf("decoded %+v, want %+v", got, e)
	}
	v, err := Unmarshal(Event{WallTime: 1, FileVersion: FileVersion}.Marshal())
	if err != nil || v.FileVersion != FileVersion {
		t.Errorf("file version event: %+v %v", v, err)
	}
}

// TestSplitTornAndCorrupt: a torn last record (cut anywhere, or with a bad data checksum) is
// left out and the intact length returned; a bad checksum before the end is ErrCorrupt.
func TestSplitTornAndCorrupt(t *testing.T) {
	a, b := Frame([]byte("first")), Frame([]byte("second record"))
	whole := append(append([]byte{}, a...), b...)
	recs, end, err := Split(whole)
	if err != nil || end != len(whole) || len(recs) != 2 || string(recs[1]) != "second record" {
		t.Fatalf("Split(2 records) = %q, %d, %v", recs, end, err)
	}
	for cut := len(a) + 1; cut < len(whole); cut++ {
		recs, end, err := Split(whole[:cut])
		if err != nil || end != len(a) || len(recs) != 1 {
			t.Fatalf("cut at %d: %q, %d, %v; want the first record and end %d", cut, recs, end, err, len(a))
		}
	}
	bad := slices.Clone(whole)
	bad[len(bad)-6] ^= 1 // the last record's data
	if recs, end, err := Split(bad); err != nil || end != len(a) || len(recs) != 1 {
		t.Errorf("a last record with a bad checksum: %q, %d, %v; want it dropped", recs, end, err)
	}
	bad = slices.Clone(whole)
	bad[14] ^= 1 // the first record's data
	if _, end, err := Split(bad); !errors.Is(err, ErrCorrupt) || end != 0 {
		t.Errorf("a bad first record followed by another: end %d, %v; want ErrCorrupt at 0", end, err)
	}
}
