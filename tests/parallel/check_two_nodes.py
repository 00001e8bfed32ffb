#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Two nodes on one machine: the code that only runs across nodes, run.

The test makes two network namespaces, each with its own host name (a UTS namespace entered at
launch) and one end of a veth pair it creates, and lets Open MPI start its daemons through a
launch agent that enters the other namespace instead of ssh (plm_rsh_agent); ranks talk over
TCP between the "nodes". Then, reading every result with h5py:

- dp 2 (one rank per node), tp 2 x pp 2 (two per node) and dp 2 with ZeRO-1 train the same
  model as one rank: per-step losses within 1e-4 over 5 steps;
- the run context lists both hosts, each rank's node (rank_nodes) and its node-local rank
  (rank_node_ranks, what picks a rank's GPU);
- the prediction the trainer stores places its groups where the ranks were: dp over the nodes
  on the site's inter-node link (nodes 2, dp_link inter_node), tp inside a node and the pipeline
  across; with a site whose inter-node link is the one this test measures between the
  namespaces, the predicted dp communication exceeds the same case's one-node prediction;
- a rank on the second node killed (SIGKILL) under `scalebench run`: the job ends within 30 s and
  the run is marked failed, naming that host.

Only addresses the test creates inside its own namespaces are used; everything it creates is
removed at the end, also when it fails. Needs root (network and UTS namespaces).

Usage: check_two_nodes.py SCALEBENCH MPIEXEC SITE CONFIG WORKDIR
"""
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time

import json

import h5py
import numpy as np
import yaml

scalebench, mpiexec, site_file, config, workdir = sys.argv[1:6]
tag = f"sbn{os.getpid()}"                 # names end in a/b (namespaces), va/vb (veth): <= 15 chars
octet = 16 + os.getpid() % 200          # 10.<octet>.77.0/24: inside the namespaces only
subnet = f"10.{octet}.77.0/24"
nodes = [  # (namespace, host name, address, veth end)
    (f"{tag}a", "sb-node-a", f"10.{octet}.77.1", f"{tag}va"),
    (f"{tag}b", "sb-node-b", f"10.{octet}.77.2", f"{tag}vb"),
]
STEPS = 5
problems = []


def sh(*args, check=True):
    return subprocess.run(list(args), check=check, capture_output=True, text=True)


def remove_stale_clusters():
    """Namespaces an earlier run of this test left when it was killed outright (its pid gone)."""
    for line in sh("ip", "netns", "list").stdout.splitlines():
        name = line.split()[0] if line.split() else ""
        match = re.fullmatch(r"sbn(\d+)[ab]", name)
        if match and not os.path.exists(f"/proc/{match.group(1)}"):
            sh("ip", "netns", "delete", name, check=False)


def make_cluster():
    remove_stale_clusters()
    for ns, _, _, _ in nodes:
        sh("ip", "netns", "add", ns)
    sh("ip", "link", "add", nodes[0][3], "type", "veth", "peer", "name", nodes[1][3])
    for ns, _, address, veth in nodes:
        sh("ip", "link", "set", veth, "netns", ns)
        sh("ip", "-n", ns, "addr", "add", f"{address}/24", "dev", veth)
        sh("ip", "-n", ns, "link", "set", veth, "up")
        sh("ip", "-n", ns, "link", "set", "lo", "up")


def remove_cluster():
    for ns, _, _, _ in nodes:  # deleting a namespace deletes its veth end, and so the pair
        sh("ip", "netns", "delete", ns, check=False)


def write_agent():
    """Open MPI's rsh launcher calls AGENT [options] HOST COMMAND...; ssh would run COMMAND in a
    shell on HOST: this runs it in HOST's namespace under HOST's name."""
    agent = os.path.join(workdir, "netns_agent.sh")
    cases = "\n".join(f'  {address}) ns={ns}; name={name} ;;' for ns, name, address, _ in nodes)
    with open(agent, "w") as f:
        f.write(f"""#!/bin/sh
while [ "${{1#-}}" != "$1" ]; do shift; done
host=$1; shift
case "$host" in
{cases}
  *) echo "netns_agent: no node $host" >&2; exit 255 ;;
esac
exec ip netns exec "$ns" unshare --uts /bin/sh -c "hostname $name && $*"
""")
    os.chmod(agent, 0o755)
    return agent


def mpi_env(agent, slots, extra=None):
    hostfile = os.path.join(workdir, f"hosts{slots}")
    with open(hostfile, "w") as f:
        f.writelines(f"{address} slots={slots}\n" for _, _, address, _ in nodes)
    env = dict(os.environ, OMPI_MCA_plm_rsh_agent=agent, OMPI_MCA_orte_default_hostfile=hostfile,
               OMPI_MCA_pml="ob1", OMPI_MCA_btl="self,vader,tcp", OMPI_MCA_btl_tcp_if_include=subnet,
               OMPI_MCA_oob_tcp_if_include=subnet, OMPI_MCA_rmaps_base_oversubscribe="1",
               OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1", SB_PROGRESS="lines")
    env.pop("SB_INJECT_FAILURE", None)
    env.update(extra or {})
    return env


def on_first_node(command, env, timeout):
    """Runs `command` in the first node's namespace under its host name (mpirun starts there)."""
    ns, name = nodes[0][0], nodes[0][1]
    wrapped = ["ip", "netns", "exec", ns, "unshare", "--uts", "/bin/sh", "-c", f'hostname {name} && exec "$@"', "sh"]
    return subprocess.run(wrapped + command, env=env, capture_output=True, text=True, timeout=timeout)


def train_args(out, sets):
    args = [scalebench, "train", "--config", config, "--out", out, "--set", f"steps={STEPS}", "--set", "batch.global=8",
            "--set", "threads=1", "--set", "eval_every=0", "--set", f"site={site_file_two_nodes}"]
    for s in sets:
        args += ["--set", s]
    return args


def the_run(path):
    f = h5py.File(path, "r")
    return f, f["runs"][list(f["runs"])[0]]


def text(value):
    return value.decode() if isinstance(value, bytes) else str(value)


def losses(path):
    f, run = the_run(path)
    with f:
        return np.array(run["steps"]["loss"], dtype=float)


def measured_inter_node_site():
    """This machine's site profile with its inter-node link replaced by the α/β of a ping-pong
    between the namespaces (scalebench calibrate --collective p2p over the two nodes)."""
    links = os.path.join(workdir, "links.h5")
    if os.path.exists(links):
        os.remove(links)
    job = on_first_node([mpiexec, "-np", "2", scalebench, "calibrate", "--out", links, "--collective", "p2p",
                         "--max-bytes", "4MiB"], mpi_env(agent, 1), 120)
    if job.returncode != 0:
        sys.exit(f"FAIL: the ping-pong between the nodes failed (exit {job.returncode}):\n{job.stderr[-3000:]}")
    with h5py.File(links, "r") as f:
        rows = f["calibration/p2p"][:]
    ours = rows[rows["path"] == b"scalebench"]
    beta, alpha = np.polyfit(ours["size_bytes"].astype(float), ours["time_s"], 1)
    bandwidth, latency = 1.0 / max(beta, 1e-15), max(alpha, 1e-7)
    with open(site_file) as f:
        site = yaml.safe_load(f)
    site["name"] = "two-namespaces"
    site["devices_per_node"] = 2
    site["nodes"] = 2
    site["links"]["inter_node"] = {"bandwidth": float(bandwidth), "latency": float(latency)}
    site.get("calibrated", {}).get("links", {}).pop("inter_node", None)
    kernels = site.get("calibrated", {}).get("kernel_times")
    if kernels:  # a relative table path resolves beside the profile
        shutil.copy(os.path.join(os.path.dirname(site_file), kernels), os.path.join(workdir, kernels))
    path = os.path.join(workdir, "two-namespaces.yaml")
    with open(path, "w") as f:
        f.write(f"# {site_file} with the inter-node link measured by check_two_nodes.py between two network\n"
                f"# namespaces over TCP on a veth pair: {bandwidth / 1e9:.3f} GB/s, {latency * 1e6:.1f} us one way.\n")
        yaml.safe_dump(site, f, sort_keys=False)
    print(f"inter-node link between the namespaces: {bandwidth / 1e9:.3f} GB/s, {latency * 1e6:.1f} us")
    return path


def check_placement(name, path, ranks_per_node, links):
    f, run = the_run(path)
    with f:
        context, prediction = run["context"].attrs, run["prediction"].attrs
        world = int(run.attrs["world_size"])
        expect_nodes = [r // ranks_per_node for r in range(world)]
        expect_local = [r % ranks_per_node for r in range(world)]
        if text(context["hostnames"]) != "sb-node-a,sb-node-b" or int(context["host_count"]) != 2:
            problems.append(f"{name}: context hostnames '{text(context['hostnames'])}', "
                            f"host_count {context['host_count']}")
        if list(context["rank_nodes"]) != expect_nodes:
            problems.append(f"{name}: rank_nodes {list(context['rank_nodes'])}, expected {expect_nodes}")
        if list(context["rank_node_ranks"]) != expect_local:
            problems.append(f"{name}: rank_node_ranks {list(context['rank_node_ranks'])}, expected {expect_local}")
        got = {"nodes": int(prediction["nodes"]), "ranks_per_node": int(prediction["ranks_per_node"]),
               "placement": text(prediction["placement"])}
        got.update({k: text(prediction[k]) for k in links})
        want = {"nodes": 2, "ranks_per_node": ranks_per_node, "placement": "observed", **links}
        if got != want:
            problems.append(f"{name}: prediction placement {got}, expected {want}")
        print(f"{name}: hosts {text(context['hostnames'])}, rank_nodes {list(context['rank_nodes'])}, "
              f"node ranks {list(context['rank_node_ranks'])}, prediction {got}, "
              f"dp_comm_s {prediction['dp_comm_s']:.3g}, p2p_s {prediction['p2p_s']:.3g}")
        return float(prediction["dp_comm_s"])


def check_losses(name, path, reference):
    got = losses(path)
    if len(got) != STEPS or np.max(np.abs(got - reference)) > 1e-4:
        problems.append(f"{name}: losses {got.tolist()} differ from one rank's {reference.tolist()} by more than 1e-4")
    else:
        print(f"{name}: same losses as one rank (max |difference| {np.max(np.abs(got - reference)):.2e})")


def predicted_on_one_node(sets):
    """`predict` of the same case on the same site: the site's own nodes (two ranks on one)."""
    cmd = [scalebench, "predict", "--config", config, "--site", site_file_two_nodes, "--json", "--set",
           "batch.global=8", "--set", "threads=1"] + [a for s in sets for a in ("--set", s)]
    job = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    if job.returncode != 0:
        sys.exit(f"FAIL: {' '.join(cmd)} exited {job.returncode}: {job.stderr[-2000:]}")
    return json.loads(job.stdout)


def kill_on_second_node():
    """A one-case suite under `scalebench run`, rank 1 (on sb-node-b) killed at step 3."""
    suite = os.path.join(workdir, "kill-suite.yaml")
    with open(suite, "w") as f:
        yaml.safe_dump({"suite": "two-node-kill", "description": "dp 2 over two nodes, rank 1 killed",
                        "base": {"model": "gpt-nano", "data": {"dataset": "sotu"}, "threads": 1, "steps": 400,
                                 "eval_every": 0, "batch": {"global": 8}, "strategy": {"dp": 2},
                                 "optimizer": {"type": "adamw", "lr": 1.0e-3}, "seed": 1},
                        "cases": [{"name": "dp2-two-nodes"}]}, f, sort_keys=False)
    out = os.path.join(workdir, "kill-results")
    shutil.rmtree(out, ignore_errors=True)
    env = mpi_env(agent, 1, {"SB_INJECT_FAILURE": "1:3:kill"})
    start = time.monotonic()
    try:
        job = on_first_node([scalebench, "run", suite, "--out", out, "--progress", "plain"], env, 90)
    except subprocess.TimeoutExpired:
        problems.append("kill: `scalebench run` was still running after 90 s (a hang)")
        return
    elapsed = time.monotonic() - start
    if job.returncode == 0:
        problems.append("kill: `scalebench run` exited 0 although a rank was killed")
    if elapsed > 30:
        problems.append(f"kill: the job took {elapsed:.1f} s to end (limit 30 s)")
    suite_file = os.path.join(out, "two-node-kill.h5")  # the suite's file, which the report reads
    if not os.path.exists(suite_file):
        problems.append(f"kill: no result file {suite_file}:\n{job.stderr[-3000:]}")
        return
    f, run = the_run(suite_file)
    with f:
        status, error = text(run.attrs["status"]), text(run.attrs["error"])
    print(f"kill: ended after {elapsed:.1f} s, exit {job.returncode}, status {status}, error: {error}")
    if status != "failed":
        problems.append(f"kill: status '{status}', not 'failed'")
    if "sb-node-b" not in error or "rank 1" not in error:
        problems.append(f"kill: the error '{error}' does not name rank 1 and host sb-node-b")


def cleanup(*_):
    remove_cluster()
    sys.exit("FAIL: interrupted")


if os.geteuid() != 0:
    sys.exit("FAIL: the two-node test makes network namespaces and needs root")
os.makedirs(workdir, exist_ok=True)
signal.signal(signal.SIGTERM, cleanup)
try:
    make_cluster()
    agent = write_agent()
    site_file_two_nodes = measured_inter_node_site()

    reference_out = os.path.join(workdir, "one-rank.h5")
    if os.path.exists(reference_out):
        os.remove(reference_out)
    one = subprocess.run(train_args(reference_out, []), capture_output=True, text=True, timeout=120,
                         env=mpi_env(agent, 1))
    if one.returncode != 0:
        sys.exit(f"FAIL: the one-rank reference exited {one.returncode}: {one.stderr[-2000:]}")
    reference = losses(reference_out)

    cases = [  # name, world, ranks per node, --set values, the links the prediction should use
        ("dp2", 2, 1, ["strategy.dp=2"], {"dp_link": "inter_node", "tp_link": "none", "pp_link": "none"}),
        ("tp2-pp2", 4, 2, ["strategy.tp=2", "strategy.pp=2", "strategy.micro_batches=2"],
         {"dp_link": "none", "tp_link": "intra_node", "pp_link": "inter_node"}),
        ("dp2-zero1", 2, 1, ["strategy.dp=2", "strategy.zero=1"],
         {"dp_link": "inter_node", "tp_link": "none", "pp_link": "none"}),
    ]
    for name, world, per_node, sets, links in cases:
        out = os.path.join(workdir, f"{name}.h5")
        if os.path.exists(out):
            os.remove(out)
        job = on_first_node([mpiexec, "-np", str(world)] + train_args(out, sets), mpi_env(agent, per_node), 180)
        if job.returncode != 0:
            problems.append(f"{name}: exit {job.returncode}:\n{job.stdout[-1500:]}\n{job.stderr[-3000:]}")
            continue
        check_losses(name, out, reference)
        dp_comm = check_placement(name, out, per_node, links)
        if name == "dp2":
            one_node = predicted_on_one_node(sets)
            print(f"dp2 predicted on one node: dp_link {one_node.get('dp_link')}, dp_comm_s {one_node.get('dp_comm_s')}")
            if one_node.get("dp_link") != "intra_node" or not dp_comm > float(one_node.get("dp_comm_s", 0)):
                problems.append(f"dp2: two-node dp_comm_s {dp_comm:.3g} should exceed the one-node prediction "
                                f"{one_node.get('dp_comm_s')} (link {one_node.get('dp_link')})")
    kill_on_second_node()
finally:
    remove_cluster()
leftover = [line for line in sh("ip", "netns", "list").stdout.splitlines() if line.startswith(tag)]
if leftover:
    problems.append(f"namespaces left behind: {leftover}")
if problems:
    sys.exit("FAIL:\n- " + "\n- ".join(problems))
print("PASS")
