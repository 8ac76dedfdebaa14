package cgouser

import "os/user"

// Name depends on os/user, which builds with cgo: type-checking it from source runs cgo.
func Name() string {
	u, err := user.Current()
	if err != nil {
		return ""
	}
	return u.Username
}
