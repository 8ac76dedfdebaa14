package image

import (
	"strings"
	"testing"
)

// TestPickleOpcodes covers opcodes the tiny fixtures do not reach: LONG_BINPUT/LONG_BINGET
// (cPickle's memo past 255 entries, as in a 10,000-name filenames list), LONG1, BINUNICODE,
// SETITEM, APPEND, EMPTY_TUPLE.
func TestPickleOpcodes(t *testing.T) {
	p := "\x80\x02}q\x01(U\x01ar\x00\x01\x00\x00j\x00\x01\x00\x00j\x00\x01\x00\x00\x86X\x02\x00\x00\x00bc\x8a\x02\x00\x80u" +
		"U\x01l])as."
	v, err := unpickle("x.pkl", []byte(p))
	if err != nil {
		t.Fatal(err)
	}
	d := v.(*pyDict)
	if got := d.vals["a"].(pyTuple); len(got) != 2 || got[0] != "a" || got[1] != "a" {
		t.Fatalf("memo: %v", d.vals)
	}
	if d.vals["bc"] != int64(-32768) {
		t.Fatalf("LONG1: %v", d.vals["bc"])
	}
	if l := d.vals["l"].(*pyList); len(*l) != 1 {
		t.Fatalf("APPEND: %v", *l)
	}
	for _, c := range []struct{ in, want string }{
		{"\x80\x02h\x05.", "memo key 5 not defined"},
		{"\x80\x02U\x05ab", "truncated"},
		{"\x80\x02(.", "unexpected mark"},
		{"\x80\x02K\x00K\x01K\x02s.", "set items of a int64"},
	} {
		if _, err := unpickle("bad.pkl", []byte(c.in)); err == nil || !strings.Contains(err.Error(), "bad.pkl") || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v, want %q", c.in, err, c.want)
		}
	}
}
