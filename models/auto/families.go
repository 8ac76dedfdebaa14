package auto

// The built-in families, one line each: a new family in this module is its package, one
// adapter (a Family; see bert.go for one built on hfFamily) and one line here. A family of
// another module calls Register from its own package.
func init() {
	mustRegister(bertFamily)
	mustRegister(modernBERTFamily)
	mustRegister(debertaFamily)
	mustRegister(vitFamily)
	mustRegister(dinov2Family)
	mustRegister(resnetFamily)
	mustRegister(convnextFamily)
}
