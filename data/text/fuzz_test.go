package text

import (
	"strings"
	"testing"
)

// FuzzParseTSV checks ParseTSV and the streaming line reader on arbitrary input: no panic;
// accepted lines have the asked number of fields and give back the line; every line read is
// either parsed or counted as skipped; in strict mode the first bad line is named file:line.
func FuzzParseTSV(f *testing.F) {
	f.Add("a\tb\n", 2)
	f.Add("header\tlabel\nx\t1\r\ny\n\n", 2)
	f.Add("a\rb\r\r\nc\r", 1)
	f.Add("caf\xe9\t0\n\xff\xfe\t1", 2)
	f.Add("", 0)
	f.Add("\t\t\t", -1)
	f.Fuzz(func(t *testing.T, content string, numFields int) {
		n := numFields % 6 // <= 0: any number of fields
		for _, line := range strings.Split(content, "\n") {
			fields, err := ParseTSV(line, n)
			want := strings.Count(line, "\t") + 1
			if err != nil {
				if n <= 0 || want == n {
					t.Fatalf("ParseTSV(%q, %d) rejected a good line: %v", line, n, err)
				}
				continue
			}
			if n > 0 && len(fields) != n {
				t.Fatalf("ParseTSV(%q, %d) = %d fields", line, n, len(fields))
			}
			if strings.Join(fields, "\t") != line {
				t.Fatalf("ParseTSV(%q, %d) = %q does not give back the line", line, n, fields)
			}
		}

		parse := func(line string) ([]string, error) { return ParseTSV(line, n) }
		// A line ends at LF, CRLF or a lone CR.
		unified := strings.NewReplacer("\r\n", "\n", "\r", "\n").Replace(content)
		numLines := strings.Count(unified, "\n")
		if unified != "" && !strings.HasSuffix(unified, "\n") {
			numLines++
		}
		for _, enc := range []Encoding{EncodingUTF8, EncodingWindows1252} {
			var sk Skips
			parsed := 0
			err := scanLines(strings.NewReader(content), "fuzz.tsv", LineOptions{SkipMalformed: true, Encoding: enc},
				parse, &sk, func(fields []string) bool {
					if n > 0 && len(fields) != n {
						t.Fatalf("reader passed on %d fields, want %d", len(fields), n)
					}
					parsed++
					return true
				})
			if err != nil {
				t.Fatalf("skipping reader failed: %v", err)
			}
			if parsed+sk.Count != numLines {
				t.Fatalf("encoding %d: %d parsed + %d skipped != %d lines", enc, parsed, sk.Count, numLines)
			}
			var strict Skips
			err = scanLines(strings.NewReader(content), "fuzz.tsv", LineOptions{Encoding: enc}, parse, &strict,
				func([]string) bool { return true })
			if sk.Count == 0 && err != nil {
				t.Fatalf("strict reader failed where nothing was skipped: %v", err)
			}
			if sk.Count > 0 {
				firstLoc := sk.First[0][:strings.Index(sk.First[0][len("fuzz.tsv:"):], ":")+len("fuzz.tsv:")]
				if err == nil || !strings.HasPrefix(err.Error(), firstLoc+":") {
					t.Fatalf("strict reader: error %v, want one naming %s", err, firstLoc)
				}
			}
			if strict.Count != 0 {
				t.Fatalf("strict reader skipped %d lines", strict.Count)
			}
		}
	})
}
