package loop

import "strings"

// c uses A from above the loop: c.go -> a.go, and no loop of its own.
func c(a A) string { return strings.ToUpper(fmtA(a)) }

func fmtA(a A) string {
	if a.b.make() == (A{}) {
		return "a"
	}
	return "?"
}
