package loop

// B makes an A (a.go): b.go -> a.go, closing the loop.
type B struct{}

func (B) make() A { return newA() }
