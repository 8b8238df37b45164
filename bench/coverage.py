#!/usr/bin/env python3
"""Share of the code of postgres, mariadbd and node on huge pages, under
the preload's default span rule and HUGETEXT_COVER_ENDS=1, as installed
and after `hugetext edit --align` (on copies in /tmp/hugetext-coverage).
Usage: bench/coverage.py [STARTS [BUILD_DIR]]  (docs/usage.md's table)."""
import json, os, subprocess, sys, statistics
BUILD = sys.argv[2] if len(sys.argv) > 2 else 'build'
pre = os.path.abspath(os.path.join(BUILD, 'lib/libhugetext-preload.so'))
ALIGNED = '/tmp/hugetext-coverage'
progs = {'postgres': ['/usr/lib/postgresql/15/bin/postgres', ALIGNED + '/postgres'],
         'mariadbd': ['/usr/sbin/mariadbd', ALIGNED + '/mariadbd'],
         'node': ['/usr/bin/node', ALIGNED + '/node']}
args = {'postgres': ['--version'], 'mariadbd': ['--version'], 'node': ['-e', '0']}
def code_bytes(p):
    out = subprocess.run(['readelf', '-lW', p], capture_output=True, text=True).stdout
    return sum(int(l.split()[5], 16) for l in out.splitlines() if l.strip().startswith('LOAD') and 'E' in l.split()[6:-1])
N = int(sys.argv[1]) if len(sys.argv) > 1 else 10
os.makedirs(ALIGNED, exist_ok=True)
for name, (inst, al) in progs.items():
    if os.path.exists(inst):
        subprocess.run(['cp', inst, al], check=True)
        subprocess.run([os.path.join(BUILD, 'tools/hugetext'), 'edit', '--align', '--quiet', al], capture_output=True)
for name, (inst, al) in progs.items():
    if not os.path.exists(inst):
        continue
    for label, path in (('installed', inst), ('edit --align', al)):
        code = code_bytes(path)
        for ends in ('0', '1'):
            shares = []
            for i in range(N):
                rep = ALIGNED + '/report.json'
                if os.path.exists(rep): os.unlink(rep)
                env = dict(os.environ, LD_PRELOAD=pre, HUGETEXT_COPY='now', HUGETEXT_PAGE_CACHE='0', HUGETEXT_SHARE='0',
                           HUGETEXT_COVER_ENDS=ends, HUGETEXT_REPORT=rep)
                subprocess.run([path] + args[name], env=env, capture_output=True)
                got = 0
                for l in open(rep):
                    r = json.loads(l)
                    if r.get('status') == 'ok' and r['huge_bytes'] == r['bytes']:
                        got += r.get('private_code_bytes', 0)
                shares.append(got / code)
            print(f"{name:9s} {label:13s} cover_ends={ends} code {code/2**20:5.2f} MiB  on huge pages: mean {100*statistics.mean(shares):5.1f}%  min {100*min(shares):5.1f}%  max {100*max(shares):5.1f}%  (n={N})", flush=True)
