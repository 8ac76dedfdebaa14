// Package shell quotes words for a POSIX shell: the command lines goaccel prints for a user to
// paste (a run's resume command) and the ones it hands to ssh (goaccel launch on other hosts).
package shell

import "strings"

// safe are the bytes a word may hold and stay unquoted: none of them is special to a POSIX
// shell anywhere in a word.
const safe = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./:=,@"

// Quote returns s as one word for a POSIX shell: unchanged when every byte is safe, else in
// single quotes (each single quote inside ends the quoted part, follows escaped by a
// backslash, and a new quoted part begins).
func Quote(s string) string {
	if s != "" && strings.Trim(s, safe) == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// Join quotes each word and joins them with spaces: a command line.
func Join(words []string) string {
	q := make([]string, len(words))
	for i, w := range words {
		q[i] = Quote(w)
	}
	return strings.Join(q, " ")
}
