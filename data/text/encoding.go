package text

import (
	"fmt"
	"os"
	"strings"
	"unicode/utf8"
)

// Encoding is the character encoding of a text file read by OpenLines or ReadLabeledFiles.
type Encoding int

const (
	// EncodingUTF8 reads the file as UTF-8; a line that is not valid UTF-8 is a malformed line.
	// It is the zero value, and the default of OpenLines.
	EncodingUTF8 Encoding = iota
	// EncodingWindows1252 decodes every byte as Windows-1252, the superset of ISO-8859-1
	// (Latin-1) that older corpora, such as the original rt-polarity files, are written in.
	// Every byte sequence decodes.
	EncodingWindows1252
	// EncodingAuto looks at every line before decoding any: if every line is valid UTF-8 the file is
	// UTF-8, otherwise it is Windows-1252. A file with both valid non-ASCII UTF-8 lines and
	// invalid ones is an error (it mixes encodings), and so, in ReadLabeledFiles, is a set of
	// files where one is UTF-8 with non-ASCII text and another is not UTF-8. It is the default
	// of LoadPolarity.
	EncodingAuto
)

// win1252 maps bytes 0x80..0x9f of Windows-1252 to runes; bytes 0xa0..0xff are the same code
// points as in ISO-8859-1. The five bytes that Windows-1252 leaves undefined map to the C1
// control of the same value, as browsers do.
var win1252 = [32]rune{
	0x20ac, 0x0081, 0x201a, 0x0192, 0x201e, 0x2026, 0x2020, 0x2021,
	0x02c6, 0x2030, 0x0160, 0x2039, 0x0152, 0x008d, 0x017d, 0x008f,
	0x0090, 0x2018, 0x2019, 0x201c, 0x201d, 0x2022, 0x2013, 0x2014,
	0x02dc, 0x2122, 0x0161, 0x203a, 0x0153, 0x009d, 0x017e, 0x0178,
}

// decodeLine turns the raw bytes of a line into a string, or names what is wrong with them.
func decodeLine(b []byte, enc Encoding) (string, error) {
	if enc != EncodingWindows1252 {
		if !utf8.Valid(b) {
			at := firstInvalidUTF8(b)
			return "", fmt.Errorf("invalid UTF-8 at byte %d (0x%02x); if the file is Latin-1/Windows-1252, "+
				"set LineOptions.Encoding to EncodingWindows1252 or EncodingAuto", at+1, b[at])
		}
		return string(b), nil
	}
	ascii := true
	for _, c := range b {
		if c >= utf8.RuneSelf {
			ascii = false
			break
		}
	}
	if ascii {
		return string(b), nil
	}
	var sb strings.Builder
	sb.Grow(len(b) + len(b)/2)
	for _, c := range b {
		switch {
		case c < 0x80:
			sb.WriteByte(c)
		case c < 0xa0:
			sb.WriteRune(win1252[c-0x80])
		default:
			sb.WriteRune(rune(c))
		}
	}
	return sb.String(), nil
}

// firstInvalidUTF8 is the offset of the first byte of b that does not start a valid rune.
func firstInvalidUTF8(b []byte) int {
	for i := 0; i < len(b); {
		r, size := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && size <= 1 {
			return i
		}
		i += size
	}
	return len(b)
}

// sniffed is what a read of a file tells about its encoding.
type sniffed struct {
	path        string
	utf8Line    int  // first line with valid non-ASCII UTF-8 (0: none)
	invalidLine int  // first line that is not valid UTF-8 (0: none)
	invalidByte byte // its first offending byte
}

// add records line num (raw bytes b); it returns false once both kinds of lines were seen.
func (s *sniffed) add(num int, b []byte) bool {
	if utf8.Valid(b) {
		if s.utf8Line == 0 && !isASCII(b) {
			s.utf8Line = num
		}
	} else if s.invalidLine == 0 {
		s.invalidLine, s.invalidByte = num, b[firstInvalidUTF8(b)]
	}
	return s.utf8Line == 0 || s.invalidLine == 0
}

// sniffEncoding reads path line by line (never whole) and records which kinds of lines it has.
func sniffEncoding(path string, opts LineOptions) (*sniffed, error) {
	s := &sniffed{path: path}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("text: %w", err)
	}
	defer f.Close()
	err = readRawLines(f, path, opts, func(num int, b []byte) (bool, error) { return s.add(num, b), nil })
	return s, err
}

func isASCII(b []byte) bool {
	for _, c := range b {
		if c >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// resolveEncoding picks one encoding for files read together, or explains why none fits.
func resolveEncoding(files []*sniffed) (Encoding, error) {
	var utf8File, legacyFile *sniffed
	for _, f := range files {
		if f.utf8Line > 0 && f.invalidLine > 0 {
			return 0, fmt.Errorf("text: %s mixes encodings: line %d is UTF-8 but line %d is not (byte 0x%02x); "+
				"convert the file to a single encoding", f.path, f.utf8Line, f.invalidLine, f.invalidByte)
		}
		if f.utf8Line > 0 && utf8File == nil {
			utf8File = f
		}
		if f.invalidLine > 0 && legacyFile == nil {
			legacyFile = f
		}
	}
	switch {
	case utf8File != nil && legacyFile != nil:
		return 0, fmt.Errorf("text: files have unequal encodings: %s:%d is UTF-8, but %s:%d is not valid UTF-8 "+
			"(byte 0x%02x, likely Latin-1/Windows-1252); convert one of them (for example with "+
			"iconv -f windows-1252 -t utf-8) or set LineOptions.Encoding explicitly",
			utf8File.path, utf8File.utf8Line, legacyFile.path, legacyFile.invalidLine, legacyFile.invalidByte)
	case legacyFile != nil:
		return EncodingWindows1252, nil
	default:
		return EncodingUTF8, nil
	}
}
