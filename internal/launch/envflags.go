package launch

import (
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"

	"github.com/goaccel/goaccel/internal/envvar"
	flag "github.com/spf13/pflag"
)

// DefaultC10dPort is the port of --rdzv_endpoint HOST without one under --rdzv_backend c10d
// (torchrun's).
const DefaultC10dPort = 29400

// petFlags are the flags whose defaults torchrun reads from PET_<FLAG> (its elastic agent's
// environment, which Kubeflow's PyTorchJob and TrainJob set in every pod): a flag given on the
// command line wins.
var petFlags = []struct {
	flag string
	v    *envvar.Var
}{
	{"nnodes", envvar.PETNNodes.Var}, {"nproc-per-node", envvar.PETNprocPerNode.Var}, {"node-rank", envvar.PETNodeRank.Var},
	{"master-addr", envvar.PETMasterAddr.Var}, {"master-port", envvar.PETMasterPort.Var},
	{"rdzv-backend", envvar.PETRdzvBackend.Var}, {"rdzv-endpoint", envvar.PETRdzvEndpoint.Var}, {"rdzv-id", envvar.PETRdzvID.Var},
	{"rdzv-conf", envvar.PETRdzvConf.Var}, {"max-restarts", envvar.PETMaxRestarts.Var}, {"standalone", envvar.PETStandalone.Var},
}

// envDefaults sets the flags not given on the command line from the environment, as torchrun
// does from PET_*; then, in a task of a Slurm step of several nodes (goaccel launch run once
// per node by srun --ntasks-per-node=1), --nnodes, --node_rank, --master_addr and
// --master_port from Slurm's SLURM_STEP_NUM_NODES, SLURM_NODEID, the first host of
// SLURM_STEP_NODELIST and SlurmPort. It returns which variable gave each flag it set.
func envDefaults(fs *flag.FlagSet, env []string) (map[string]string, error) {
	from := map[string]string{}
	set := func(name, value, variable string) error {
		if err := fs.Set(name, value); err != nil {
			what := "a value of --" + snake(name)
			if f := fs.Lookup(name); f != nil && f.Value.Type() == "int" {
				what = "a whole number"
			}
			return fmt.Errorf("$%s=%q is not %s (torchrun reads it as --%s)", variable, value, what, snake(name))
		}
		from[name] = "$" + variable
		return nil
	}
	for _, p := range petFlags {
		v, ok := envvar.Lookup(env, p.v.Name)
		if ok && v == "" && p.flag == "standalone" {
			v = "1" // Kubeflow's PyTorchJob sets PET_STANDALONE to "" for standalone: true
		}
		if ok && strings.TrimSpace(v) != "" && !fs.Changed(p.flag) {
			if err := set(p.flag, strings.TrimSpace(v), p.v.Name); err != nil {
				return nil, err
			}
		}
	}
	get := func(v *envvar.Var) string { s, _ := envvar.Lookup(env, v.Name); return strings.TrimSpace(s) }
	if get(envvar.SlurmStepID.Var) == "" || fs.Changed("hosts") || fs.Changed("hostfile") || fs.Changed("standalone") {
		return from, nil
	}
	nodes, err := strconv.Atoi(get(envvar.SlurmStepNumNodes.Var))
	if err != nil || nodes < 2 {
		return from, nil // one node: nothing to meet across
	}
	if !fs.Changed("nnodes") {
		if err := set("nnodes", strconv.Itoa(nodes), envvar.SlurmStepNumNodes.Name); err != nil {
			return nil, err
		}
	}
	if !fs.Changed("master-addr") && !fs.Changed("rdzv-endpoint") {
		list, name := get(envvar.SlurmStepNodeList.Var), envvar.SlurmStepNodeList.Name
		if list == "" {
			list, name = get(envvar.SlurmJobNodeList.Var), envvar.SlurmJobNodeList.Name
		}
		host, err := FirstHost(list)
		if err != nil {
			return nil, fmt.Errorf("$%s: %w: give --master_addr", name, err)
		}
		if err := set("master-addr", host, name); err != nil {
			return nil, err
		}
	}
	if !fs.Changed("node-rank") && !fs.Changed("rdzv-backend") {
		// The node's place in the step's node list (SLURM_NODEID counts the job's nodes,
		// which a step may use part of).
		rank, name := get(envvar.SlurmNodeID.Var), envvar.SlurmNodeID.Name
		if hosts, err := ExpandHostList(get(envvar.SlurmStepNodeList.Var)); err == nil {
			if i := slices.Index(hosts, get(envvar.SlurmdNodeName.Var)); i >= 0 {
				rank, name = strconv.Itoa(i), envvar.SlurmdNodeName.Name+" in "+envvar.SlurmStepNodeList.Name
			}
		}
		if err := set("node-rank", rank, name); err != nil {
			return nil, err
		}
	}
	if !fs.Changed("master-port") && !fs.Changed("rdzv-endpoint") {
		job, _ := strconv.Atoi(get(envvar.SlurmJobID.Var))
		step, _ := strconv.Atoi(get(envvar.SlurmStepID.Var))
		if err := set("master-port", strconv.Itoa(SlurmPort(job, step)), envvar.SlurmJobID.Name); err != nil {
			return nil, err
		}
	}
	return from, nil
}

// snake writes a flag's name as torchrun spells it: node_rank.
func snake(name string) string { return strings.ReplaceAll(name, "-", "_") }

// renameFlags rewrites a message about a flag that a variable gave (from: envDefaults's) so
// that it names the variable as typed: "--nnodes "x": ..." becomes "$PET_NNODES (--nnodes) "x": ...".
func renameFlags(err error, from map[string]string) error {
	msg := err.Error()
	for f, v := range from {
		if strings.Contains(msg, v) {
			continue
		}
		for _, spelled := range []string{"--" + snake(f), "--" + f} {
			if i := strings.Index(msg, spelled); i >= 0 && !strings.HasPrefix(msg[i+len(spelled):], "_") &&
				!strings.HasPrefix(msg[i+len(spelled):], "-") {
				msg = msg[:i] + v + " (" + spelled + ")" + msg[i+len(spelled):]
				break
			}
		}
	}
	return fmt.Errorf("%s", msg)
}

// parseEndpoint reads --rdzv_endpoint HOST[:PORT] ([IPv6]:PORT too), port defaulting to dflt.
func parseEndpoint(v string, dflt int) (string, int, error) {
	host, port := v, dflt
	if h, p, err := net.SplitHostPort(v); err == nil {
		n, err := strconv.Atoi(p)
		if err != nil || n < 1 || n > 65535 {
			return "", 0, fmt.Errorf("--rdzv_endpoint %q: %q is not a port (1 to 65535)", v, p)
		}
		host, port = h, n
	} else if strings.Count(v, ":") == 1 {
		return "", 0, fmt.Errorf("--rdzv_endpoint %q: want HOST or HOST:PORT (%v)", v, err)
	}
	if strings.Trim(host, "[]") == "" {
		return "", 0, fmt.Errorf("--rdzv_endpoint %q: no host", v)
	}
	return strings.Trim(host, "[]"), port, nil
}
