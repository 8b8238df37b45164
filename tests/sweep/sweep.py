#!/usr/bin/env python3
"""The machine-wide compatibility sweep: every ELF program of the standard
binary directories, run with --version in a sandbox (tests/sweep/sandbox.sh),
once plain and once under the preload in each setting; any difference the
preload causes (exit status, stdout, stderr, crash, hang) makes it exit 1.
It also adds up, from the preload's report, the private huge pages each
process got against the code they cover.  Writes docs/compat-sweep.md.

As root (the sandbox needs namespaces and mounts):
    tests/sweep/sweep.py --build BUILD_DIR [--limit N] [--only REGEX] [--jobs 1|2]
"""

import argparse
import datetime
import fnmatch
import glob
import json
import os
import platform
import re
import shutil
import signal
import struct
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.dirname(os.path.dirname(HERE))
DIRS = ['/usr/bin', '/usr/sbin', '/bin', '/sbin', '/usr/local/bin', '/usr/lib/jvm/*/bin',
        '~/.cargo/bin']
UNSHARE = ['unshare', '--mount', '--pid', '--fork', '--net', '--uts', '--ipc', '--kill-child']
# Inside the sandbox: the share directory, and the fixed environment.
SRV = '/srv'
BASE_ENV = ['PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin',
            'HOME=/tmp/home', 'LANG=C']
PRELOAD = SRV + '/lib/libhugetext-preload.so'
# name -> (extra environment, content of /etc/ld.so.preload or None)
CONFIGS = {
    'default': (['LD_PRELOAD=' + PRELOAD], None),
    'match': (['LD_PRELOAD=' + PRELOAD, 'HUGETEXT_MATCH=.'], None),
    'ld.so.preload': ([], PRELOAD),
}
HUGE = 2 << 20
# The sandbox's `timeout -s KILL` stopped the program: 128 + SIGKILL.
HANG = 137


def find_programs():
    """Executable ELF files, one path per file (the first found), sorted."""
    seen, out = set(), []
    for pattern in DIRS:
        for d in sorted(glob.glob(os.path.expanduser(pattern))):
            try:
                names = sorted(os.listdir(d))
            except OSError:
                continue
            for n in names:
                p = os.path.join(d, n)
                real = os.path.realpath(p)
                if real in seen or not os.path.isfile(real) or not os.access(real, os.X_OK):
                    continue
                try:
                    with open(real, 'rb') as f:
                        if f.read(4) != b'\x7fELF':
                            continue
                except OSError:
                    continue
                seen.add(real)
                out.append((p, real))
    return out


def read_deny(path):
    """(pattern, group comment) pairs of the deny list."""
    rules, group = [], ''
    with open(path) as f:
        for line in f:
            line = line.strip()
            if line.startswith('#'):
                group = line.lstrip('# ')
            elif line:
                rules.append((line, group))
    return rules


def is_static(path):
    """True for an ELF64 file without PT_INTERP: no dynamic loader, no preload."""
    try:
        with open(path, 'rb') as f:
            h = f.read(64)
            phoff, = struct.unpack_from('<Q', h, 32)
            phentsize, phnum = struct.unpack_from('<HH', h, 54)
            f.seek(phoff)
            ph = f.read(phentsize * phnum)
        return not any(struct.unpack_from('<I', ph, i * phentsize)[0] == 3 for i in range(phnum))
    except (OSError, struct.error):
        return False


def denied(rules, path, real):
    for pat, group in rules:
        if fnmatch.fnmatchcase(os.path.basename(path), pat) or \
                fnmatch.fnmatchcase(os.path.basename(real), pat):
            return group
    return None


class Sweep:
    def __init__(self, args):
        self.a = args
        self.work = os.path.abspath(args.work)
        self.reports = os.path.join(self.work, 'reports')

    def prepare(self):
        """A private copy of the preload (a rebuild during the sweep changes nothing)."""
        shutil.rmtree(self.work, ignore_errors=True)
        os.makedirs(os.path.join(self.work, 'lib'))
        os.makedirs(self.reports)
        shutil.copy2(self.a.preload, os.path.join(self.work, 'lib', 'libhugetext-preload.so'))

    def run(self, path, config, tag):
        """One run of `path --version`: (status, stdout, stderr) and the report path."""
        env, ldso = list(BASE_ENV), None
        report = None
        if config != 'plain':
            extra, ldso = CONFIGS[config]
            name = '%s-%s-%s.json' % (re.sub(r'[^A-Za-z0-9.]+', '_', path), config, tag)
            report = os.path.join(self.reports, name)
            env += extra + ['HUGETEXT_REPORT=%s/reports/%s' % (SRV, name)]
        cmd = UNSHARE + [os.path.join(HERE, 'sandbox.sh'), self.work, ldso or '-',
                         str(self.a.timeout), 'env', '-i'] + env + [path, '--version']
        try:
            p = subprocess.run(cmd, stdin=subprocess.DEVNULL, capture_output=True,
                               timeout=self.a.timeout + 60, start_new_session=True,
                               env={'PATH': os.environ.get('PATH', '/usr/bin:/bin')})
            status = p.returncode if p.returncode >= 0 else 128 - p.returncode
            return (status, p.stdout, p.stderr), report
        except subprocess.TimeoutExpired as e:
            # The sandbox itself did not finish: counts as a hang.
            return (HANG, e.stdout or b'', e.stderr or b''), report

    def program(self, path):
        """All runs of one program and its verdict."""
        plain, _ = self.run(path, 'plain', '1')
        res = {'path': path, 'reports': {}, 'plain_status': plain[0]}
        differ = []
        for c in self.a.configs:
            r, rep = self.run(path, c, '1')
            res['reports'][c] = [rep]
            if r != plain:
                differ.append((c, r))
        if not differ:
            res['verdict'] = 'identical'
            return res
        # Is it the program's own nondeterminism?  Two more plain runs, and
        # each differing setting once more.
        plains = [plain] + [self.run(path, 'plain', str(i))[0] for i in (2, 3)]
        if any(p != plain for p in plains):
            res['verdict'] = 'nondeterministic'
            res['why'] = describe(plain, next(p for p in plains if p != plain))
            return res
        again = {}
        for c, r in differ:
            r2, rep = self.run(path, c, '2')
            res['reports'][c].append(rep)
            again[c] = r2
        if all(self.one_off(path, c, plain, r, again[c]) for c, r in differ):
            res['verdict'] = 'nondeterministic'
            res['why'] = '; '.join('%s once: %s (its re-runs matched plain)' % (c, describe(plain, r))
                                   for c, r in differ)
            return res
        res['verdict'] = 'difference'
        res['differences'] = [{'config': c, 'what': describe(plain, r),
                               'again': 'same' if again[c] == r else
                               ('identical to plain' if again[c] == plain else 'differs again')}
                              for c, r in differ]
        return res


    def one_off(self, path, config, plain, first, again):
        """Whether a setting's difference was the program's timing, not the preload.

        Output that changed once, with the same exit status, and came back as
        plain's on the re-run: the program races with itself (groff's pipeline
        prints in either order); the preload only shifted the timing.  A hang
        on a loaded machine (a JVM near the time limit) is a one-off when two
        more runs match plain as well.  A crash or another exit status is
        never one."""
        if again != plain:
            return False
        if first[0] == plain[0]:
            return True
        if first[0] != HANG:
            return False
        return all(self.run(path, config, str(i))[0] == plain for i in (3, 4))


def describe(a, b):
    """What differs between two (status, out, err) results, in a few words."""
    def word(status):
        if status == HANG:
            return 'hang'
        if status > 128:
            return 'signal %d' % (status - 128)
        return 'exit %d' % status
    what = []
    if a[0] != b[0]:
        what.append('%s -> %s' % (word(a[0]), word(b[0])))
    for name, x, y in (('stdout', a[1], b[1]), ('stderr', a[2], b[2])):
        if x != y:
            what.append('%s: %s' % (name, first_change(x, y)))
    return '; '.join(what)


def first_change(x, y):
    """The first line where two outputs part, shown briefly."""
    xl, yl = x.split(b'\n'), y.split(b'\n')
    for i in range(max(len(xl), len(yl))):
        u = xl[i] if i < len(xl) else b'<end>'
        v = yl[i] if i < len(yl) else b'<end>'
        if u != v:
            return 'line %d %r -> %r' % (i + 1, u[:80].decode(errors='replace'),
                                         v[:80].decode(errors='replace'))
    return 'same lines'


# --- memory: private huge pages against the code they cover -----------------

def exec_segments(path, cache={}):
    """(is_exec_type, max p_align, [(vaddr, memsz)] of PF_X PT_LOADs) of an ELF64 file."""
    if path in cache:
        return cache[path]
    out = None
    try:
        with open(path, 'rb') as f:
            h = f.read(64)
            if len(h) == 64 and h[:4] == b'\x7fELF' and h[4] == 2 and h[5] == 1:
                e_type = struct.unpack_from('<H', h, 16)[0]
                phoff, = struct.unpack_from('<Q', h, 32)
                phentsize, phnum = struct.unpack_from('<HH', h, 54)
                f.seek(phoff)
                ph = f.read(phentsize * phnum)
                align, segs = 0, []
                for i in range(phnum):
                    p_type, p_flags, _, p_vaddr, _, _, p_memsz, p_align = \
                        struct.unpack_from('<IIQQQQQQ', ph, i * phentsize)
                    if p_type == 1:
                        align = max(align, p_align)
                        if p_flags & 1:
                            segs.append((p_vaddr, p_memsz))
                out = (e_type == 2, align, segs)
    except (OSError, struct.error):
        pass
    cache[path] = out
    return out


def code_in_region(line):
    """Bytes of code in a report region, and whether the figure is exact.

    Taken from the report when it says (private_code_bytes: the code under
    the private huge pages); else from the object's
    program headers: the region starts at the first 2 MiB boundary of its
    segment, so the segment starts (-p_vaddr mod 2 MiB) before it when the
    load address is a multiple of 2 MiB (non-PIE programs, and objects with
    p_align >= 2 MiB, which glibc loads so aligned).  Otherwise the load
    address is unknown modulo 2 MiB and min(region, segment) is an upper
    bound."""
    if 'private_code_bytes' in line:
        return int(line['private_code_bytes']), True
    start, end = int(line['start']), int(line['end'])
    elf = exec_segments(line.get('object', ''))
    if not elf or not elf[2]:
        return end - start, False
    is_exec, align, segs = elf
    exact = is_exec or align >= HUGE
    best = 0
    for vaddr, memsz in segs:
        if exact:
            seg_start = start - ((-vaddr) % HUGE) if not is_exec else vaddr
            if is_exec and not (vaddr <= start < vaddr + memsz + HUGE):
                continue
            code = max(0, min(end, seg_start + memsz) - max(start, seg_start))
        else:
            code = min(end - start, memsz)
        best = max(best, code)
    return best, exact


def private_huge(line):
    """Private huge bytes of a region: what it copied onto huge pages.

    Taken from the report when it says (private_huge_bytes); else
    huge_bytes less kept_bytes (the page cache's own pages, shared)."""
    if 'private_huge_bytes' in line:
        return int(line['private_huge_bytes'])
    if line.get('status') != 'ok' or line.get('cache'):
        return 0
    return max(0, int(line.get('huge_bytes', 0)) - int(line.get('kept_bytes', 0)))


def read_lines(path):
    out = []
    try:
        with open(path) as f:
            for text in f:
                text = text.strip()
                if text:
                    try:
                        out.append(json.loads(text))
                    except ValueError:
                        out.append({'status': 'unparsable'})
    except OSError:
        pass
    return out


def memory(results, configs):
    """Per setting: totals, the processes, and the regions spending > 2x their code."""
    table = {}
    for c in configs:
        t = {'processes': 0, 'regions': 0, 'ok': 0, 'skipped': 0, 'failed': 0,
             'private': 0, 'code': 0, 'kept': 0, 'estimated': 0, 'procs': [], 'flagged': [],
             'silent': []}
        for res in results:
            reports = res.get('reports', {}).get(c)
            if not reports:
                continue
            by_pid = {}
            for line in read_lines(reports[0]):
                by_pid.setdefault(line.get('pid'), []).append(line)
            if not by_pid:
                t['silent'].append(res['path'])
            for pid, lines in by_pid.items():
                t['processes'] += 1
                priv = code = 0
                for line in lines:
                    t['regions'] += 1
                    st = line.get('status', 'unparsable')
                    t[st if st in ('ok', 'skipped', 'failed') else 'failed'] += 1
                    if st == 'failed':
                        t.setdefault('failures', []).append((res['path'], line))
                    t['kept'] += int(line.get('kept_bytes', 0))
                    p = private_huge(line)
                    if not p:
                        continue
                    n, exact = code_in_region(line)
                    # Kept pages are whole pages of code: the private ones cover the rest.
                    if 'private_code_bytes' not in line:
                        n = max(0, n - int(line.get('kept_bytes', 0)))
                    t['estimated'] += not exact
                    priv += p
                    code += n
                    if p > 2 * n:
                        t['flagged'].append((res['path'], line.get('object', '?'), n, p, exact))
                t['private'] += priv
                t['code'] += code
                if priv:
                    t['procs'].append((res['path'], priv, code))
        table[c] = t
    return table


# --- the summary --------------------------------------------------------------

def kib(n):
    return '{:,}'.format(n // 1024)


def mib(n):
    return '{:,.1f}'.format(n / (1 << 20))


def repro(path, config):
    extra, ldso = CONFIGS[config]
    env = ' '.join(BASE_ENV + [e.replace(PRELOAD, '$PRELOAD') for e in extra])
    if ldso:
        return ('tests/sweep/sweep.py --build BUILD --only %s --configs ld.so.preload'
                % shlex_quote('^' + re.escape(path) + '$'))
    return 'env -i %s %s --version </dev/null' % (env, path)


def shlex_quote(s):
    import shlex
    return shlex.quote(s)


def setting(path):
    try:
        with open(path) as f:
            s = f.read().strip()
        m = re.search(r'\[(\w+)\]', s)
        return m.group(1) if m else s
    except OSError:
        return '?'


def write_doc(a, counts, results, mem, started, seconds):
    commit = a.commit
    libc = platform.libc_ver()
    o = []
    w = o.append
    w('# Compatibility sweep\n')
    w('Every ELF program of this machine\'s standard binary directories (%s), run with '
      '`--version` in a sandbox, plain and under the preload, by:\n' % ', '.join(
          '`%s`' % d for d in DIRS))
    w('```sh\n%s\n```\n' % a.command)
    w('Sandbox (tests/sweep/sandbox.sh): own mount, pid, net, uts and ipc namespaces; '
      'the root file system read-only; a private tmpfs `/tmp`; `HOME=/tmp/home`, '
      '`LANG=C`, a fixed `PATH`; stdin `/dev/null`; a `/dev` of a few character '
      'devices; no module, boot, clock, raw-I/O or admin capability; killed after '
      '%d s.  Settings: `default` (LD_PRELOAD), `match` (LD_PRELOAD and '
      '`HUGETEXT_MATCH=.`), `ld.so.preload` (the preload in a bind-mounted '
      '`/etc/ld.so.preload`, in the sandbox only).  Each with `HUGETEXT_REPORT` '
      'pointing at a file per run.  When a setting differs from plain, plain runs '
      'twice more and the setting once more: a program whose plain runs differ '
      'among themselves is *nondeterministic*, and so is one whose output (not '
      'its exit status) differed once and matched plain on the re-run, or that '
      'was killed at the time limit once and matched plain on three re-runs; '
      'otherwise it is a *difference*.  '
      'Nothing in the output is normalised.\n' % a.timeout)
    w('Configuration: %s, Linux %s, %s %s, THP `%s`, defrag `%s`, preload built '
      'from `%s` (the tree\'s HEAD when the sweep started); %s UTC, %d min, %d job(s).\n' % (
          platform.node() or 'host', platform.release(), libc[0], libc[1],
          setting('/sys/kernel/mm/transparent_hugepage/enabled'),
          setting('/sys/kernel/mm/transparent_hugepage/defrag'), commit,
          started.strftime('%Y-%m-%d %H:%M'), seconds // 60, a.jobs))
    w('## Results\n')
    w('| programs | run | skipped (deny list) | identical | nondeterministic | differences |')
    w('|---:|---:|---:|---:|---:|---:|')
    w('| %d | %d | %d | %d | %d | %d |\n' % (
        counts['programs'], counts['run'], counts['denied'], counts['identical'],
        counts['nondeterministic'], counts['difference']))
    w('%d of the programs run are static (no `PT_INTERP`): no preload reaches them, '
      'so they have no report line.  %d are set-user-ID or set-group-ID: the dynamic '
      'loader ignores `LD_PRELOAD` for them and the library ignores `HUGETEXT_*` '
      '(so `HUGETEXT_REPORT`): they have no report line either.\n' % (counts['static'], counts['setid']))
    if counts['groups']:
        w('Left out by tests/sweep/deny.txt: %s.\n' % '; '.join(
            '%d: %s' % (n, g.rstrip('.').lower()) for g, n in
            sorted(counts['groups'].items(), key=lambda x: -x[1])))
    hung = [r['path'] for r in results if r['plain_status'] == HANG]
    if hung:
        w('Killed after %d s in their plain run: %s.\n' % (
            a.timeout, ', '.join('`%s`' % p for p in hung)))
    crashed = [r['path'] for r in results if 128 < r['plain_status'] < 160 and r['plain_status'] != HANG]
    if crashed:
        w('Killed by a signal in their plain run: %s.\n' % (
            ', '.join('`%s`' % p for p in crashed)))
    if a.stopped:
        w('(Stopped by a signal after %d of the %d programs to run.)\n' % (
            counts['run'], counts['chosen'] - counts['denied']))
    if a.limit or a.only:
        w('(A partial run: `--limit`/`--only` chose %d of the programs.)\n' % counts['chosen'])
    diffs = [r for r in results if r['verdict'] == 'difference']
    if diffs:
        w('### Differences the preload causes\n')
        w('| program | setting | what differed | run again | reproducer |')
        w('|---|---|---|---|---|')
        for r in diffs:
            for d in r['differences']:
                w('| `%s` | %s | %s | %s | `%s` |' % (
                    r['path'], d['config'], d['what'].replace('|', '\\|'), d['again'],
                    repro(r['path'], d['config'])))
        w('\n`$PRELOAD` is the build\'s `lib/libhugetext-preload.so`.\n')
    nondet = [r for r in results if r['verdict'] == 'nondeterministic']
    if nondet:
        w('### Nondeterministic programs\n')
        w('| program | what differed |')
        w('|---|---|')
        for r in nondet:
            w('| `%s` | %s |' % (r['path'], r['why'].replace('|', '\\|')))
        w('')
    w('## Memory: private huge pages against the code they cover\n')
    w('From the report lines of the first run in each setting.  *Private* is '
      'what the preload copied onto huge pages, *code* the code those pages '
      'cover: the report\'s `private_huge_bytes` and `private_code_bytes` when it '
      'has them.  Without them: private is `huge_bytes - kept_bytes` of the `ok` '
      'regions (kept pages are the page cache\'s, shared), and code is the '
      'object\'s executable segment inside the region (from its program '
      'headers) less the kept bytes: exact when the load address is a multiple '
      'of 2 MiB (non-PIE programs, `p_align` >= 2 MiB), else an upper bound '
      '(*estimated* regions).  A region is flagged when private > 2 x code.  '
      'A program\'s runs go plain, default, match, ld.so.preload: the first that '
      'copies some code reads it back into the page cache as 2 MiB pages, and the '
      'later settings keep those pages (kept) instead of copying them again.\n')
    w('| setting | programs without a report line | processes | regions | ok | skipped '
      '| failed | private MiB | code MiB | kept MiB | regions estimated | flagged regions |')
    w('|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|')
    for c, t in mem.items():
        w('| %s | %d | %d | %d | %d | %d | %d | %s | %s | %s | %d | %d |' % (
            c, len(t['silent']), t['processes'], t['regions'], t['ok'], t['skipped'], t['failed'],
            mib(t['private']), mib(t['code']), mib(t['kept']), t['estimated'],
            len(t['flagged'])))
    w('')
    # A program the preload reported on in one setting and not in another
    # switched the library off (or never loaded it): worth a look.
    reported = set()
    for t in mem.values():
        reported |= {r['path'] for r in results if r.get('reports')} - set(t['silent'])
    for c, t in mem.items():
        odd = [p for p in t['silent'] if p in reported]
        if odd:
            w('No report line in %s, though another setting has them: %s.\n' % (
                c, ', '.join('`%s`' % p for p in odd[:30])))
    for c, t in mem.items():
        if t.get('failures'):
            w('Failed regions (%s): %s.\n' % (c, '; '.join(
                '`%s` %s (%s)' % (p, l.get('object', '?'), l.get('error', '?'))
                for p, l in t['failures'][:10])))
    for c, t in mem.items():
        if not t['flagged']:
            continue
        w('### Regions spending more than twice their code (%s)\n' % c)
        w('| object | processes | code KiB | private KiB | exact |')
        w('|---|---:|---:|---:|---|')
        by_obj = {}
        for prog, obj, n, p, exact in t['flagged']:
            e = by_obj.setdefault(obj, [0, n, p, exact])
            e[0] += 1
        for obj, (cnt, n, p, exact) in sorted(by_obj.items(), key=lambda x: -x[1][0]):
            w('| `%s` | %d | %s | %s | %s |' % (obj, cnt, kib(n), kib(p), 'yes' if exact else 'bound'))
        w('')
    for c, t in mem.items():
        procs = sorted(t['procs'], key=lambda x: -x[1])[:15]
        if not procs:
            continue
        w('### Processes with the most private huge pages (%s)\n' % c)
        w('| program | private KiB | code KiB | private / code |')
        w('|---|---:|---:|---:|')
        for prog, p, n in procs:
            w('| `%s` | %s | %s | %s |' % (prog, kib(p), kib(n), '%.2f' % (p / n) if n else '-'))
        w('')
    with open(a.out, 'w') as f:
        f.write('\n'.join(o))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--build', default=os.path.join(SOURCE, 'build'),
                    help='build directory with lib/libhugetext-preload.so')
    ap.add_argument('--preload', help='the preload (default: BUILD/lib/libhugetext-preload.so)')
    ap.add_argument('--limit', type=int, default=0, help='run the first N programs only')
    ap.add_argument('--only', help='run the programs whose path matches this regular expression')
    ap.add_argument('--jobs', type=int, default=1, choices=(1, 2), help='programs at a time')
    ap.add_argument('--timeout', type=int, default=5, help='seconds per run')
    ap.add_argument('--configs', default=','.join(CONFIGS),
                    help='settings to compare with plain (default: all)')
    ap.add_argument('--work', default='/tmp/hugetext-sweep', help='preload copy and reports')
    ap.add_argument('--out', default=os.path.join(SOURCE, 'docs', 'compat-sweep.md'),
                    help="the summary ('-': none)")
    a = ap.parse_args()
    a.stopped = False
    a.command = ' '.join(['tests/sweep/sweep.py'] + [shlex_quote(x) for x in sys.argv[1:]])
    a.commit = subprocess.run(['git', '-C', SOURCE, 'log', '-1', '--format=%h %s'],
                              capture_output=True, text=True).stdout.strip()[:72]
    a.preload = a.preload or os.path.join(a.build, 'lib', 'libhugetext-preload.so')
    a.configs = [c for c in a.configs.split(',') if c]
    if any(c not in CONFIGS for c in a.configs):
        ap.error('settings: ' + ', '.join(CONFIGS))
    if os.geteuid() != 0:
        ap.error('run as root: the sandbox needs namespaces and mounts')
    if not os.path.isfile(a.preload):
        ap.error('no preload at %s: build first' % a.preload)

    rules = read_deny(os.path.join(HERE, 'deny.txt'))
    programs = find_programs()
    chosen = [(p, r) for p, r in programs if not a.only or re.search(a.only, p)]
    if a.limit:
        chosen = chosen[:a.limit]
    to_run, groups = [], {}
    for p, r in chosen:
        g = denied(rules, p, r)
        if g:
            groups[g] = groups.get(g, 0) + 1
        else:
            to_run.append(p)

    s = Sweep(a)
    s.prepare()
    started, t0 = datetime.datetime.utcnow(), time.time()
    results = []
    # SIGTERM or ^C stops the sweep; what ran by then is summarised.
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    ex = ThreadPoolExecutor(max_workers=a.jobs)
    try:
        for i, res in enumerate(ex.map(s.program, to_run)):
            results.append(res)
            mark = '' if res['verdict'] == 'identical' else '  ' + res['verdict'].upper()
            print('[%d/%d] %s%s' % (i + 1, len(to_run), res['path'], mark), flush=True)
            for d in res.get('differences', []):
                print('    %s: %s' % (d['config'], d['what']), flush=True)
    except KeyboardInterrupt:
        a.stopped = True
        print('stopped after %d programs' % len(results), flush=True)
    ex.shutdown(wait=True, cancel_futures=True)

    counts = {'programs': len(programs), 'chosen': len(chosen), 'denied': sum(groups.values()),
              'groups': groups,
              'run': len(results), 'static': sum(is_static(p) for p in to_run),
              'setid': sum(os.stat(p).st_mode & 0o6000 != 0 for p in to_run)}
    for v in ('identical', 'nondeterministic', 'difference'):
        counts[v] = sum(r['verdict'] == v for r in results)
    mem = memory(results, a.configs)
    with open(os.path.join(s.work, 'results.json'), 'w') as f:
        json.dump({'counts': counts, 'results': results}, f, indent=1, default=str)
    if a.out != '-':
        write_doc(a, counts, results, mem, started, int(time.time() - t0))
    print('programs %(programs)d, run %(run)d, denied %(denied)d, identical %(identical)d, '
          'nondeterministic %(nondeterministic)d, differences %(difference)d' % counts)
    for c, t in mem.items():
        print('%s: %d processes, private %s MiB for %s MiB of code, %d regions over 2x, '
              '%d failed' % (c, t['processes'], mib(t['private']), mib(t['code']),
                             len(t['flagged']), t['failed']))
    if counts['difference']:
        return 1
    return 2 if a.stopped else 0


if __name__ == '__main__':
    sys.exit(main())
