package launch

import (
	"bufio"
	"fmt"
	"net/url"
	"os"
	"sort"
	"strings"
)

// A message is one line of the wire protocol spoken on the master's port: "cmd=NAME k=v k=v\n".
// MPI ranks speak MPICH's simple PMI-1 dialect on it (values never hold spaces there); the
// launchers of the nodes speak goaccel's own commands on the same port, whose values are
// URL-escaped so that they may carry any text.
type message struct {
	cmd  string
	args map[string]string
}

// parseMessage splits one line into its command and its key=value pairs. Words without '='
// are ignored, as MPICH's own server does.
func parseMessage(line string, escaped bool) message {
	m := message{args: map[string]string{}}
	for _, w := range strings.Fields(line) {
		k, v, ok := strings.Cut(w, "=")
		if !ok {
			continue
		}
		if escaped {
			if u, err := url.QueryUnescape(v); err == nil {
				v = u
			}
		}
		if k == "cmd" {
			m.cmd = v
			continue
		}
		m.args[k] = v
	}
	return m
}

// format writes m as a line. PMI replies (escaped=false) keep their values as they are.
func (m message) format(escaped bool) string {
	var b strings.Builder
	b.WriteString("cmd=" + m.cmd)
	keys := make([]string, 0, len(m.args))
	for k := range m.args {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v := m.args[k]
		if escaped {
			v = url.QueryEscape(v)
		}
		b.WriteString(" " + k + "=" + v)
	}
	b.WriteByte('\n')
	return b.String()
}

// msg builds a message from alternating keys and values.
func msg(cmd string, kv ...any) message {
	m := message{cmd: cmd, args: map[string]string{}}
	for i := 0; i+1 < len(kv); i += 2 {
		m.args[fmt.Sprint(kv[i])] = fmt.Sprint(kv[i+1])
	}
	return m
}

// readLine reads one line of at most 64 KiB (PMI's values are at most 1 KiB).
func readLine(r *bufio.Reader) (string, error) {
	line, err := r.ReadString('\n')
	if err != nil {
		return "", err
	}
	if len(line) > 64<<10 {
		return "", fmt.Errorf("line of %d bytes is too long", len(line))
	}
	return strings.TrimRight(line, "\r\n"), nil
}

// maxMultiline bounds the lines of one multi-line PMI command.
const maxMultiline = 4096

// readMultiline reads the rest of a multi-line PMI command whose first line ("mcmd=NAME") is
// first: one key=value a line (the value may hold spaces) up to a line "endcmd". The command
// is NAME; keys given twice keep their last value.
func readMultiline(r *bufio.Reader, first string) (message, error) {
	m := message{cmd: strings.TrimPrefix(first, "mcmd="), args: map[string]string{}}
	for i := 0; ; i++ {
		if i == maxMultiline {
			return m, fmt.Errorf("multi-line command %s has more than %d lines", m.cmd, maxMultiline)
		}
		line, err := readLine(r)
		if err != nil {
			return m, err
		}
		if pmiDebug {
			fmt.Fprintf(os.Stderr, "goaccel launch: debug:   %s\n", line)
		}
		if strings.TrimSpace(line) == "endcmd" {
			return m, nil
		}
		if k, v, ok := strings.Cut(line, "="); ok {
			m.args[strings.TrimSpace(k)] = v
		}
	}
}

// processMapping describes which ranks share a node, in MPICH's PMI_process_mapping format:
// "(vector,(first node,node count,ranks per node),...)" over blocks of consecutive nodes with
// the same number of ranks; ranks are numbered node after node. MPICH uses it to choose shared
// memory between the ranks of one node and the network between nodes.
func processMapping(nprocs []int) string {
	var b strings.Builder
	b.WriteString("(vector")
	for i := 0; i < len(nprocs); {
		j := i
		for j < len(nprocs) && nprocs[j] == nprocs[i] {
			j++
		}
		fmt.Fprintf(&b, ",(%d,%d,%d)", i, j-i, nprocs[i])
		i = j
	}
	b.WriteString(")")
	return b.String()
}
