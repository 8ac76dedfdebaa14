package testutil

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/goaccel/goaccel/internal/envvar"
)

// Pods are two "pods" of this machine for a test: network namespaces joined by a veth pair
// (10.232.N.1 and 10.232.N.2), removed when the test ends. Command runs a program in one of
// them as a pod runs it: on its own host name (a UTS namespace) and with an /etc/hosts (a mount
// namespace) that names both pods, as the cluster's DNS would.
type Pods struct {
	ns, addr [2]string
	hosts    string
	names    [2]string
}

// NeedPods makes two pods named names (a name may have a domain: job-node-0-0.job), or skips
// the test loudly (fails it under CI) when this is not root with ip and unshare.
func NeedPods(t testing.TB, names [2]string) *Pods {
	t.Helper()
	ip, ipErr := exec.LookPath("ip")
	_, unshareErr := exec.LookPath("unshare")
	if os.Geteuid() != 0 || ipErr != nil || unshareErr != nil {
		Missing(t, fmt.Sprintf("two pods as network namespaces need root, ip and unshare (euid %d; ip: %v; unshare: %v)",
			os.Geteuid(), ipErr, unshareErr), "run the test as root, as .ci/run does")
	}
	p := &Pods{names: names}
	n := int(podSets.Add(1))
	id, subnet := (os.Getpid()%10000)*10+n%10, 1+(os.Getpid()+n)%250
	veth := [2]string{fmt.Sprintf("gap%da", id), fmt.Sprintf("gap%db", id)}
	run := func(args ...string) {
		t.Helper()
		if out, err := exec.Command(ip, args...).CombinedOutput(); err != nil {
			t.Fatalf("ip %s: %v: %s", strings.Join(args, " "), err, out)
		}
	}
	var hosts strings.Builder
	hosts.WriteString("127.0.0.1 localhost\n")
	for i := range p.ns {
		p.ns[i] = fmt.Sprintf("goaccel-pod-%d-%d", id, i)
		p.addr[i] = fmt.Sprintf("10.232.%d.%d", subnet, i+1)
		run("netns", "add", p.ns[i])
		name := p.ns[i]
		t.Cleanup(func() { _ = exec.Command(ip, "netns", "del", name).Run() }) // takes its veth end along
		short, _, _ := strings.Cut(names[i], ".")
		fmt.Fprintf(&hosts, "%s %s %s\n", p.addr[i], names[i], short)
	}
	run("link", "add", veth[0], "type", "veth", "peer", "name", veth[1])
	for i := range p.ns {
		run("link", "set", veth[i], "netns", p.ns[i])
		run("-n", p.ns[i], "addr", "add", p.addr[i]+"/24", "dev", veth[i])
		run("-n", p.ns[i], "link", "set", veth[i], "up")
		run("-n", p.ns[i], "link", "set", "lo", "up")
	}
	p.hosts = filepath.Join(t.TempDir(), "hosts")
	if err := os.WriteFile(p.hosts, []byte(hosts.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// podSets counts the NeedPods of this process, for names and subnets of their own.
var podSets atomic.Int64

// Command is program with args run in pod i, with env as its environment (nil: this process's).
func (p *Pods) Command(i int, env []string, program string, args ...string) *exec.Cmd {
	short, _, _ := strings.Cut(p.names[i], ".")
	script := `mount --bind "$0" /etc/hosts && hostname "$1" && shift && exec "$@"`
	c := exec.Command("ip", append([]string{"netns", "exec", p.ns[i], "unshare", "--uts", "--mount", "sh", "-c", script,
		p.hosts, short, program}, args...)...)
	c.Env = env
	if env == nil {
		c.Env = envvar.Environ()
	}
	return c
}
