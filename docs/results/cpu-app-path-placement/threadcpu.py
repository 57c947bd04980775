"""Samples per-thread CPU of all python processes; prints totals per (process cmd, thread name) at the end."""
import os, sys, time, signal, collections
tick = os.sysconf("SC_CLK_TCK")
first, last, names = {}, {}, {}
def scan():
    for pid in os.listdir("/proc"):
        if not pid.isdigit(): continue
        try:
            cmd = open(f"/proc/{pid}/cmdline","rb").read().split(b"\0")
            if b"python" not in cmd[0] and b"VLLM" not in open(f"/proc/{pid}/comm","rb").read(): continue
            pcomm = open(f"/proc/{pid}/comm").read().strip()
            label = pcomm + ":" + " ".join(c.decode()[-40:] for c in cmd[1:4])
            for tid in os.listdir(f"/proc/{pid}/task"):
                st = open(f"/proc/{pid}/task/{tid}/stat").read()
                comm = st[st.index("(")+1:st.rindex(")")]
                f = st[st.rindex(")")+2:].split()
                cpu = (int(f[11]) + int(f[12])) / tick
                key = (pid, tid)
                first.setdefault(key, cpu); last[key] = cpu; names[key] = (label, comm)
        except (FileNotFoundError, ProcessLookupError, IndexError, PermissionError):
            pass
stop = False
def on(*a):
    global stop; stop = True
signal.signal(signal.SIGTERM, on); signal.signal(signal.SIGINT, on)
while not stop:
    scan(); time.sleep(0.5)
agg = collections.Counter()
for key in last:
    agg[(key[0],) + names[key]] += last[key] - first[key]
for (pid, label, comm), s in sorted(agg.items(), key=lambda kv: -kv[1])[:40]:
    if s > 0.05: print(f"{s:8.2f} s  pid {pid} {label[:70]:70s} thread {comm}")
