package loop

// A holds a B (b.go): a.go -> b.go.
type A struct{ b B }

func newA() A { return A{} }
