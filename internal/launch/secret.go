package launch

import (
	"bufio"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"time"

	"github.com/goaccel/goaccel/internal/envvar"
)

// The job secret. Every connection to the master's port is a launcher's and proves, before
// anything else, that it knows the job's secret, and the master proves it back:
//
//	master   -> launcher  cmd=challenge nonce=Nm
//	launcher -> master    cmd=auth nonce=Nl mac=HMAC-SHA256(secret, "goaccel launch: launcher" Nm Nl)
//	master   -> launcher  cmd=authok mac=HMAC-SHA256(secret, "goaccel launch: master" Nm Nl)
//
// Nm and Nl are 32 fresh random bytes from each side, so the secret never crosses the wire
// and an exchange captured on one connection proves nothing on another (the master's nonce
// differs). A connection that fails is refused, logged by the master, and closed; the job
// goes on. The ranks' MPI library speaks plain PMI-1 and cannot prove anything, so the ranks
// do not connect to the master: each talks to its own launcher over an inherited socket
// (PMI_FD), and the launchers relay (pmi.go).

// secretMinBytes is the shortest secret accepted.
const secretMinBytes = 16

// authWait bounds how long the master waits for a connection's proof.
const authWait = 10 * time.Second

// newSecret makes a random secret, for a job whose launchers this one starts itself (one node,
// or -H).
func newSecret() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// resolveSecret sets cfg.Secret: given, else $GOACCEL_JOB_SECRET from cfg.Env, else a new one
// for a job of one node. A job of several nodes without one is an error: every node's
// launcher must be given the same.
func (c *Config) resolveSecret() error {
	if c.Secret == "" {
		c.Secret, _ = envvar.Lookup(c.Env, envvar.JobSecret.Name)
	}
	switch {
	case c.Secret == "" && c.NNodes == 1:
		c.Secret = newSecret()
	case c.Secret == "":
		return fmt.Errorf("--nnodes %d: the launchers of a job of several nodes prove a shared secret to each other: "+
			"give every node's launcher the same one, in $%s or in a file only you can read (--job_secret_file FILE, mode 0600); "+
			"for example: export %s=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \\n')",
			c.NNodes, envvar.JobSecret.Name, envvar.JobSecret.Name)
	case len(c.Secret) < secretMinBytes:
		return fmt.Errorf("the job secret ($%s or --job_secret_file) has %d bytes: give at least %d", envvar.JobSecret.Name,
			len(c.Secret), secretMinBytes)
	}
	return nil
}

// readSecretFile reads the job secret from path ("-": standard input), the first line, which
// must be readable by its owner only when it is a file.
func readSecretFile(path string, stdin io.Reader) (string, error) {
	var r io.Reader = stdin
	if path != "-" {
		st, err := os.Stat(path)
		if err != nil {
			return "", fmt.Errorf("--job_secret_file %s: %w", path, err)
		}
		if st.Mode().IsRegular() && st.Mode().Perm()&0o077 != 0 {
			return "", fmt.Errorf("--job_secret_file %s: others may read it (mode %v): chmod 600 %s", path, st.Mode().Perm(), path)
		}
		f, err := os.Open(path)
		if err != nil {
			return "", fmt.Errorf("--job_secret_file %s: %w", path, err)
		}
		defer f.Close()
		r = f
	}
	line, err := bufio.NewReader(r).ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return "", fmt.Errorf("--job_secret_file %s: %w", path, err)
	}
	line = strings.TrimRight(line, "\r\n")
	if line == "" {
		return "", fmt.Errorf("--job_secret_file %s: empty: its first line is the secret", path)
	}
	return line, nil
}

// nonce is 32 fresh random bytes, in hex.
func nonce() string { return newSecret() }

// proof is the HMAC of one side of the exchange: who ("launcher" or "master") and both nonces.
func proof(secret, who, masterNonce, launcherNonce string) string {
	m := hmac.New(sha256.New, []byte(secret))
	fmt.Fprintf(m, "goaccel launch: %s\x00%s\x00%s", who, masterNonce, launcherNonce)
	return hex.EncodeToString(m.Sum(nil))
}

// admit runs the master's side of the exchange on a new connection: it returns nil when the
// client proved the secret, else why it is refused (the caller logs it and closes).
func (s *server) admit(c net.Conn, r *bufio.Reader) error {
	mine := nonce()
	p := &peerConn{conn: c}
	p.send(msg("challenge", "nonce", mine), true)
	_ = c.SetReadDeadline(time.Now().Add(authWait))
	line, err := readLine(r)
	_ = c.SetReadDeadline(time.Time{})
	if err != nil {
		return fmt.Errorf("no proof of the job secret within %s (%v)", authWait, err)
	}
	m := parseMessage(line, true)
	if m.cmd != "auth" || m.args["nonce"] == "" || m.args["mac"] == "" {
		if len(line) > 80 {
			line = line[:80] + "..."
		}
		return fmt.Errorf("no proof of the job secret (its first line: %q)", line)
	}
	want := proof(s.secret, "launcher", mine, m.args["nonce"])
	if !hmac.Equal([]byte(m.args["mac"]), []byte(want)) {
		p.send(msg("stop", "attempt", -1, "restart", 0, "kind", "join", "why", "the node_rank 0 launcher refused this "+
			"launcher: its job secret differs ($"+envvar.JobSecret.Name+" or --job_secret_file must be the same on every node)"), true)
		return errors.New("a wrong proof of the job secret (another secret, or an exchange replayed from another connection)")
	}
	p.send(msg("authok", "mac", proof(s.secret, "master", mine, m.args["nonce"])), true)
	return nil
}

// authenticate runs a launcher's side of the exchange on its new connection to the master:
// the challenge must come by l.ackBy (else the program on the port is not goaccel's master),
// and the master must prove the secret too.
func (l *launcher) authenticate(ctx context.Context) error {
	t := time.NewTimer(time.Until(l.ackBy))
	defer t.Stop()
	next := func() (message, error) {
		select {
		case m, ok := <-l.ctl.in:
			if !ok {
				return message{}, l.notMaster("it closed the connection without answering the join")
			}
			return m, nil
		case <-t.C:
			return message{}, &Failure{Kind: "join", Rank: -1, Why: fmt.Sprintf("something at %s accepted the connection "+
				"but did not answer as goaccel launch's node_rank 0 launcher within %s: check --master_addr and --master_port",
				l.masterAddr, l.ackLimit.Round(time.Millisecond))}
		case <-ctx.Done():
			return message{}, &Failure{Kind: "interrupt", Rank: -1, Why: "interrupted while connecting to the master"}
		}
	}
	m, err := next()
	if err != nil {
		return err
	}
	if m.cmd != "challenge" || m.args["nonce"] == "" {
		return l.notMaster(answered(m))
	}
	theirs, mine := m.args["nonce"], nonce()
	if err := l.ctl.send(msg("auth", "nonce", mine, "mac", proof(l.cfg.Secret, "launcher", theirs, mine))); err != nil {
		return l.lost(err)
	}
	if m, err = next(); err != nil {
		return err
	}
	switch {
	case m.cmd == "stop":
		return failureFrom(m)
	case m.cmd != "authok" || !hmac.Equal([]byte(m.args["mac"]), []byte(proof(l.cfg.Secret, "master", theirs, mine))):
		return &Failure{Kind: "join", Rank: -1, Why: fmt.Sprintf("the program at %s did not prove the job secret: "+
			"it is not this job's node_rank 0 launcher, or its $%s differs", l.masterAddr, envvar.JobSecret.Name)}
	}
	return nil
}
