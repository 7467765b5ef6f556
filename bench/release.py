#!/usr/bin/env python3
"""Back-to-back commands whose close(2) waits for the kernel's RCU-deferred
frees unless they release their netlink socket (kernel.Release), side by side
with the reference tools, round-robin so that all variants share the load.

usage: release.py TAG N ref=/usr/sbin old=DIR new=DIR ...
Each variant VAR=DIR gets its own network namespace TAG-VAR; DIR holds
ipset, iptables and iptables-save (for ref: the Debian tools' directory; its
iptables is iptables-nft). Prints the median and quartiles in ms of:
  add      ipset add of a new address to a hash:ip maxelem 500000 holding
           100 000 entries (sharded in xdptables), one after another
  -D set   iptables -D of a rule with -m set --match-set (the parser's
           ipset lookup) right after its -A
  save     iptables-save right after an iptables -D
Root only; traffic none; the namespaces are deleted at the end.
"""
import ctypes, ipaddress, os, statistics, subprocess, sys, time

CLONE_NEWNET = 0x40000000
BASE = ipaddress.ip_address("198.18.0.0")  # 198.18.0.0/15
libc = ctypes.CDLL(None, use_errno=True)


def enter(ns):
    fd = os.open("/run/netns/" + ns, os.O_RDONLY)
    try:
        if libc.setns(fd, CLONE_NEWNET) != 0:
            raise OSError(ctypes.get_errno(), "setns " + ns)
    finally:
        os.close(fd)


def run(argv, stdin=None):
    r = subprocess.run(argv, input=stdin, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit("%s: rc %d: %s" % (" ".join(argv), r.returncode, r.stderr))


def timed(argv):
    t = time.perf_counter()
    run(argv)
    return (time.perf_counter() - t) * 1000


def main():
    tag, n = sys.argv[1], min(int(sys.argv[2]), 20000)
    variants = [a.split("=", 1) for a in sys.argv[3:]]
    home = os.open("/proc/self/ns/net", os.O_RDONLY)
    names = {v: "%s-%s" % (tag, v) for v, _ in variants}
    res = {v: {"add": [], "-D set": [], "save": []} for v, _ in variants}
    try:
        for v, d in variants:
            subprocess.run(["ip", "netns", "add", names[v]], check=True)
            enter(names[v])
            fill = "create s hash:ip maxelem 500000\n" + "".join(
                "add s %s\n" % (BASE + 1 + i) for i in range(100000))
            run([d + "/ipset", "restore"], fill)
            libc.setns(home, CLONE_NEWNET)
        for i in range(n):
            for v, d in variants:
                enter(names[v])
                ip = str(BASE + 110000 + i)
                res[v]["add"].append(timed([d + "/ipset", "add", "s", ip]))
                rule = ["INPUT", "-s", ip, "-m", "set", "--match-set", "s", "src", "-j", "DROP"]
                run([d + "/iptables", "-A"] + rule)
                res[v]["-D set"].append(timed([d + "/iptables", "-D"] + rule))
                run([d + "/iptables", "-A", "INPUT", "-s", ip, "-j", "DROP"])
                run([d + "/iptables", "-D", "INPUT", "-s", ip, "-j", "DROP"])
                res[v]["save"].append(timed([d + "/iptables-save"]))
                libc.setns(home, CLONE_NEWNET)
    finally:
        libc.setns(home, CLONE_NEWNET)
        for ns in names.values():
            subprocess.run(["ip", "netns", "del", ns])
    for what in ["add", "-D set", "save"]:
        line = []
        for v, _ in variants:
            q = statistics.quantiles(res[v][what], n=4)
            line.append("%s %.1f (%.1f-%.1f)" % (v, q[1], q[0], q[2]))
        print("%-7s %s" % (what, "   ".join(line)))


main()
