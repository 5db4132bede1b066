#!/usr/bin/env python3
"""Interop scenarios with Bumble (Google's Python Bluetooth stack, bumble==0.0.236) as the independent peer.

    interop.py [--controllers ble|bumble|rootcanal|ble,bumble,rootcanal] [--ble PATH/TO/ble] [--central PATH/TO/interop-central]
               [--only TEXT] [--snoop] [--lab-args "--no-ext-adv --fragment-rx --acl-num 4 ..."]

Run it through run.sh, which installs Bumble and RootCanal into $REPO/.venv-bumble first (bootstrap.sh) and documents the options.
Standard library only: the Bumble peers and the trace decoders run with the venv's python.

The program is three tables and one engine:
  CONTROLLER_KINDS  how to start N linked virtual controllers of a kind, and what that kind is known to do
                    differently (facts the expectations read, never the kind's name);
  SCENARIOS         every scenario as data: which processes it starts (controllers, servers, clients) with their
                    arguments, readiness lines and time limits, and what it expects of their output;
  the engine        starting and stopping processes, ports, readiness, logs, captures, verdicts -- written once.

Adding a scenario is adding one entry to SCENARIOS; adding a controller kind is adding one entry to CONTROLLER_KINDS.
"""
import dataclasses, glob, hashlib, json, os, random, re, shlex, shutil, signal, socket, string, subprocess, sys, time
from dataclasses import dataclass, field
from typing import Any, Callable, Optional

HERE = os.path.dirname(os.path.abspath(__file__))
PEERS = os.path.join(HERE, 'peers')


def hexof(text):
    """The UTF-8 bytes of text in lowercase hex."""
    return text.encode().hex()


# ---------------------------------------------------------------------------------------------------------------
# Processes: each leads its own process group (a new session), so stopping it stops its children too. Every process
# started is remembered until it is reaped; on exit, Ctrl-C or SIGTERM the survivors get SIGTERM, then SIGKILL.

def exit_status(returncode):
    """A shell's view of a return code: 128 + N for a process killed by signal N."""
    return 128 - returncode if returncode < 0 else returncode


class Proc:
    live = []

    def __init__(self, argv, out, err=None, env=None, append=True, limit=None):
        """Starts argv with its output in the file out (standard error too unless err names another file, which is
        replaced). append=False replaces out. limit: seconds before finish() stops it and reports 124."""
        self.argv, self.out = argv, out
        with open(out, 'ab' if append else 'wb') as stdout, open(err or os.devnull, 'wb') as stderr:
            self.popen = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=stdout,
                                          stderr=stderr if err else subprocess.STDOUT, env=env,
                                          start_new_session=True)
        self.deadline = time.monotonic() + limit if limit else None
        self.timed_out = False
        Proc.live.append(self)

    def running(self):
        return self.popen.poll() is None

    def signal_group(self, sig):
        try:
            os.killpg(self.popen.pid, sig)
        except (ProcessLookupError, PermissionError):
            pass

    def _reap(self):
        self.signal_group(signal.SIGKILL)      # whatever it left behind in its group
        if self in Proc.live:
            Proc.live.remove(self)
        return 124 if self.timed_out else exit_status(self.popen.returncode)

    def finish(self):
        """Waits for it to exit (until its limit: then SIGTERM, 2 s later SIGKILL, status 124); its exit status."""
        try:
            self.popen.wait(None if self.deadline is None else max(0, self.deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            self.timed_out = True
            self.signal_group(signal.SIGTERM)
            try:
                self.popen.wait(2)
            except subprocess.TimeoutExpired:
                self.signal_group(signal.SIGKILL)
                self.popen.wait()
        return self._reap()

    def stop(self, grace=3.0):
        """SIGTERM to its group, up to grace seconds to exit cleanly (flushing captures), then SIGKILL."""
        if self.running():
            self.signal_group(signal.SIGTERM)
            try:
                self.popen.wait(grace)
            except subprocess.TimeoutExpired:
                self.signal_group(signal.SIGKILL)
                self.popen.wait()
        return self._reap()

    @classmethod
    def stop_all(cls):
        for proc in cls.live:
            proc.signal_group(signal.SIGTERM)
        if cls.live:
            time.sleep(0.3)
        for proc in list(cls.live):
            proc.signal_group(signal.SIGKILL)
            try:
                proc.popen.wait(1)
            except subprocess.TimeoutExpired:
                pass
        cls.live.clear()


def free_ports(count):
    """count loopback ports the OS just handed out (all bound to port 0 at once, then released)."""
    socks = [socket.socket() for _ in range(count)]
    try:
        for s in socks:
            s.bind(('127.0.0.1', 0))
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def read_lines(path):
    """The lines of a file as grep sees them (no trailing newline; a missing file has none)."""
    try:
        with open(path, errors='replace') as f:
            text = f.read()
    except OSError:
        return []
    lines = text.split('\n')
    return lines[:-1] if lines and lines[-1] == '' else lines


def wait_for_line(path, regex, seconds, proc):
    """Until the file has a line matching regex (re.search); False after seconds, or as soon as proc exited without
    printing it."""
    pattern, deadline = re.compile(regex), time.monotonic() + seconds
    while True:
        exited = proc is not None and not proc.running()
        if any(pattern.search(line) for line in read_lines(path)):
            return True
        if exited or time.monotonic() >= deadline:
            return False
        time.sleep(0.05)


# ---------------------------------------------------------------------------------------------------------------
# Controller kinds. argv(harness, ports, snoop_dir or None, large_acl) starts len(ports) linked controllers, one
# H4/TCP server port each, printing a line starting with READY once they listen. The other fields are what the
# scenarios' expectations depend on.

@dataclass
class ControllerKind:
    name: str
    argv: Callable
    needs_ble: bool                 # started by the ble binary
    fresh_per_client: bool          # every new TCP client gets a fresh controller: cases of a scenario share them
    bumbles_own: bool               # Bumble's controllers: Bumble against itself on them tests nothing of ours
    local_disconnect_reason: str    # the reason the side that disconnects is told (Core 5.4, Vol 4, Part E, 7.1.6)
    scan_response_heard: bool       # the scan response's own data reaches the scanner
    arbitrates_connects: bool       # two CONNECT_INDs reaching one advertiser together: one of them loses cleanly


def ble_controllers(h, ports, snoop_dir, large_acl):
    argv = [h.ble, 'controller']
    for port in ports:
        argv += ['--tcp', f'127.0.0.1:{port}']
    if large_acl:
        argv += ['--acl-size', '251', '--acl-count', '8']
    if snoop_dir:
        argv += ['--snoop-dir', snoop_dir]
    return argv


def bumble_controllers(h, ports, snoop_dir, large_acl):
    argv = [h.py, os.path.join(PEERS, 'lab_controllers.py'), *map(str, ports), *shlex.split(h.lab_args)]
    if snoop_dir:
        argv += ['--snoop-dir', snoop_dir]
    if large_acl:
        argv += ['--acl-len', '251', '--acl-num', '8']
    return argv


def rootcanal_controllers(h, ports, snoop_dir, large_acl):
    # RootCanal 1.10's buffers are its own (LE ACL 27 octets); large_acl cannot change them.
    argv = [h.py, os.path.join(PEERS, 'rootcanal_controllers.py'), *map(str, ports)]
    if snoop_dir:
        argv += ['--snoop-dir', snoop_dir]
    return argv


CONTROLLER_KINDS = {kind.name: kind for kind in [
    ControllerKind('ble', ble_controllers, needs_ble=True, fresh_per_client=False, bumbles_own=False,
                   local_disconnect_reason='0x16', scan_response_heard=True, arbitrates_connects=True),
    # Bumble 0.0.236's controller reports the reason it sent to the peer (0x13) to the side that disconnects, answers
    # a scan request with a copy of the advertising data, and its air has no connection-establishment check: the
    # second of two simultaneous initiators believes it is connected to a peripheral that never saw it.
    ControllerKind('bumble', bumble_controllers, needs_ble=False, fresh_per_client=True, bumbles_own=True,
                   local_disconnect_reason='0x13', scan_response_heard=False, arbitrates_connects=False),
    # Android's RootCanal 1.10.0 (PyPI rootcanal): a new controller for every client of a port. Of two initiators
    # reaching one advertiser at the same moment, the loser hears nothing more: no LE Connection Complete, neither a
    # link nor the failure to establish one (0x3E), and it does not connect when the advertiser advertises again.
    ControllerKind('rootcanal', rootcanal_controllers, needs_ble=False, fresh_per_client=True, bumbles_own=False,
                   local_disconnect_reason='0x16', scan_response_heard=True, arbitrates_connects=False),
]}


# ---------------------------------------------------------------------------------------------------------------
# The context of one scenario on one controller kind. Strings in steps are templates: $p1, $p2, $p3 (the
# controllers' ports), $ble, $bin (its directory), $central, $py, $peers, $logs, $name (the scenario's), $prefix ($name,
# or $name-PART in a scenario of several parts), $part, $kind. Any value may also be a function of the context.

class Abort(Exception):
    """A process the scenario needs did not come up: the rest of this part is skipped."""


class Context:
    def __init__(self, h, scenario, name, kind):
        self.h, self.scenario, self.name, self.kind = h, scenario, name, kind
        self.ok, self.ports, self.procs, self.values = True, [], {}, {}
        self.controllers = None
        self.part = ''

    @property
    def prefix(self):
        return f'{self.name}-{self.part}' if self.part else self.name

    def vars(self):
        v = dict(ble=self.h.ble or '', bin=os.path.dirname(self.h.ble or ''), central=self.h.central or '',
                 py=self.h.py, peers=PEERS, logs=self.h.logs, name=self.name, prefix=self.prefix, part=self.part,
                 kind=self.kind.name if self.kind else '')
        v.update({f'p{i + 1}': str(port) for i, port in enumerate(self.ports)})
        v.update({k: value for k, value in self.values.items() if isinstance(value, str)})   # $mqtt (Broker)
        return v

    def sub(self, value):
        if callable(value):
            value = value(self)
        if isinstance(value, str):
            return string.Template(value).safe_substitute(self.vars())
        if isinstance(value, (list, tuple)):
            return [self.sub(v) for v in value]
        return value

    def path(self, log):
        """A log of this scenario: 'central' is $logs/$prefix-central.log; a name with a dot is taken whole after
        '$prefix-' ('central.log.out'); an absolute path (after substitution) is itself."""
        log = self.sub(log)
        if log.startswith('/'):
            return log
        return os.path.join(self.h.logs, f'{self.prefix}-{log}' + ('' if '.' in log else '.log'))

    def lines(self, log):
        return read_lines(self.path(log))

    def text(self, log):
        return '\n'.join(self.lines(log))

    def problem(self, message):
        print(self.sub(message), flush=True)
        self.ok = False

    def env(self, extra, snoop_role):
        env = dict(os.environ)
        env.update({k: self.sub(v) for k, v in (extra or {}).items()})
        if snoop_role is not None:   # a Bumble peer: a btsnoop capture of its host with --snoop
            env['BUMBLE_SNOOPER'] = (f'btsnoop:file:{self.path(snoop_role + ".btsnoop")}' if self.h.snoop else '')
        return env

    def start(self, role, argv, **how):
        proc = Proc(self.sub(argv), **how)
        self.procs[role] = proc
        return proc

    def stop_part(self, keep_controllers=False):
        for role in reversed(list(self.procs)):
            if keep_controllers and self.procs[role] is self.controllers:
                continue
            self.procs.pop(role).stop()
        if not keep_controllers:
            self.controllers = None


def failed_lines(ctx, log):
    """The FAILED lines a peer printed (they say which step failed)."""
    return ' '.join(l for l in ctx.lines(log) if l.startswith('FAILED'))


def command_line(argv):
    return ' '.join([os.path.basename(argv[0])] + argv[1:])


# ---------------------------------------------------------------------------------------------------------------
# Steps. A part of a scenario is a list of steps run in order, then its processes are stopped, then its checks (also
# steps) run. Any step can have when=f(context): it is skipped unless f says yes.

@dataclass(kw_only=True)
class Step:
    when: Optional[Callable] = None

    def applies(self, ctx):
        return self.when is None or self.when(ctx)


@dataclass
class Ports(Step):
    """count free loopback ports as $p1..: for a scenario that needs a port nobody listens on."""
    count: int = 1

    def run(self, ctx):
        ctx.ports = free_ports(self.count)


@dataclass
class Controllers(Step):
    """count linked controllers of the scenario's kind on free ports $p1.., READY within 10 s. A kind that gives
    every client a fresh controller keeps serving the next parts of a scenario with shared_controllers."""
    count: int = 2
    large_acl: bool = False

    def run(self, ctx):
        if ctx.scenario.shared_controllers and ctx.kind.fresh_per_client and ctx.controllers \
                and ctx.controllers.running():
            return
        ctx.ports = free_ports(self.count)
        snoop_dir = None
        if ctx.h.snoop:   # captures from the hosts' side, one per client connection
            snoop_dir = os.path.join(ctx.h.logs, f'{ctx.prefix}-controller-snoop')
            os.makedirs(snoop_dir, exist_ok=True)
        log = ctx.path('controllers')
        ctx.controllers = ctx.start('controllers', ctx.kind.argv(ctx.h, ctx.ports, snoop_dir, self.large_acl),
                                    out=log, append=False)
        if not wait_for_line(log, '^READY', 10, ctx.controllers):
            ctx.procs.pop('controllers').stop()
            ctx.controllers = None
            ctx.problem(f'{ctx.part + ": " if ctx.part else ""}controllers ({ctx.kind.name}) did not print READY '
                        'within 10 s')
            raise Abort()


@dataclass
class Start(Step):
    """A process in the background, output in the log of its role; with ready, waits up to timeout seconds for a
    line matching it, and aborts the part with not_ready if it does not come (or the process exits first). bumble:
    a Bumble peer (BUMBLE_SNOOPER set). limit: seconds before Exit stops it (status 124). out/err: separate logs."""
    role: str
    argv: Any
    ready: Optional[str] = None
    timeout: float = 15
    not_ready: str = ''
    required: bool = True
    env: Optional[dict] = None
    bumble: bool = False
    limit: Optional[float] = None
    out: Optional[str] = None
    err: Optional[str] = None

    def run(self, ctx):
        out = ctx.path(self.out or self.role)
        proc = ctx.start(self.role, self.argv, out=out, err=self.err and ctx.path(self.err),
                         env=ctx.env(self.env, self.role if self.bumble else None), append=False, limit=self.limit)
        if self.ready and not wait_for_line(out, ctx.sub(self.ready), self.timeout, proc):
            ctx.problem(self.not_ready)
            if self.required:
                raise Abort()


@dataclass
class Run(Step):
    """A process run to completion (stopped after timeout seconds: status 124), output appended to the log of its
    role -- or, with out/err, standard output and standard error each replacing its own file, then appended to the
    role's log after a '$ command' line when transcript is set. Its exit status must be status (None: any)."""
    role: str
    argv: Any
    timeout: float = 30
    status: Optional[int] = 0
    env: Optional[dict] = None
    bumble: Optional[str] = None         # a Bumble peer: the role of its capture
    out: Optional[str] = None
    err: Optional[str] = None
    transcript: bool = False
    label: str = ''                      # what the failure message starts with

    def run(self, ctx):
        argv = ctx.sub(self.argv)
        log = ctx.path(self.role)
        if self.out:
            out, err = ctx.path(self.out), ctx.path(self.err)
            if self.transcript:
                with open(log, 'a') as f:
                    f.write(f'$ {command_line(argv)}\n')
            proc = Proc(argv, out, err=err, env=ctx.env(self.env, self.bumble), append=False, limit=self.timeout)
        else:
            proc = Proc(argv, log, env=ctx.env(self.env, self.bumble), limit=self.timeout)
        status = proc.finish()
        if self.out and self.transcript:
            with open(log, 'ab') as f:
                for part in (out, err):
                    with open(part, 'rb') as g:
                        f.write(g.read())
        if self.status is not None and status != self.status:
            why = f" (killed by the {self.timeout:g} s timeout)" if proc.timed_out else ''
            detail = failed_lines(ctx, self.role) if not self.out else ' '.join(read_lines(ctx.path(self.err))[:3])
            label = ctx.sub(self.label)
            ctx.problem(f"{label + ': ' if label else ''}'{command_line(argv)}' exited with {status}, expected "
                        f"{self.status}{why}" + (f': {detail}' if detail else ''))


@dataclass
class WaitFor(Step):
    """Until the log of a running role has a line matching regex (timeout seconds); message when it does not."""
    role: str
    regex: Any
    timeout: float = 15
    message: Optional[str] = None

    def run(self, ctx):
        if not wait_for_line(ctx.path(self.role), ctx.sub(self.regex), self.timeout, ctx.procs.get(self.role)) \
                and self.message:
            ctx.problem(self.message)


@dataclass
class Exit(Step):
    """Waits for a background role to exit (until its limit); its status must be status."""
    role: str
    status: int = 0
    message: str = ''

    def run(self, ctx):
        if ctx.procs.pop(self.role).finish() != self.status:
            ctx.problem(self.message)


@dataclass
class Stop(Step):
    """Stops a background role now (SIGTERM, then SIGKILL), whatever its status: a peer whose part is over."""
    role: str

    def run(self, ctx):
        ctx.procs.pop(self.role).stop()


@dataclass
class Interrupt(Step):
    """SIGINT to a background role (the process itself, as a terminal's Ctrl-C to a foreground program); it must
    exit within `within` seconds with status."""
    role: str
    within: float = 5
    status: int = 130

    def run(self, ctx):
        proc = ctx.procs.pop(self.role)
        try:
            os.kill(proc.popen.pid, signal.SIGINT)
        except ProcessLookupError:
            pass
        try:
            proc.popen.wait(self.within)
        except subprocess.TimeoutExpired:
            ctx.problem(f'{self.role}: still running {self.within:g} s after SIGINT')
            proc.popen.kill()
        status = proc.stop()
        if status != self.status:
            ctx.problem(f'{self.role}: exited with {status}, expected {self.status}')


@dataclass
class Sleep(Step):
    seconds: float = 0.3

    def run(self, ctx):
        time.sleep(self.seconds)


@dataclass
class Do(Step):
    """A small function of the context, for what the steps above cannot say; it reports with ctx.problem."""
    fn: Callable

    def run(self, ctx):
        self.fn(ctx)


@dataclass
class Decode(Step):
    """hci_trace.py --events: the capture $prefix-NAME.btsnoop decoded to $prefix-NAME.hci.txt."""
    capture: str

    def run(self, ctx):
        decode(ctx.h, ctx.path(self.capture + '.btsnoop'), events=True)


def decode(h, capture, events=False):
    with open(capture[:-len('.btsnoop')] + '.hci.txt', 'wb') as out:
        subprocess.run([h.py, os.path.join(HERE, 'hci_trace.py'), capture] + (['--events'] if events else []),
                       stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)


def mosquitto_path():
    """The Mosquitto broker (Debian package mosquitto; scripts/test installs it), or None."""
    for path in ('/usr/sbin/mosquitto', '/usr/bin/mosquitto', '/usr/local/sbin/mosquitto'):
        if os.access(path, os.X_OK):
            return path
    return shutil.which('mosquitto')


def accepts(port):
    with socket.socket() as s:
        s.settimeout(0.2)
        return s.connect_ex(('127.0.0.1', port)) == 0


@dataclass
class Broker(Step):
    """A Mosquitto broker of the scenario's own on a free loopback port ($mqtt), its persistent sessions saved in
    $prefix-broker.d when it stops; again=True starts it once more on the same port (after Stop('broker')), with
    those sessions."""
    again: bool = False

    def run(self, ctx):
        if not self.again:
            ctx.values['mqtt'] = str(free_ports(1)[0])
        port = int(ctx.values['mqtt'])
        directory = ctx.path('broker.d')
        os.makedirs(directory, exist_ok=True)
        conf = os.path.join(directory, 'mosquitto.conf')
        with open(conf, 'w') as f:
            f.write(f'listener {port} 127.0.0.1\nallow_anonymous true\npersistence true\n'
                    f'persistence_location {directory}/\nautosave_interval 0\n'
                    + ('user root\n' if os.getuid() == 0 else ''))
        proc = ctx.start('broker', [mosquitto_path(), '-c', conf], out=ctx.path('broker'), append=self.again)
        deadline = time.monotonic() + 5
        while not accepts(port):
            if time.monotonic() > deadline or not proc.running():
                ctx.problem(f'mosquitto did not listen on {port}')
                raise Abort()
            time.sleep(0.05)


@dataclass
class Stop(Step):
    """SIGTERM to a background role (its group), which must exit within 3 s (then SIGKILL)."""
    role: str

    def run(self, ctx):
        ctx.procs.pop(self.role).stop()


# Checks.

@dataclass
class Result(Step):
    """The log has the line 'RESULT KEY=VALUE' (the whole line)."""
    role: str
    key: Any
    value: Any

    def run(self, ctx):
        line = f'RESULT {ctx.sub(self.key)}={ctx.sub(self.value)}'
        if line not in ctx.lines(self.role):
            ctx.problem(f"missing '{line}' in {os.path.basename(ctx.path(self.role))}")


@dataclass
class Grep(Step):
    """Some line of the log matches regex (re.search; whole=True: the whole line; fixed=True: regex is plain text;
    absent=True: no line does)."""
    role: str
    regex: Any
    message: Any
    whole: bool = False
    fixed: bool = False
    ignore_case: bool = False
    absent: bool = False

    def run(self, ctx):
        if self.absent == grep(ctx, self.role, self.regex, whole=self.whole, fixed=self.fixed,
                               ignore_case=self.ignore_case):
            ctx.problem(self.message)


def matching(ctx, role, regex, whole=False, fixed=False, ignore_case=False):
    pattern = ctx.sub(regex)
    pattern = re.compile(re.escape(pattern) if fixed else pattern, re.IGNORECASE if ignore_case else 0)
    return [line for line in ctx.lines(role) if (pattern.fullmatch(line) if whole else pattern.search(line))]


def grep(ctx, role, regex, **how):
    return bool(matching(ctx, role, regex, **how))


OPERATORS = {'==': int.__eq__, '>=': int.__ge__, '<=': int.__le__, '>': int.__gt__}


@dataclass
class Count(Step):
    """The number of lines of the log matching regex (None: all lines) compares with n (op: ==, >=, <=, >)."""
    role: str
    regex: Any
    op: str
    n: int
    message: Any

    def run(self, ctx):
        count = len(ctx.lines(self.role)) if self.regex is None else len(matching(ctx, self.role, self.regex))
        if not OPERATORS[self.op](count, self.n):
            ctx.problem(self.message)


@dataclass
class MatchedChars(Step):
    """grep -o REGEX1 | grep -o REGEX2 | wc -c: the characters of every match of the last regex inside the matches of
    the ones before (each counted with its newline) must be more than n."""
    role: str
    regexes: tuple
    n: int
    message: str

    def run(self, ctx):
        pieces = ctx.lines(self.role)
        for regex in self.regexes:
            pieces = [m.group(0) for piece in pieces for m in re.finditer(ctx.sub(regex), piece) if m.group(0)]
        if not sum(len(p) + 1 for p in pieces) > self.n:
            ctx.problem(self.message)


@dataclass
class Json(Step):
    """Some line of the log is a JSON object holding every field with that value and that JSON type (true, 16 and
    "justWorks" are a boolean, a number and a string), whatever the order of the keys."""
    role: str
    fields: dict

    def run(self, ctx):
        wanted = {k: ctx.sub(v) for k, v in self.fields.items()}
        for line in ctx.lines(self.role):
            try:
                obj = json.loads(line)
            except ValueError:
                continue
            if isinstance(obj, dict) and all(k in obj and obj[k] == v and type(obj[k]) is type(v)
                                             for k, v in wanted.items()):
                return
        shown = ' '.join(f'{k}={json.dumps(v) if not isinstance(v, str) else v}' for k, v in wanted.items())
        ctx.problem(f'no JSON line with {shown} in {os.path.basename(ctx.path(self.role))}')


@dataclass
class Check(Step):
    """fn(context) must be true; message otherwise."""
    fn: Callable
    message: Any

    def run(self, ctx):
        if not self.fn(ctx):
            ctx.problem(self.message)


# ---------------------------------------------------------------------------------------------------------------
# Scenarios. kinds: 'once' (no controllers, runs once), or which controller kinds it runs on ('each', or a
# function of the kind). needs: what must be at hand, else it is skipped: 'ble', 'central', 'tshark',
# 'test-bundle', or the name of a program next to ble. parts: steps then checks, on fresh processes each.

@dataclass
class Part:
    name: str = ''
    steps: list = field(default_factory=list)
    checks: list = field(default_factory=list)


@dataclass
class Scenario:
    name: str
    parts: list
    kinds: Any = 'each'
    needs: tuple = ()
    shared_controllers: bool = False     # parts share the controllers on kinds with a fresh controller per client
    on_pass: Optional[Callable] = None   # prints figures for a scenario that passed

    def runs_on(self, kind):
        return self.kinds == 'each' or (callable(self.kinds) and self.kinds(kind))


BLE, PY, CENTRAL = '$ble', '$py', '$central'
SECRET = '12345678-1234-5678-1234-56789ABCDEF3'          # needs encryption: 'top-secret'
AUTHENTICATED = '12345678-1234-5678-1234-56789ABCDEFB'   # needs an authenticated key: 'authenticated'
LONG = '12345678-1234-5678-1234-56789ABCDEF2'            # 300 bytes
WRITABLE = '12345678-1234-5678-1234-56789ABCDEF1'
SERVING = '"event":"serving"'
ADVERTISING = '^RESULT advertising=1'
SERVING_OR_ADVERTISING = '"event":"serving"|^RESULT advertising=1'
TOP_SECRET = hexof('top-secret')
VALUE_512 = bytes((13 * i + 5) % 256 for i in range(512)).hex()


def peer(script, *args, port='$p1'):
    """A Bumble peer from peers/ on the controller at port."""
    return [PY, f'$peers/{script}', '--transport', f'tcp-client:127.0.0.1:{port}', *args]


def ble(*args, port='$p2'):
    """The ble tool on the controller at port."""
    return [BLE, *args, '--hci', f'tcp:127.0.0.1:{port}']


def serve_ble(run_for=30, *args):
    return Start('peripheral', [BLE, 'serve', '--hci', 'tcp:127.0.0.1:$p1', '--json', '--run-for', str(run_for), *args],
                 ready=SERVING, not_ready='ble serve did not start serving')


def serve_bumble(run_for=30):
    return Start('peripheral', peer('peripheral.py', '--run-for', str(run_for)), bumble=True, ready=ADVERTISING,
                 not_ready='peripheral did not start advertising')


# -- the lab session: the issue's whole session between one central and one peripheral, each Bumble's host
# (peers/central.py --full, peers/peripheral.py) or ours (interop-central on the public async API, `ble serve`); both
# serve the lab layout (SampleDevice.lab) and both centrals print the same RESULT keys.

def lab_session(central, peripheral):
    ours_c, ours_p = central == 'ble', peripheral == 'ble'
    target = 'SwiftBLELab' if ours_p else 'BumbleLabPeripheral'

    def scan_manufacturer(ctx):
        # Bumble 0.0.236's controller answers a scan request with a copy of the advertising data, so the scan
        # response's manufacturer data ('scanrsp') is heard on controllers that send it only.
        data = [f'FFFF:{hexof("lab")}'] if ours_p else []
        if ctx.kind.scan_response_heard:
            data.append(f'FFFF:{hexof("scanrsp")}')
        return ','.join(data)

    def same_tree(ctx):
        # The discovered tree equals the one the peripheral reports of itself (handles, properties, UUIDs).
        trees = []
        for role, who in (('central', 'the central'), ('peripheral', 'the peripheral')):
            out = ctx.path(f'tree-{"discovered" if role == "central" else "served"}.txt')
            with open(out, 'wb') as f:
                if subprocess.run([ctx.h.py, os.path.join(HERE, 'gatt_tree.py'), ctx.path(role)], stdout=f,
                                  stdin=subprocess.DEVNULL).returncode != 0:
                    ctx.problem(f'{who} printed no tree')
            trees.append(out)
        diff = subprocess.run(['diff', *trees], capture_output=True, text=True).stdout
        with open(ctx.path('tree.diff'), 'w') as f:
            f.write(diff)
        if diff:
            ctx.problem("discovered tree differs from the peripheral's own (< central, > peripheral):\n" + diff.rstrip())

    if ours_p:
        start = Start('peripheral', [BLE, 'serve', '--hci', 'tcp:127.0.0.1:$p1', '--json', '--run-for', '60',
                                     '--notify-interval', '200'], ready=SERVING_OR_ADVERTISING,
                      not_ready='the peripheral did not start advertising')
    else:
        start = Start('peripheral', peer('peripheral.py', '--run-for', '60'), bumble=True,
                      ready=SERVING_OR_ADVERTISING, not_ready='the peripheral did not start advertising')
    if ours_c:
        run = Run('central', [CENTRAL, '--hci', 'tcp:127.0.0.1:$p2', '--target', target,
                              '--btsnoop', '$logs/$name-ours.btsnoop'], timeout=60, label='the central')
    else:
        run = Run('central', peer('central.py', '--target-name', target, '--full', port='$p2'), timeout=60,
                  bumble='central', label='the central')
    c = 'central'
    checks = [
        Result(c, 'scan_name', target),
        Result(c, 'scan_services', '180D,180F'),
        Result(c, 'scan_manufacturer', scan_manufacturer),
        Result(c, 'scan_nonmatching', 0),
        Result(c, 'scan_matching', 1),
        Result(c, 'connected', 1),
        Result(c, 'mtu', 247),
        Result(c, 'services', 6),
        Do(same_tree),
        Result(c, 'manufacturer', 'swift-ble Lab Inc.' if ours_p else 'Bumble Lab Inc.'),
        Result(c, 'long_read_300', 'ok'),
        Result(c, 'long_read_512', 'ok'),
        # An unencrypted read of the protected value: our server holds no key for the central, so Insufficient
        # Authentication (Core 5.4, Vol 3, Part C, 10.3.1); Bumble's answers Insufficient Encryption either way.
        Result(c, f'read_error_{SECRET}', '0x05' if ours_p else '0x0F'),
        Result(c, 'write_with_response', 'ok'),
        Result(c, 'write_without_response', 'ok'),
        Result(c, 'long_write_512', 'ok'),
        # Core 5.4, Vol 3, Part F, 3.2.9: attribute values are at most 512 octets. Our client refuses a longer write
        # before sending it; Bumble's sends it and the server must answer Invalid Attribute Value Length (0x0D).
        Result(c, 'long_write_600', 'refused' if ours_c else '0x0D'),
        Result(c, 'long_write_600_kept', 1),
        Result(c, 'burst', 200),
        Result(c, 'indications', 5),
        Result(c, 'notifications', 3),
        # Core 5.4, Vol 4, Part E, 7.1.6: the side that disconnects gets 0x16 (terminated by local host).
        Result(c, 'disconnect_reason', lambda ctx: ctx.kind.local_disconnect_reason),
        Result(c, 'reconnected', 1),
        # GATT caching (Core 5.4, Vol 3, Part G, 7.3): our central's cached reconnection takes one round trip (the
        # Database Hash read), against either server's hash; Bumble's central recomputes our server's hash itself.
        Result(c, 'cached_discovery_round_trips', 1) if ours_c else Result(c, 'database_hash', 'ok'),
        Result(c, 'reconnect_read', 'ok'),
        Result(c, 'peer_disconnect_reason', '0x13'),
        Result(c, 'reconnected_after_peer_disconnect', 1),
    ]
    if ours_c:
        checks += [Result(c, 'auto_reconnected', 1), Result(c, 'subscription_restored', 1),
                   Result(c, 'stayed_disconnected', 1)]
    checks.append(Result(c, 'done', 1))
    # The peripheral's side of it.
    p = 'peripheral'
    if ours_p:
        checks += [
            Grep(p, f'"event":"write".*"value":"{hexof("written-with-response")}"', 'ble serve did not log the write request'),
            Grep(p, f'"event":"write".*"value":"{hexof("written-without-response")}"', 'ble serve did not log the write command'),
            Grep(p, f'"event":"write".*"value":"{VALUE_512}"', 'ble serve did not log the 512-byte long write'),
            Count(p, '"event":"write".*"value":"000102030405', '==', 0, 'ble serve stored the 600-byte write'),
            Grep(p, '"event":"burst","sent":200}', 'ble serve did not log 200 burst notifications sent'),
            Grep(p, '"confirmed":5,.*"event":"indications"', 'ble serve did not log 5 confirmed indications'),
            Grep(p, '"event":"disconnecting"', 'ble serve did not disconnect on the control point'),
            Grep(p, r'"event":"disconnected".*\(0x13\)",.*"reason_code":19}',
                 "ble serve did not log the central's disconnection (0x13)"),
            Count(p, '"event":"connected"', '>=', 3, 'ble serve saw fewer than 3 connections'),
        ]
    else:
        checks += [
            Result(p, 'write', 'written-with-response'),
            Result(p, 'write', 'written-without-response'),
            Count(p, '^RESULT long_write=', '==', 1, 'the peripheral stored a write other than the 512-byte one'),
            Result(p, 'long_write', 512),
            Result(p, 'burst_sent', 200),
            Result(p, 'indications_confirmed', 5),
            Result(p, 'control_disconnect', 1),
            Result(p, 'disconnected', '0x13'),
            Count(p, '^RESULT connected=1', '>=', 3, 'the peripheral saw fewer than 3 connections'),
        ]
    needs = (('central',) if ours_c else ()) + (('ble',) if ours_p else ())
    return Scenario(f'lab-session-{central}-central-to-{peripheral}-peripheral',
                    [Part('', [Controllers(2), start, run, Sleep(0.3)], checks)], needs=needs)


# -- two Bumble centrals at once against our peripheral, on three linked controllers: each write is attributed to
# the central that sent it.

def writes_attributed(ctx):
    for tag, address in (('A', 'C0:C1:C2:C3:C4:C5'), ('B', 'C0:C1:C2:C3:C4:C6')):
        handle = None
        for line in ctx.lines('peripheral'):
            if '"event":"connected"' in line and f'"peer":"{address}"' in line:
                m = re.search(r'"handle":([0-9]+)[,}]', line)
                handle = m and m.group(1)
                break
        if not handle:
            ctx.problem(f'central {tag} ({address}) never connected')
            continue
        if not grep(ctx, 'peripheral', f'"connection":{handle},"event":"write","value":"'
                                       f'{hexof("written-with-response-" + tag)}"', fixed=True):
            ctx.problem(f'the write of central {tag} is not attributed to its link (handle {handle})')


def two_centrals():
    def central(tag, port, address):
        return Start(f'central{tag}', peer('central.py', '--target-name', 'SwiftBLELab', '--address', address,
                                           '--tag', tag, port=port), bumble=True, limit=45)
    return Scenario('two-bumble-centrals-to-ble-peripheral', [Part('', [
        Controllers(3), serve_ble(30),
        central('A', '$p2', 'C0:C1:C2:C3:C4:C5'),
        # Without arbitration the second initiator of two simultaneous CONNECT_INDs waits forever for a peripheral
        # that never saw it: start B once A is connected (the two GATT sessions still overlap).
        WaitFor('centralA', '^RESULT connected=1', 15, when=lambda ctx: not ctx.kind.arbitrates_connects),
        central('B', '$p3', 'C0:C1:C2:C3:C4:C6'),
        Exit('centralA', message='central A failed'),
        Exit('centralB', message='central B failed'),
    ], [Do(writes_attributed)])], needs=('ble',))


# -- every simulated device of `ble serve --device NAME` against a Bumble central (peers/devices_central.py, which
# has its own table of what each device publishes): found by its name and services, discovered, the Device Name and a
# profile characteristic read, subscribed to (the glucose meter: its records asked for through the Record Access
# Control Point) and a value received; `ble serve` logs the connection, the subscription (and the RACP request).

SIMULATED_DEVICES = {'lab': 'SwiftBLELab', 'heart-rate': 'SwiftBLE HRM', 'battery': 'SwiftBLE Battery',
                     'blood-pressure': 'SwiftBLE BPM', 'thermometer': 'SwiftBLE Thermometer',
                     'weight-scale': 'SwiftBLE Weight', 'body-composition': 'SwiftBLE Body', 'glucose': 'SwiftBLE Glucose',
                     'current-time': 'SwiftBLE Clock', 'band': 'SwiftBLE Band', 'piano': 'SwiftBLE Piano',
                     'scale': 'SwiftBLE Scale'}


def device_part(device, name):
    p = 'peripheral'
    checks = [
        Result('central', 'name', name),
        Result('central', 'done', 1),
        Grep(p, f'"event":"serving".*"name":"{name}"', f'{device}: ble serve did not serve as {name}'),
        Grep(p, '"event":"connected"', f'{device}: ble serve did not log the connection'),
        Grep(p, '"event":"subscription".*"notify":true|"event":"subscription".*"indicate":true',
             f'{device}: ble serve did not log the subscription'),
        Grep(p, '"event":"disconnected"', f'{device}: ble serve did not log the disconnection'),
    ]
    if device == 'glucose':
        checks.append(Grep(p, '"event":"racp".*"request":"report stored records"',
                           'glucose: ble serve did not log the RACP request'))
    return Part(device, [
        Controllers(2),
        Start('peripheral', [BLE, 'serve', '--device', device, '--hci', 'tcp:127.0.0.1:$p1', '--json', '--run-for', '40',
                             '--notify-interval', '100'], ready=SERVING, not_ready=f'ble serve --device {device} did not start'),
        Run('central', peer('devices_central.py', '--device', device, port='$p2'), timeout=40, bumble='central',
            label=f'the Bumble central against {device}'),
        Sleep(0.3)], checks)


def same_tree(ctx, first, second):
    """Whether two `ble explore --json` logs show the same database and values (addresses masked: the clone and the
    replay run on another controller); on a difference, ctx.values['detail'] says where."""
    def tree(role):
        return [re.sub(r'([0-9A-F]{2}:){5}[0-9A-F]{2}', 'ADDRESS', line) for line in ctx.lines(role) if '"kind":' in line]
    a, b = tree(first), tree(second)
    if a == b and a:
        return True
    diff = [f'{x} | {y}' for x, y in zip(a, b) if x != y][:2]
    ctx.values['detail'] = f'{len(a)} lines against {len(b)}; first differences: {diff}'
    return False


def simulated_devices():
    return Scenario('ble-serve-devices-to-bumble-central',
                    [device_part(device, name) for device, name in SIMULATED_DEVICES.items()],
                    needs=('ble',), shared_controllers=True)


# -- `ble`'s errors on the embedded virtual world: a runtime error prints 'error: <message>' on standard error,
# without the usage text, and exits 2 (not found, timed out), 3 (a protocol error: ATT, GATT, HCI) or 1 (anything
# else, such as a controller that cannot be reached); a command-line mistake prints the usage text and exits 64.
# After the ATT error, and when interrupted, the command still disconnects cleanly (its capture shows HCI Disconnect
# and its completion).

def cli_case(label, status, stderr, usage, *args):
    """`ble ARGS` exits with status and its standard error ($prefix-LABEL.log; standard output in
    $prefix-LABEL-stdout.log) matches the regex stderr (None: is empty); with usage it shows the usage text, without
    it must not (and says at most one line)."""
    err = f'{label}.log'
    steps = [Run(label, [BLE, *args], timeout=60, status=status, out=f'{label}-stdout.log', err=err, label=label)]
    if stderr is None:
        steps.append(Check(lambda ctx: os.path.getsize(ctx.path(err)) == 0,
                           lambda ctx: f'{label}: standard error is not empty: {" ".join(ctx.lines(err)[:3])}'))
    else:
        steps.append(Check(lambda ctx: grep(ctx, err, stderr), lambda ctx: f"{label}: standard error does not match "
                           f"'{stderr}': {' '.join(ctx.lines(err)[:3])}"))
    if usage:
        steps.append(Grep(err, '^Usage: ble ', f'{label}: no usage text for a command-line mistake'))
    else:
        steps.append(Grep(err, 'usage', f'{label}: usage text printed for a runtime error', ignore_case=True,
                          absent=True))
        steps.append(Count(err, None, '<=', 1, lambda ctx: f'{label}: more than one line on standard error '
                                                            f'({len(ctx.lines(err))})'))
    return steps


def cli_errors():
    def whole_value(ctx):
        lines = ctx.lines('success-stdout.log')
        return grep(ctx, 'success-stdout.log', '000102[0-9a-f]*292a2b', whole=True) \
            and len(''.join(lines)) == 600
    return Scenario('cli-errors-and-exit-codes', [Part('', [
        Ports(1),   # nothing listens there
        *cli_case('not-found', 2, "^error: no device 'NoSuchDevice' found within 2 s$", False,
                  'read', 'NoSuchDevice', '2A29', '--timeout', '2'),
        *cli_case('no-characteristic', 2, '^error: SwiftBLELab has no characteristic 2A99$', False,
                  'read', 'SwiftBLELab', '2A99'),
        # --no-pair: the refusal is the answer (no key for us: Insufficient Authentication, Core 5.4, Vol 3, Part C,
        # 10.3.1).
        *cli_case('att-error', 3, f'^error: reading {SECRET} on SwiftBLELab: .*Insufficient Authentication \\(0x05\\)',
                  False, 'read', 'SwiftBLELab', SECRET, '--no-pair', '--btsnoop', '$logs/$name-att-error.btsnoop'),
        *cli_case('att-error-json', 3, f'^error: reading {SECRET} on SwiftBLELab: ', False,
                  'read', 'SwiftBLELab', SECRET, '--json', '--no-pair'),
        # Without it the tool pairs (Just Works) and reads; the value needing an authenticated key stays refused: a
        # MITM pairing fails with Authentication Requirements, since neither side can show or type a passkey.
        *cli_case('pairs-on-demand', 0, None, False, 'read', 'SwiftBLELab', SECRET, '--json'),
        Check(lambda ctx: grep(ctx, 'pairs-on-demand-stdout.log', '"event":"paired"')
              and grep(ctx, 'pairs-on-demand-stdout.log', f'"value":"{TOP_SECRET}"'),
              lambda ctx: f'ble read did not pair and read {SECRET}: '
                          f'{" ".join(ctx.lines("pairs-on-demand-stdout.log")[:3])}'),
        *cli_case('mitm-needed', 3, r'Insufficient Authentication \(0x05\).*securing the link failed: '
                  r'.*Authentication Requirements \(0x03\)', False, 'read', 'SwiftBLELab', AUTHENTICATED),
        *cli_case('unreachable-controller', 1, '^error: no controller at tcp:127.0.0.1:$p1: .*refused', False,
                  'explore', 'SwiftBLELab', '--hci', 'tcp:127.0.0.1:$p1'),
        *cli_case('not-hex', 64, "'zz' is not hex", True, 'write', 'SwiftBLELab', '2A29', 'zz'),
        *cli_case('unknown-option', 64, '--bogus', True, 'read', 'SwiftBLELab', '2A29', '--bogus'),
        *cli_case('bad-hci', 64, '--hci nowhere', True, 'scan', '--hci', 'nowhere'),
        *cli_case('help', 0, None, False, 'read', '--help'),
        Grep('help-stdout.log', '^USAGE: ble read ', 'help: ble read --help printed no usage on standard output'),
        *cli_case('success', 0, None, False, 'read', 'SwiftBLELab', LONG),
        Check(lambda ctx: os.path.getsize(ctx.path('att-error-json-stdout.log')) == 0,
              'att-error-json: a result on standard output'),
        # The long value is printed whole in text output too (it is not printable text, so it is 600 hex digits).
        Check(whole_value, lambda ctx: 'ble read did not print the 300-byte value whole: '
                                       + open(ctx.path('success-stdout.log'), errors='replace').read(200)),
        # After the ATT error: HCI Disconnect, and the controller's Disconnection Complete, before the tool exits.
        Decode('att-error'),
        Check(lambda ctx: grep(ctx, 'att-error.hci.txt', '0x0406 DISCONNECT .*Status SUCCESS')
              and grep(ctx, 'att-error.hci.txt', 'DISCONNECTION_COMPLETE: status=SUCCESS'),
              'ble read did not disconnect cleanly after the ATT error'),
        # ble explore goes on after a value it cannot read, says why in the characteristic's line, and disconnects.
        *cli_case('explore', 0, None, False, 'explore', 'SwiftBLELab', '--json', '--no-pair',
                  '--btsnoop', '$logs/$name-explore.btsnoop'),
        Grep('explore-stdout.log', '^\\{"att_error":5,"error":"[^"]*Insufficient Authentication[^"]*","handle":[0-9]+,'
             f'"kind":"characteristic","properties":\\["read"\\],"uuid":"{SECRET}"\\}}$',
             f'ble explore did not report the refused read of {SECRET}'),
        Decode('explore'),
        Grep('explore.hci.txt', 'DISCONNECTION_COMPLETE: status=SUCCESS', 'ble explore did not disconnect'),
        # Interrupted (SIGINT) while subscribed: it still disconnects and powers off, then exits with 130, silent.
        Start('interrupted', [BLE, 'subscribe', 'SwiftBLELab', '2A37', '--count', '1000', '--json',
                              '--btsnoop', '$logs/$name-interrupted.btsnoop'],
              out='interrupted-stdout.log', err='interrupted.log', ready='"index":1,', required=False,
              not_ready='interrupted: no notification before the interruption'),
        Interrupt('interrupted', within=5, status=130),
        Check(lambda ctx: os.path.getsize(ctx.path('interrupted.log')) == 0,
              lambda ctx: f'interrupted: said something on standard error: {" ".join(ctx.lines("interrupted.log")[:3])}'),
        Decode('interrupted'),
        Grep('interrupted.hci.txt', 'DISCONNECTION_COMPLETE: status=SUCCESS',
             'interrupted: ble subscribe did not disconnect'),
    ])], kinds='once', needs=('ble',))


# -- `ble --json` on the embedded virtual world uses JSON's own types: every line is one JSON object, numbers are
# numbers (rssi, mtu, handles, lengths, indexes), booleans booleans, lists arrays, strings only for text and hex;
# ble read carries the whole long value.

JSON_NUMBERS = {'rssi', 'mtu', 'handle', 'start', 'end', 'length', 'written', 'index', 'att_error', 'companyID'}


def json_typed(ctx):
    def check(value, key=None):
        if key in JSON_NUMBERS:
            assert isinstance(value, int) and not isinstance(value, bool), (key, value)
        if key in ('connectable', 'with_response'):
            assert isinstance(value, bool), (key, value)
        if key in ('services', 'properties', 'manufacturer'):
            assert isinstance(value, list), (key, value)
        for k, v in (value.items() if isinstance(value, dict) else
                     ((None, v) for v in value) if isinstance(value, list) else ()):
            check(v, k)
    for path in sorted(glob.glob(os.path.join(ctx.h.logs, glob.escape(ctx.name) + '-*.log'))):
        try:
            lines = [l for l in read_lines(path) if l.strip()]
            assert lines, 'no output'
            for line in lines:
                check(json.loads(line))
        except (AssertionError, ValueError) as error:
            ctx.problem(f'{os.path.basename(path)}: not typed JSON lines ({error})')


def cli_json_types():
    return Scenario('cli-json-types', [Part('', [
        Run('scan', [BLE, 'scan', '--json', '--timeout', '2'], label='ble scan failed'),
        Run('explore', [BLE, 'explore', 'SwiftBLELab', '--json'], label='ble explore failed'),
        Run('read', [BLE, 'read', 'SwiftBLELab', LONG, '--json'], label='ble read failed'),
        Run('write', [BLE, 'write', 'SwiftBLELab', WRITABLE, hexof('typed'), '--json'], label='ble write failed'),
        Run('subscribe', [BLE, 'subscribe', 'SwiftBLELab', '2A37', '--count', '2', '--json'],
            label='ble subscribe failed'),
        Grep('scan', '^\\{"address":"([0-9A-F]{2}:){5}[0-9A-F]{2}","addressType":"public",'
             '"advertising":\\{"dataLength":[0-9]+,"extended":false,"phy":"1M","truncated":false\\},"connectable":true,'
             f'"manufacturer":\\[\\{{"companyID":65535,"data":"{hexof("lab")}"\\}}.*\\],"name":"SwiftBLELab",'
             '"rssi":-[0-9]+,"services":\\["180D","180F"\\]\\}$', 'ble scan --json: no typed line for SwiftBLELab'),
        Grep('explore', '^\\{"event":"connected","mtu":247,"peer":"[0-9A-F:]{17}"\\}$',
             'ble explore --json: no MTU 247 as a number'),
        # A value a profile knows also comes decoded, in JSON's types.
        Grep('explore', '^\\{"decoded":\\{"percent":[0-9]+,"type":"battery_level"\\},"handle":[0-9]+,"kind":"characteristic",'
             '"properties":\\["read","notify"\\],"uuid":"2A19","value":"[0-9a-f]{2}"\\}$',
             'ble explore --json: the battery level line is not typed'),
        Grep('explore', '^\\{"end":[0-9]+,"kind":"service","start":[0-9]+,"uuid":"180D"\\}$',
             'ble explore --json: service handles are not numbers'),
        Grep('read', f'^\\{{"handle":[0-9]+,"length":300,"uuid":"{LONG}","value":"000102[0-9a-f]{{594}}"\\}}$',
             'ble read --json did not carry the 300-byte value whole'),
        Grep('write', f'^\\{{"handle":[0-9]+,"uuid":"{WRITABLE}","with_response":true,"written":5\\}}$',
             'ble write --json is not typed'),
        Count('subscribe', '^\\{"decoded":\\{"bpm":[0-9]+,"sensor_contact":"not_supported","type":"heart_rate_measurement"\\},'
              '"index":[12],"uuid":"2A37","value":"[0-9a-f]+"\\}$', '==', 2,
              'ble subscribe --json: indexes are not numbers, or the heart rate is not decoded'),
        # Every line of every command is one JSON object whose numbers, booleans and arrays have JSON's types.
        Do(json_typed),
    ])], kinds='once', needs=('ble',))


# -- our btsnoop capture of a full session (ble explore in its own virtual world) decodes in Wireshark's tshark, with
# no malformed packet, and shows the session's ATT operations.

def tshark_checks(ctx):
    capture = os.path.join(ctx.h.logs, ctx.name + '.btsnoop')

    def tshark(*args):
        return subprocess.run(['tshark', '-r', capture, *args], capture_output=True, text=True,
                              stdin=subprocess.DEVNULL).stdout
    malformed = len(tshark('-Y', '_ws.malformed || _ws.expert.severity == error').splitlines())
    if malformed:
        ctx.problem(f'{malformed} malformed packet(s)')
    opcodes = tshark('-Y', 'btatt', '-T', 'fields', '-e', 'btatt.opcode')
    with open(ctx.path('tshark'), 'w') as f:
        f.write(opcodes)
    # MTU exchange, Read By Group Type, Read By Type, Find Information, Read, Read Blob: requests and responses.
    for op in '0x02 0x03 0x10 0x11 0x08 0x09 0x04 0x05 0x0a 0x0b 0x0c 0x0d'.split():
        if op not in opcodes.splitlines():
            ctx.problem(f'no ATT opcode {op} in the capture')
    if not len(tshark().splitlines()) > 50:
        ctx.problem('capture too short')


# -- pairing (LE Security Manager) between Bumble's host (peers/pairing_peer.py) and ours (`ble serve`, `ble pair`,
# `ble read`, `ble bonds`), and Bumble with itself. Every case is a part on fresh linked controllers (or fresh
# controllers of the same processes, on a kind that gives every client one: process start-up is most of a case's
# time); the peripheral serves ...DEF3 (needs encryption, 'top-secret') and ...DEFB (needs authentication).

def ours_bonds(args):
    """Our tool never touches its default bond store here, and no bond leaks from one case into the next."""
    return list(args) if '--bonds' in args else [*args, '--bonds', '$logs/$prefix-bonds-ours.json']


def pair_serve_ble(*args):
    return Start('peripheral', [BLE, 'serve', '--hci', 'tcp:127.0.0.1:$p1', '--name', 'SwiftBLEPair', '--json',
                                '--run-for', '30', *ours_bonds(args)],
                 ready=SERVING_OR_ADVERTISING, not_ready='$part: the peripheral did not start advertising')


def pair_serve_bumble(*args):
    return Start('peripheral', peer('pairing_peer.py', '--role', 'peripheral', '--name', 'BumblePair', '--run-for', '30',
                                    *args), bumble=True, ready=SERVING_OR_ADVERTISING,
                 not_ready='$part: the peripheral did not start advertising')


def pair_central(role, target, *args):
    """Bumble's central (pairing_peer.py --role central); it must run every step."""
    return Run(role, peer('pairing_peer.py', '--role', 'central', '--name', target, *args, port='$p2'),
               bumble='central', label='$part: the Bumble central failed')


def pair_ble(status, *args, role='central'):
    """`ble ARGS --hci (p2)`: standard output and error in ROLE.log.out and .err, both also appended to ROLE.log."""
    return Run(role, ble(*ours_bonds(args)), status=status, out=f'{role}.log.out', err=f'{role}.log.err',
               transcript=True, label='$part')


def paired(role, sc, authenticated):
    return Result(role, f'paired=1 sc={sc} authenticated={authenticated} key_size=16 bonded', 1)


def same_compare(ctx):
    compared = [[l for l in ctx.lines(role) if l.startswith('RESULT compare=')] for role in ('central', 'peripheral')]
    return compared[0] == compared[1]


def pairing_bumble_to_bumble():
    c, s = 'central', 'peripheral'
    return Scenario('pairing-bumble-central-to-bumble-peripheral', [
        Part('sc-just-works', [Controllers(2), pair_serve_bumble(),
                               pair_central(c, 'BumblePair', '--pair', '--read-before', SECRET, '--read', SECRET)],
             [Result(c, 'read_before', '0x0F'), paired(c, 1, 0), paired(s, 1, 0), Result(c, 'read_DEF3', TOP_SECRET)]),
        Part('sc-numeric-comparison', [Controllers(2), pair_serve_bumble('--io', 'yesno', '--mitm'),
                                       pair_central(c, 'BumblePair', '--io', 'yesno', '--mitm', '--pair')],
             [Result(s, 'method', 'numeric_comparison'), paired(c, 1, 1),
              Check(same_compare, '$part: the two sides compared different numbers')]),
        Part('sc-passkey-central-enters', [
            Controllers(2), pair_serve_bumble('--io', 'display', '--mitm', '--passkey', '123456'),
            pair_central(c, 'BumblePair', '--io', 'keyboard', '--passkey', '123456', '--pair')],
             [Result(s, 'passkey', 123456), paired(s, 1, 1)]),
        Part('legacy-passkey-peripheral-enters', [
            Controllers(2), pair_serve_bumble('--io', 'keyboard', '--passkey', '123456'),
            pair_central(c, 'BumblePair', '--legacy', '--io', 'display', '--mitm', '--passkey', '123456', '--pair')],
             [Result(c, 'passkey', 123456), paired(s, 0, 1)]),
        Part('wrong-passkey', [
            Controllers(2), pair_serve_bumble('--io', 'display', '--mitm', '--passkey', '123456'),
            pair_central(c, 'BumblePair', '--io', 'keyboard', '--passkey', '000000', '--pair', '--read', SECRET)],
             [Result(c, 'pairing_failed', '0x04'), Result(s, 'pairing_failed', '0x04'), Result(c, 'read_DEF3', '0x0F')]),
        Part('bonded-reconnect', [
            Controllers(2), pair_serve_bumble('--legacy', '--keystore', '$logs/$name-keys-peripheral.json'),
            pair_central(c, 'BumblePair', '--keystore', '$logs/$name-keys-central.json', '--pair'),
            pair_central('central2', 'BumblePair', '--keystore', '$logs/$name-keys-central.json', '--encrypt',
                         '--read', SECRET)],
             [paired(c, 0, 0), Result('central2', 'encrypted=1 paired_this_link', 0),
              Result('central2', 'read_DEF3', TOP_SECRET),
              Check(lambda ctx: len(matching(ctx, s, '^RESULT paired=1')) == 1
                    and 'RESULT encrypted=1 paired_this_link=0' in ctx.lines(s),
                    '$part: the peripheral did not encrypt the second link with the bond alone')]),
    ],
        # On Bumble's own controllers this would be Bumble against itself: it runs where it checks the controllers'
        # LE encryption (keys compared, EDIV/Rand, Encryption Change) with an independent host on both ends.
        kinds=lambda kind: not kind.bumbles_own, needs=('ble',), shared_controllers=True)


def pairing_bumble_central_to_ble_peripheral():
    c, s = 'central', 'peripheral'
    return Scenario('pairing-bumble-central-to-ble-peripheral', [
        Part('sc-just-works', [Controllers(2), pair_serve_ble(),
                               pair_central(c, 'SwiftBLEPair', '--pair', '--read-before', SECRET, '--read', SECRET,
                                            '--read', AUTHENTICATED)],
             # Our server holds no key for this central: Insufficient Authentication (Core 5.4, Vol 3, Part C,
             # 10.3.1); an unauthenticated (Just Works) key does not open an attribute that needs authentication.
             [Result(c, 'read_before', '0x05'), paired(c, 1, 0), Result(c, 'encrypted=1 paired_this_link', 1),
              Result(c, 'read_DEF3', TOP_SECRET), Result(c, 'read_DEFB', '0x05'),
              Json(s, dict(event='paired', method='justWorks', secure_connections=True, authenticated=False,
                           key_size=16, bonded=True))]),
        Part('sc-numeric-comparison', [Controllers(2), pair_serve_ble('--io', 'yesno'),
                                       pair_central(c, 'SwiftBLEPair', '--io', 'yesno', '--mitm', '--pair',
                                                    '--read', AUTHENTICATED)],
             [Result(c, 'method', 'numeric_comparison'), paired(c, 1, 1),
              Result(c, 'read_DEFB', hexof('authenticated')),
              Json(s, dict(event='paired', method='numericComparison', secure_connections=True, authenticated=True))]),
        Part('sc-passkey-bumble-enters', [
            Controllers(2), pair_serve_ble('--io', 'display', '--passkey', '123456'),
            pair_central(c, 'SwiftBLEPair', '--io', 'keyboard', '--mitm', '--passkey', '123456', '--pair')],
             [Json(s, dict(event='passkey', passkey=123456)), paired(c, 1, 1),
              Json(s, dict(event='paired', method='passkeyEntry', secure_connections=True, authenticated=True))]),
        Part('sc-passkey-ble-enters', [
            Controllers(2), pair_serve_ble('--io', 'keyboard', '--passkey', '123456'),
            pair_central(c, 'SwiftBLEPair', '--io', 'display', '--mitm', '--passkey', '123456', '--pair')],
             [Result(c, 'passkey', 123456), paired(c, 1, 1),
              Json(s, dict(event='paired', method='passkeyEntry', secure_connections=True, authenticated=True))]),
        Part('legacy-just-works', [Controllers(2), pair_serve_ble(),
                                   pair_central(c, 'SwiftBLEPair', '--legacy', '--pair', '--read', SECRET)],
             [paired(c, 0, 0), Result(c, 'read_DEF3', TOP_SECRET),
              Json(s, dict(event='paired', method='justWorks', secure_connections=False, authenticated=False))]),
        Part('legacy-passkey', [
            Controllers(2), pair_serve_ble('--io', 'display', '--passkey', '123456'),
            pair_central(c, 'SwiftBLEPair', '--legacy', '--io', 'keyboard', '--mitm', '--passkey', '123456', '--pair')],
             [Json(s, dict(event='passkey', passkey=123456)), paired(c, 0, 1),
              Json(s, dict(event='paired', method='passkeyEntry', secure_connections=False, authenticated=True))]),
        Part('wrong-passkey', [
            Controllers(2), pair_serve_ble('--io', 'display', '--passkey', '123456'),
            pair_central(c, 'SwiftBLEPair', '--io', 'keyboard', '--mitm', '--passkey', '000000', '--pair',
                         '--read', SECRET)],
             [Result(c, 'pairing_failed', '0x04'), Result(c, 'read_DEF3', '0x05'),
              Json(s, dict(event='pairing_failed', reason=4)),
              Count(s, '"event":"paired"', '==', 0, '$part: ble serve reported a pairing')]),
        Part('bonded-reconnect', [
            Controllers(2), pair_serve_ble('--bonds', '$logs/$name-bonds-ours.json'),
            pair_central(c, 'SwiftBLEPair', '--keystore', '$logs/$name-bonds-bumble.json', '--pair'),
            pair_central('central2', 'SwiftBLEPair', '--keystore', '$logs/$name-bonds-bumble.json', '--encrypt',
                         '--read', SECRET)],
             [paired(c, 1, 0), Result('central2', 'encrypted=1 paired_this_link', 0),
              Result('central2', 'read_DEF3', TOP_SECRET), Json(s, dict(event='encrypted', bonded=True)),
              Count(s, '"event":"paired"', '==', 1, '$part: ble serve paired more than once (or never)')]),
    ], needs=('ble',), shared_controllers=True)


def pairing_ble_central_to_bumble_peripheral():
    c, s, c2 = 'central', 'peripheral', 'central2'
    bonds = '$logs/$name-bonds-ours.json'
    static_bonds = '$logs/$name-static-bonds-ours.json'
    return Scenario('pairing-ble-central-to-bumble-peripheral', [
        Part('protected-read', [
            Controllers(2), pair_serve_bumble(),
            pair_ble(3, 'read', 'BumblePair', SECRET, '--no-pair'),
            Grep('central.log.err', r'Insufficient Encryption \(0x0f\)', '$part: ble read --no-pair did not report 0x0F',
                 ignore_case=True),
            pair_ble(0, 'read', 'BumblePair', SECRET, '--json'),
            Json('central.log.out', dict(uuid=SECRET, value=TOP_SECRET))],
             [paired(s, 1, 0), Result(s, 'encrypted=1 paired_this_link', 1)]),
        Part('sc-numeric-comparison', [Controllers(2), pair_serve_bumble('--io', 'yesno'),
                                       pair_ble(0, 'pair', 'BumblePair', '--io', 'yesno', '--mitm', '--json')],
             [Json(c, dict(event='paired', method='numericComparison', secure_connections=True, authenticated=True,
                           key_size=16)),
              Result(s, 'method', 'numeric_comparison'), paired(s, 1, 1)]),
        Part('sc-passkey-bumble-enters', [
            Controllers(2), pair_serve_bumble('--io', 'keyboard', '--passkey', '123456'),
            pair_ble(0, 'pair', 'BumblePair', '--io', 'display', '--passkey', '123456', '--mitm', '--json')],
             [Json(c, dict(event='passkey', passkey=123456)),
              Json(c, dict(event='paired', method='passkeyEntry', secure_connections=True, authenticated=True)),
              paired(s, 1, 1)]),
        Part('sc-passkey-ble-enters', [
            Controllers(2), pair_serve_bumble('--io', 'display', '--passkey', '123456'),
            pair_ble(0, 'pair', 'BumblePair', '--io', 'keyboard', '--passkey', '123456', '--mitm', '--json')],
             [Result(s, 'passkey', 123456),
              Json(c, dict(event='paired', method='passkeyEntry', secure_connections=True, authenticated=True)),
              paired(s, 1, 1)]),
        Part('legacy-just-works', [Controllers(2), pair_serve_bumble(),
                                   pair_ble(0, 'pair', 'BumblePair', '--legacy', '--json')],
             [Json(c, dict(event='paired', method='justWorks', secure_connections=False, authenticated=False)),
              paired(s, 0, 0)]),
        Part('legacy-passkey', [
            Controllers(2), pair_serve_bumble('--io', 'display', '--passkey', '123456'),
            pair_ble(0, 'pair', 'BumblePair', '--legacy', '--io', 'keyboard', '--passkey', '123456', '--mitm', '--json')],
             [Result(s, 'passkey', 123456),
              Json(c, dict(event='paired', method='passkeyEntry', secure_connections=False, authenticated=True)),
              paired(s, 0, 1)]),
        Part('wrong-passkey', [
            Controllers(2), pair_serve_bumble('--io', 'display', '--passkey', '123456'),
            pair_ble(3, 'pair', 'BumblePair', '--io', 'keyboard', '--passkey', '000000', '--mitm')],
             [Check(lambda ctx: ctx.lines('central.log.err') == [
                 'error: pairing with BumblePair failed: Confirm Value Failed (0x04)'],
                    lambda ctx: "$part: ble pair did not say 'error: pairing with BumblePair failed: Confirm Value "
                                f"Failed (0x04)' alone: {' '.join(ctx.lines('central.log.err')[:3])}"),
              Result(s, 'pairing_failed', '0x04')]),
        Part('bonded-reconnect', [
            Controllers(2), pair_serve_bumble('--keystore', '$logs/$name-bonds-bumble.json'),
            pair_ble(0, 'pair', 'BumblePair', '--bonds', bonds, '--json'),
            Json(c, dict(event='paired', bonded=True)),
            # The second link.
            pair_ble(0, 'pair', 'BumblePair', '--bonds', bonds, '--json', role=c2),
            Json(c2, dict(event='encrypted', bonded=True)),
            Count(c2, '"event":"paired"', '==', 0, '$part: ble pair paired again instead of using the bond'),
            pair_ble(0, 'read', 'BumblePair', SECRET, '--bonds', bonds, '--json', role=c2),
            Json('central2.log.out', dict(uuid=SECRET, value=TOP_SECRET)),
            Run(c2, [BLE, 'bonds', 'list', '--bonds', bonds, '--json'], timeout=10, label='$part: ble bonds list'),
            Grep(c2, 'D1:D2:D3:D4:D5:D6', '$part: ble bonds list does not list the Bumble peripheral'),
            Run(c2, [BLE, 'bonds', 'remove', 'D1:D2:D3:D4:D5:D6', '--bonds', bonds], timeout=10,
                label='$part: ble bonds remove'),
            Run(c2, [BLE, 'bonds', 'list', '--bonds', bonds, '--json'], timeout=10, out='central2.log.out',
                err='central2.log.err', label='$part: ble bonds list'),
            Grep('central2.log.out', 'D1:D2:D3:D4:D5:D6', '$part: the bond is still listed after ble bonds remove',
                 absent=True)],
             [Count(s, '^RESULT paired=1', '==', 1, '$part: the Bumble peripheral paired more than once (or never)'),
              Count(s, '^RESULT encrypted=1 paired_this_link=0$', '>=', 2,
                    '$part: the Bumble peripheral did not see two links encrypted with the bond alone')]),
        # Issue 23, item 4: a peripheral that advertises and connects from a static random address and distributes its
        # controller's public address as identity with an all-zero IRK (a device without privacy). The bond is found
        # under the address the link is made with: `ble read` encrypts with it and pairs nothing. Its own name: the parts
        # run at once on shared controllers, and a central looking for BumblePair may find another part's.
        Part('bonded-through-static-random', [
            Controllers(2), pair_serve_bumble('--name', 'SecureBand', '--address', 'E7:E6:E5:E4:E3:E2', '--identity-public',
                                              '--zero-irk', '--io', 'display', '--passkey', '123456',
                                              '--keystore', '$logs/$name-static-bonds-bumble.json'),
            pair_ble(0, 'pair', 'SecureBand', '--io', 'keyboard', '--passkey', '123456', '--mitm', '--bonds',
                     static_bonds, '--json'),
            Json(c, dict(event='paired', method='passkeyEntry', bonded=True)),
            Check(lambda ctx: any(f'"identity":"{i}"' in line for i in identities(ctx, s) for line in ctx.lines(c)),
                  '$part: ble pair did not report the public identity the peripheral distributed'),
            # The second link: a read that needs encryption.
            pair_ble(0, 'read', 'SecureBand', SECRET, '--bonds', static_bonds, '--json', role=c2),
            Json('central2.log.out', dict(uuid=SECRET, value=TOP_SECRET)),
            Json(c2, dict(event='encrypted', bonded=True, peer='E7:E6:E5:E4:E3:E2')),
            Count(c2, '"event":"paired"', '==', 0, '$part: ble read paired again instead of using the bond'),
            Run(c2, [BLE, 'bonds', 'list', '--bonds', static_bonds], timeout=10, out='central2.log.out', err='central2.log.err',
                label='$part: ble bonds list'),
            Grep('central2.log.out', r'^identity ([0-9A-F]{2}:){5}[0-9A-F]{2} \(public\), paired through '
                 r'E7:E6:E5:E4:E3:E2 \(random static\) bonded to ',
                 '$part: ble bonds list does not show the public identity and the static random address'),
            Grep('central2.log.out', r', IRK$', '$part: the all-zero IRK was stored as a key', absent=True)],
             [Count(s, '^RESULT paired=1', '==', 1, '$part: the Bumble peripheral paired more than once (or never)'),
              Count(s, '^RESULT encrypted=1 paired_this_link=0$', '>=', 1,
                    '$part: the Bumble peripheral did not see the second link encrypted with the bond alone')]),
    ], needs=('ble',), shared_controllers=True)


# -- ANCS (issue 25, item 7): `ble ancs` (our consumer) against a Bumble peripheral serving the Apple Notification
# Center Service with encryption required (peers/ancs_provider.py): it pairs when refused, prints the notifications
# the peer holds (pre-existing) and the one it posts later, with the titles, messages and app names the peer served,
# and performs the positive action on the incoming call, which the peer sees and answers with a removal.

def ancs_consumer_to_bumble_provider():
    out = 'central.log.out'
    return Scenario('ancs-consumer-to-bumble-provider', [Part('', [
        Controllers(2),
        Start('peripheral', peer('ancs_provider.py', '--run-for', '40'), bumble=True, ready=ADVERTISING,
              not_ready='the Bumble ANCS provider did not start advertising'),
        Run('central', ble('ancs', 'BPhone', '--count', '4', '--perform', 'positive', '--timeout', '20',
                           *ours_bonds(())), timeout=60, out=out, err='central.log.err', transcript=True,
            label='ble ancs')], [
        Grep(out, r'^paired with D7:D6:D5:D4:D3:D2.*bonded$', 'ble ancs did not pair (bonded) with the provider'),
        Grep(out, 'added 101 social [pre-existing|negative-action] Chat: Bumble says hi: Hello from the Bumble ANCS '
                  'provider [Dismiss]', 'ble ancs did not print notification 101 as the peer served it',
             whole=True, fixed=True),
        Grep(out, 'added 102 incoming call [important|pre-existing|positive-action|negative-action] Phone: Bumble '
                  'Caller: Incoming call [Accept / Reject]', 'ble ancs did not print the incoming call 102',
             whole=True, fixed=True),
        Grep(out, 'performed the positive action (Accept) on 102', 'ble ancs did not perform the action',
             whole=True, fixed=True),
        Grep(out, 'removed 102 incoming call [important|positive-action|negative-action]',
             'ble ancs did not print the removal of 102', whole=True, fixed=True),
        Grep(out, 'added 103 social [negative-action] Chat: Interop report (RootCanal, Bumble, ble): All green '
                  '[Dismiss]', 'ble ancs did not print the notification posted later (103)', whole=True, fixed=True),
        Result('peripheral', 'subscribed', 'data_source'),
        Result('peripheral', 'subscribed', 'notification_source'),
        Result('peripheral', 'action', 'positive uid=102'),
        Count('peripheral', '^RESULT paired=1 ', '==', 1, 'the provider did not pair exactly once'),
        Count('peripheral', '^RESULT refused=', '==', 0, 'the provider refused a command of ble ancs'),
        # Two notifications of Chat (101, 103): its display name is asked once (cached).
        Count('peripheral', '^RESULT get_app_attributes=com.example.chat$', '==', 1,
              "ble ancs asked the Chat app's name more than once (or never)"),
    ])], needs=('ble',))


def identities(ctx, role):
    """The identity addresses a pairing_peer.py with --identity-public said it distributes."""
    return [line.split('=', 1)[1] for line in ctx.lines(role) if line.startswith('RESULT identity=')]


# -- LE credit based channels between `ble l2cap` and Bumble's host (peers/l2cap_bench.py), 1 MB echoed each way,
# byte-identical, with the throughput of each pairing against Bumble with itself over the same controllers in the
# same run; a Bumble client that sends past its credits to `ble l2cap serve --hold` gets its channel closed. The
# controllers have 251-byte buffers: one per K-frame.

L2CAP_BYTES = 1048576
L2CAP_SERVERS = {
    'ble': [BLE, 'l2cap', 'serve', '--psm', '0x0080', '--echo', '--hci', 'tcp:127.0.0.1:$p1', '--json',
            '--run-for', '120'],
    'hold': [BLE, 'l2cap', 'serve', '--psm', '0x0080', '--hold', '--credits', '4', '--hci', 'tcp:127.0.0.1:$p1',
             '--json', '--run-for', '60'],
    'bumble': peer('l2cap_bench.py', '--role', 'server', '--name', 'SwiftBLEL2CAP', '--run-for', '120'),
}
L2CAP_CLIENTS = {   # (argv, time limit, what fails)
    'ble': (ble('l2cap', 'connect', 'SwiftBLEL2CAP', '--psm', '0x0080', '--bytes', str(L2CAP_BYTES), '--expect-echo',
                '--json'), 120, 'ble l2cap connect'),
    'bumble': (peer('l2cap_bench.py', '--role', 'client', '--bytes', str(L2CAP_BYTES), port='$p2'), 120,
               'the Bumble client'),
    'violate': (peer('l2cap_bench.py', '--role', 'client', '--violate', port='$p2'), 60, 'the Bumble client'),
}


def l2cap_part(name, server, client, checks):
    argv, limit, who = L2CAP_CLIENTS[client]
    return Part(name, [
        Controllers(2, large_acl=True),
        Start('server', L2CAP_SERVERS[server], bumble=server == 'bumble', ready='"event":"serving"|^READY',
              not_ready='$part: the server did not start'),
        Run('client', argv, timeout=limit, bumble='client' if client != 'ble' else None, label=f'$part: {who}'),
    ], checks)


def rate(key):
    """Records the MB/s (both directions) the part's client reported, as key."""
    def record(ctx):
        values = [m for line in ctx.lines('client')
                  for m in re.findall(r'(?:"event":"echo".*"mb_per_s":|^RESULT mb_per_s=)([0-9.]+)', line)]
        ctx.values[key] = values[-1] if values else ''
    return Do(record)


def send_file_part():
    """`ble l2cap connect --send FILE`: 1 MiB one way, no echo, to a Bumble server that counts and hashes what it
    receives; the channel closes (and the link drops) right after the last send, so every byte must have been
    delivered before the Disconnection Request and HCI Disconnect went (issue 23: the last 4096 bytes were lost)."""
    def make_file(ctx):
        data = random.Random(23).randbytes(L2CAP_BYTES)
        with open(ctx.path('send.bin'), 'wb') as f:
            f.write(data)
        ctx.values['send_sha256'] = hashlib.sha256(data).hexdigest()
    return Part('', [
        Do(make_file),
        Controllers(2, large_acl=True),
        Start('server', peer('l2cap_bench.py', '--role', 'server', '--count', '--name', 'SwiftBLEL2CAP', '--run-for', '120'),
              bumble=True, ready='^READY', not_ready='the Bumble server did not start'),
        Run('client', ble('l2cap', 'connect', 'SwiftBLEL2CAP', '--psm', '0x0080', '--send', '$logs/$prefix-send.bin',
                          '--json'), timeout=120, label='ble l2cap connect --send'),
        WaitFor('server', '^RESULT received_sha256=', 15)], [
        Result('server', 'received_bytes', L2CAP_BYTES),
        Result('server', 'received_sha256', lambda ctx: ctx.values.get('send_sha256', '')),
        Json('client', {'event': 'sent', 'bytes': L2CAP_BYTES, 'delivered': L2CAP_BYTES}),
    ])


def l2cap_figures(ctx):
    line = (f'l2cap on {ctx.kind.name} controllers, 1 MB each way: ours→Bumble {ctx.values["ours_to_bumble"]} MB/s, '
            f'Bumble→ours {ctx.values["bumble_to_ours"]} MB/s, Bumble→Bumble {ctx.values["reference"]} MB/s')
    print(line)
    with open(os.path.join(ctx.h.logs, f'{ctx.name}-figures.txt'), 'w') as f:
        f.write(line + '\n')


# -- the scenario table.

# -- `ble gateway`: what radios hear, published to a Mosquitto broker of the scenario's own, watched and driven by
# paho-mqtt (peers/mqtt_observer.py), an MQTT client that is not ours.

GATEWAY_NEEDS = ('ble', 'mosquitto', 'paho')


def observer(mode, *args, limit=60):
    return Start('observer', [PY, '$peers/mqtt_observer.py', '--port', '$mqtt', mode, *args], limit=limit,
                 ready='^SUBSCRIBED', timeout=15, not_ready='the paho observer did not subscribe')


def gateway(role, gateway_id, port, *args):
    return Start(role, [BLE, 'gateway', '--mqtt', 'mqtt://127.0.0.1:$mqtt', '--id', gateway_id, '--hci',
                        f'tcp:127.0.0.1:{port}', *args], ready='broker connected', timeout=15,
                 not_ready=f'ble gateway {gateway_id} did not connect to the broker')


def observer_results(*pairs):
    return [Result('observer', k, v) for k, v in pairs] + [Result('observer', 'done', 1)]


def gateway_presence_walk():
    """Three gateways 5 m apart on our controllers; a beacon walks from the first room to the third in 6 s (--walk):
    the presence topic goes kitchen, hall, study, each change published once; SIGINT: every gateway offline."""
    gateways = [('kitchen', '$p1'), ('hall', '$p2'), ('study', '$p3')]
    return Scenario('gateway-presence-follows-a-walking-beacon', [Part('', [
        Ports(4),
        Start('controllers', [BLE, 'controller', '--tcp', '127.0.0.1:$p1', '127.0.0.1:$p2', '127.0.0.1:$p3',
                              '127.0.0.1:$p4', '--spacing', '5', '--walk', '3:0,10:6'],
              ready='^READY', timeout=10, not_ready='ble controller did not print READY'),
        Broker(),
        observer('presence', '--gateways', 'kitchen,hall,study', '--device', '00:5B:00:00:00:04', '--seconds', '11'),
        *[gateway(g, g, p, '--dwell', '2') for g, p in gateways],
        # The virtual air's RSSI at 1 m is -40 dBm: the beacon says so, for distances in metres.
        Start('beacon', [BLE, 'beacon', '--ibeacon', 'E2C56DB5-DFFB-48D2-B060-D0F5A71096E0', '--major', '1',
                         '--minor', '2', '--power', '-40', '--hci', 'tcp:127.0.0.1:$p4']),
        Sleep(11),
        *[Interrupt(g) for g, _ in gateways],
        Exit('observer', message='the paho observer failed')],
        observer_results(('presence', 'kitchen,hall,study'), ('one_publisher_per_change', 1),
                         ('views', 'hall,kitchen,study'), ('offline', 3)))],
        kinds='once', needs=GATEWAY_NEEDS)


def gateway_devices():
    """Two simulated devices and an iBeacon, decoded on the gateway's device topics; the beacon's distance sensor
    announced to Home Assistant."""
    return Scenario('gateway-decodes-simulated-devices', [Part('', [
        Controllers(4), Broker(),
        Start('hrm', [BLE, 'serve', '--device', 'heart-rate', '--hci', 'tcp:127.0.0.1:$p1', '--json', '--run-for', '40'],
              ready=SERVING, not_ready='ble serve --device heart-rate did not start'),
        Start('thermometer', [BLE, 'serve', '--device', 'thermometer', '--hci', 'tcp:127.0.0.1:$p2', '--json',
                              '--run-for', '40'], ready=SERVING, not_ready='ble serve --device thermometer did not start'),
        Start('beacon', [BLE, 'beacon', '--ibeacon', 'E2C56DB5-DFFB-48D2-B060-D0F5A71096E0', '--major', '7',
                         '--minor', '9', '--hci', 'tcp:127.0.0.1:$p3']),
        observer('devices', '--gateway', 'gw', '--names', 'SwiftBLE HRM,SwiftBLE Thermometer', '--seconds', '20'),
        gateway('gateway', 'gw', '$p4'),
        Exit('observer', message='the paho observer failed')],
        observer_results(('record_SwiftBLE_HRM', '180D,180F,180A'), ('record_SwiftBLE_Thermometer', '1809,180A'),
                         ('beacon', 'ibeacon:E2C56DB5-DFFB-48D2-B060-D0F5A71096E0:7:9'), ('beacon_distance', 1),
                         ('ha_distance', 1)))],
        needs=GATEWAY_NEEDS)


# The twelve simulated devices of issue 26 (`ble serve --device`), their advertised names, and what the gateway must
# publish about each: the values it reads over a link (paths in the record's 'values'), or for the vendor devices,
# whose services it does not read, the services they advertise.
FLEET = [
    ('lab', 'SwiftBLELab', 'heart_rate_measurement.bpm,battery_level.percent,manufacturer_name.text'),
    ('heart-rate', 'SwiftBLE HRM', 'heart_rate_measurement.bpm,heart_rate_measurement.sensor_contact,battery_level.percent'),
    ('battery', 'SwiftBLE Battery', 'battery_level.percent'),
    ('blood-pressure', 'SwiftBLE BPM', 'blood_pressure_measurement.systolic,blood_pressure_measurement.diastolic'),
    ('thermometer', 'SwiftBLE Thermometer', 'temperature_measurement.temperature'),
    ('weight-scale', 'SwiftBLE Weight', 'weight_measurement.weight'),
    ('body-composition', 'SwiftBLE Body', 'body_composition_measurement.body_fat_percent,weight_measurement.weight'),
    ('glucose', 'SwiftBLE Glucose', 'glucose_measurement.mg_dl'),
    ('current-time', 'SwiftBLE Clock', 'current_time.date_time'),
    ('band', 'SwiftBLE Band', ''),
    ('piano', 'SwiftBLE Piano', ''),
    # Its name does not fit beside its 128-bit UUID: it is in the scan response, which Bumble's controller does not
    # pass on; the observer finds it by its service then.
    ('scale', 'SwiftBLE Scale@7D2E0001-5C3A-4B8E-9F41-5357424C4553', ''),
]
# What the vendor devices advertise (the gateway does not connect to them: no standard service it reads).
FLEET_SERVICES = [('SwiftBLE_Band', 'FEE0,1802'), ('SwiftBLE_Piano', 'FFE0,FFE1'),
                  ('SwiftBLE_Scale', '7D2E0001-5C3A-4B8E-9F41-5357424C4553')]


def gateway_fleet():
    """The twelve simulated devices, each `ble serve` on a controller of its own, heard by one gateway on a
    thirteenth: paho sees every device's record on its topic, the profile devices' values read over links (heart
    rate, battery, blood pressure, temperature, weight, body composition, glucose, time), the vendor devices'
    advertised services, and 12 Home Assistant sensors whose state topics carry the values they read. --max-links 9:
    one link per profile device (the lab included), so that none waits for another's link."""
    count = len(FLEET)
    return Scenario('gateway-twelve-devices-decoded-on-their-topics', [Part('', [
        Controllers(count + 1), Broker(),
        *[Start(device, [BLE, 'serve', '--device', device, '--hci', f'tcp:127.0.0.1:$p{i + 1}', '--json',
                         '--run-for', '60'], ready=SERVING, not_ready=f'ble serve --device {device} did not start')
          for i, (device, _, _) in enumerate(FLEET)],
        observer('fleet', '--gateway', 'gw', '--seconds', '40', '--minimum', '12',
                 *[a for _, name, paths in FLEET for a in ('--expect', f'{name}={paths}')]),
        gateway('gateway', 'gw', f'$p{count + 1}', '--max-links', '9', '--read-interval', '5'),
        Exit('observer', message='the paho observer failed'),
        Interrupt('gateway')],
        observer_results(*[(f'values_{name.replace(" ", "_")}', paths) for _, name, paths in FLEET if paths],
                         *[(f'services_{name}', services) for name, services in FLEET_SERVICES], ('ha_state_topics', 1))
        + [Grep('gateway', r'^sensor .*: connected', 'the gateway connected to no sensor')])],
        needs=GATEWAY_NEEDS)


def gateway_commands():
    """A GATT session on the lab device through the broker: paho sends the requests, the gateway answers."""
    return Scenario('gateway-command-session-on-the-lab', [Part('', [
        Controllers(2), serve_ble(40), Broker(),
        gateway('gateway', 'gw', '$p2'),
        Run('observer', [PY, '$peers/mqtt_observer.py', '--port', '$mqtt', 'command', '--gateway', 'gw', '--device',
                         'SwiftBLELab', '--read', '2A29', '--write', WRITABLE, '--value', hexof('through-mqtt'),
                         '--notify', '2A37'], timeout=60, label='the paho command session'),
        Interrupt('gateway')],
        observer_results(('connect', 'ok'), ('discover', 'ok'), ('read', 'ok'), ('read_value', 'swift-ble Lab Inc.'),
                         ('write', 'ok'), ('written', 1), ('subscribe', 'ok'), ('notifications', 1),
                         ('notification_decoded', 'heart_rate_measurement'), ('unsubscribe', 'ok'),
                         ('missing_characteristic', 'not_found'), ('unknown_op', 'unknown_op'),
                         ('junk', 'malformed_request'), ('disconnect', 'ok')))],
        needs=GATEWAY_NEEDS)


def account_part(name, queue, expect_drops):
    return Part(name, [
        Controllers(2), Broker(),
        observer('account', '--gateway', 'gw', '--seconds', '40', '--minimum', '15',
                 *(['--expect-drops'] if expect_drops else [])),
        Start('beacon', [BLE, 'beacon', '--ibeacon', 'E2C56DB5-DFFB-48D2-B060-D0F5A71096E0', '--hci',
                         'tcp:127.0.0.1:$p1']),
        # --interval 0: every advertisement is a reading.
        gateway('gateway', 'gw', '$p2', '--interval', '0', '--queue', str(queue)),
        Sleep(2.5), Stop('broker'), Sleep(2), Broker(again=True),
        WaitFor('gateway', 'connection 2', 15, 'the gateway did not reconnect'),
        Sleep(2), Interrupt('gateway'),
        Exit('observer', message='the paho observer failed')],
        observer_results(('reconnected', 1), ('readings_enough', 1), ('lost_silently', 0), ('dropped_counted', 1)))


def gateway_broker_restart():
    """The broker stops for 2 s during a stream of readings and comes back: every reading numbered by the gateway is
    received by a persistent paho session or counted as dropped -- none with the default queue, some with --queue 3."""
    return Scenario('gateway-broker-restart-every-reading-accounted',
                    [account_part('queue', 10000, False), account_part('small-queue', 3, True)],
                    needs=GATEWAY_NEEDS)


SCENARIOS = [
    Scenario('btsnoop-capture-decodes-in-tshark', [Part('', [
        Run('explore', [BLE, 'explore', 'SwiftBLELab', '--btsnoop', '$logs/$name.btsnoop'], timeout=60,
            label='ble explore failed'),
        Do(tshark_checks)])], kinds='once', needs=('ble', 'tshark')),
    cli_errors(),
    cli_json_types(),
    gateway_presence_walk(),
    gateway_devices(),
    gateway_fleet(),
    gateway_commands(),
    gateway_broker_restart(),
    *[lab_session(c, p) for c in ('bumble', 'ble') for p in ('bumble', 'ble')],
    two_centrals(),
    simulated_devices(),

    # Bumble's central against the characteristics `ble serve`'s application answers: a counter computed per read,
    # a write refused with application error 0x80, a write answered late, a reliable write set all or nothing.
    Scenario('application-answers-bumble-central-to-ble-peripheral', [Part('', [
        Controllers(2), serve_ble(30),
        Run('central', peer('app_client.py', port='$p2'), bumble='central', label='the Bumble central failed')], [
        Result('central', 'counter_computed', 1),
        Result('central', 'refused_error', '0x80'),
        Result('central', 'refused_kept', 1),
        Result('central', 'guarded_write', 1),
        Result('central', 'slow_answered', 1),
        Result('central', 'set_refused_error', '0x80'),
        Result('central', 'set_refused_nothing_written', 1),
        Result('central', 'set_applied_whole', 1),
        Grep('peripheral', '"event":"counter"', "the peripheral's application did not log the counter reads"),
        Count('peripheral', '"event":"refused"', '==', 2, "the peripheral's application did not log two refusals"),
    ])], needs=('ble',)),

    # Our central against our peripheral, across the controllers under test (on Bumble's: our host on both ends of an
    # independent controller implementation).
    Scenario('ble-central-to-ble-peripheral', [Part('', [
        Controllers(2), serve_ble(30),
        Run('scan', ble('scan', '--service', '180D', '--timeout', '2', '--json')),
        Run('central', ble('explore', 'SwiftBLELab', '--json')),
        Run('read', ble('read', 'SwiftBLELab', LONG, '--json')),
        Run('central', ble('write', 'SwiftBLELab', WRITABLE, hexof('ours-to-ours'))),
        Run('central', ble('subscribe', 'SwiftBLELab', '2A37', '--count', '2', '--json'))], [
        Grep('central', '"mtu":247,', 'no MTU 247'),
        Grep('scan', '"connectable":true,.*"name":"SwiftBLELab","rssi":-?[0-9]+,"services":\\["180D","180F"\\]',
             'ble scan --service 180D did not list SwiftBLELab'),
        Check(lambda ctx: sum(len(m) + 1 for line in ctx.lines('read')
                              for m in re.findall('"value":"[0-9a-f]*"', line)) > 600
              and grep(ctx, 'read', '"length":300,'), 'ble read did not return the 300-byte value'),
        Count('central', '"kind":"service"', '==', 6, 'expected 6 services'),
        Grep('central', f'"uuid":"2A29".*"value":"{hexof("swift-ble Lab Inc.")}"', 'manufacturer name not read'),
        Grep('peripheral', f'"event":"write".*"value":"{hexof("ours-to-ours")}"', 'peripheral did not log the write'),
        Count('central', '"index":[0-9]*,"uuid":"2A37"', '==', 2, 'expected 2 heart-rate notifications'),
    ])], needs=('ble',)),

    # Our central (ble explore, write, subscribe) against Bumble's peripheral.
    Scenario('ble-central-to-bumble-peripheral', [Part('', [
        Controllers(2), serve_bumble(30),
        Run('central', ble('explore', 'BumbleLabPeripheral', '--json')),
        Run('central', ble('write', 'BumbleLabPeripheral', WRITABLE, hexof('from-swift-ble'))),
        Run('central', ble('subscribe', 'BumbleLabPeripheral', '2A37', '--count', '2', '--json')),
        Sleep(0.3)], [
        Grep('central', '"mtu":247,', 'no MTU 247'),
        Grep('central', f'"uuid":"2A29".*"value":"{hexof("Bumble Lab Inc.")}"', 'manufacturer name not read'),
        Grep('central', f'"uuid":"{LONG}".*"value":"000102', 'long value not read'),
        MatchedChars('central', (f'"uuid":"{LONG}"[^}}]*', '"value":"[0-9a-f]*"'), 600,
                     'long value shorter than 300 bytes'),
        Count('central', '"kind":"service"', '==', 6, 'expected 6 services'),
        Result('peripheral', 'write', 'from-swift-ble'),
        Count('central', '"index":[0-9]*,"uuid":"2A37"', '==', 2, 'expected 2 heart-rate notifications'),
    ])], needs=('ble',)),

    # Cloning and replaying a device that is not ours: `ble explore --save --btsnoop` against Bumble's lab
    # peripheral, which then goes away; `ble serve --gatt` serves the clone and `ble serve --replay` the capture, on the
    # same controller; the same explore against each prints the same database (handles, declarations, values, the
    # refusals) as against the original. The explore pairs where Bumble refuses a value for security, and so must
    # the clone and the replay.
    Scenario('clone-and-replay-bumble-peripheral', [Part('', [
        Controllers(2), serve_bumble(40),
        Run('original', ble('explore', 'BumbleLabPeripheral', '--json', '--save', '$logs/$prefix-clone.json',
                            '--btsnoop', '$logs/$prefix-capture.btsnoop', '--bonds', '$logs/$prefix-bonds-1.json'),
            timeout=40, label='ble explore --save against Bumble'),
        Stop('peripheral'),
        Start('clone', [BLE, 'serve', '--gatt', '$logs/$prefix-clone.json', '--hci', 'tcp:127.0.0.1:$p1', '--json',
                        '--run-for', '40', '--bonds', '$logs/$prefix-bonds-2.json'],
              ready=SERVING, not_ready='ble serve --gatt did not serve the clone'),
        Run('of-clone', ble('explore', 'BumbleLabPeripheral', '--json', '--bonds', '$logs/$prefix-bonds-3.json'),
            timeout=40, label='ble explore of the clone'),
        Stop('clone'),
        Start('replay', [BLE, 'serve', '--replay', '$logs/$prefix-capture.btsnoop', '--hci', 'tcp:127.0.0.1:$p1', '--json',
                         '--run-for', '40', '--bonds', '$logs/$prefix-bonds-4.json'],
              ready=SERVING, not_ready='ble serve --replay did not serve the capture'),
        Run('of-replay', ble('explore', 'BumbleLabPeripheral', '--json', '--bonds', '$logs/$prefix-bonds-5.json'),
            timeout=40, label='ble explore of the replay')], [
        Count('original', '"kind":"service"', '>=', 5, 'the explore of Bumble found fewer than 5 services'),
        Grep('original', '"event":"saved"', 'ble explore --save did not save'),
        Check(lambda ctx: same_tree(ctx, 'original', 'of-clone'), lambda ctx: f"the clone explores differently from Bumble: {ctx.values.get('detail')}"),
        Check(lambda ctx: same_tree(ctx, 'original', 'of-replay'), lambda ctx: f"the replay explores differently from Bumble: {ctx.values.get('detail')}"),
        Grep('replay', '"event":"replay".*"skipped_records":0', 'ble serve --replay skipped records of the capture'),
    ])], needs=('ble',)),

    # A Bumble scanner decodes the iBeacon our `ble beacon` advertises (its own decoder, peers/beacon_scanner.py):
    # the same UUID, major, minor and measured power, non-connectable.
    Scenario('bumble-scanner-decodes-ble-ibeacon', [Part('', [
        Controllers(2),
        Start('beacon', [BLE, 'beacon', '--ibeacon', 'E2C56DB5-DFFB-48D2-B060-D0F5A71096E0', '--major', '4660',
                         '--minor', '22136', '--power', '-59', '--hci', 'tcp:127.0.0.1:$p1', '--json', '--run-for', '30'],
              ready='"event":"advertising"', not_ready='ble beacon did not start advertising'),
        Run('scanner', peer('beacon_scanner.py', '--want', 'ibeacon', '--timeout', '10', port='$p2'),
            bumble='scanner', label='the scanner')], [
        Result('scanner', 'ibeacon_uuid', 'E2C56DB5-DFFB-48D2-B060-D0F5A71096E0'),
        Result('scanner', 'ibeacon_major', 4660),
        Result('scanner', 'ibeacon_minor', 22136),
        Result('scanner', 'ibeacon_power', -59),
        Result('scanner', 'ibeacon_connectable', 0),
        Result('scanner', 'done', 1),
    ])], needs=('ble',)),

    # Extended advertising (Bluetooth 5): a Bumble device advertises two advertising sets of extended, non-connectable
    # PDUs made with its own Device.create_advertising_set (peers/extended_advertiser.py), one on LE 1M (SID 1) and one
    # on LE Coded (SID 2, secondary PHY LE Coded). `ble scan --phy both --json` finds both, each with its PHY and SID;
    # a scan of one PHY finds only the set on it. Bumble's controller lists no extended command and has no LE Coded on
    # its air (docs/ble-tool.md): there our host scans with the legacy commands, refuses a Coded scan, and a 1M scan hears both
    # sets (as extended reports, on "1M").
    Scenario('ble-scan-finds-bumble-extended-advertising', [Part('', [
        Controllers(2),
        Start('advertiser', peer('extended_advertiser.py', '--run-for', '40'), bumble=True, ready=ADVERTISING,
              not_ready='the Bumble extended advertiser did not start its two advertising sets'),
        Run('both', ble('scan', '--phy', 'both', '--json', '--timeout', '3'), label='ble scan --phy both',
            when=lambda ctx: not ctx.kind.bumbles_own),
        Run('coded', ble('scan', '--phy', 'coded', '--json', '--timeout', '2'), label='ble scan --phy coded',
            when=lambda ctx: not ctx.kind.bumbles_own),
        Run('coded', ble('scan', '--phy', 'coded', '--json', '--timeout', '2'), status=1, out='coded-out', err='coded-err',
            transcript=True, label='ble scan --phy coded on a controller without extended commands',
            when=lambda ctx: ctx.kind.bumbles_own),
        Run('onem', ble('scan', '--phy', '1m', '--json', '--timeout', '2'), label='ble scan --phy 1m')], [
        Grep('both', '"advertising":\\{"dataLength":[0-9]+,"extended":true,"phy":"1M","secondaryPHY":"1M","sid":1,'
             '"truncated":false\\}.*"name":"Bumble Ext 1M"',
             'ble scan --phy both did not find the LE 1M extended set (SID 1)', when=lambda ctx: not ctx.kind.bumbles_own),
        Grep('both', '"advertising":\\{"dataLength":[0-9]+,"extended":true,"phy":"Coded","secondaryPHY":"Coded","sid":2,'
             '"truncated":false\\}.*"name":"Bumble Ext Coded"',
             'ble scan --phy both did not find the LE Coded extended set (SID 2)', when=lambda ctx: not ctx.kind.bumbles_own),
        Grep('coded', '"phy":"Coded".*"name":"Bumble Ext Coded"', 'ble scan --phy coded did not find the LE Coded set',
             when=lambda ctx: not ctx.kind.bumbles_own),
        Count('coded', '"name":"Bumble Ext 1M"', '==', 0, 'ble scan --phy coded heard the LE 1M set'),
        Grep('coded', 'does not support LE extended advertising', 'ble scan --phy coded did not say why it cannot scan',
             when=lambda ctx: ctx.kind.bumbles_own),
        Grep('onem', '"phy":"1M".*"name":"Bumble Ext 1M"', 'ble scan --phy 1m did not find the LE 1M set'),
        Grep('onem', '"extended":true,.*"name":"Bumble Ext 1M"', 'ble scan --phy 1m did not see extended PDUs'),
        Count('onem', '"name":"Bumble Ext Coded"', '==', 0, 'ble scan --phy 1m heard the LE Coded set',
              when=lambda ctx: not ctx.kind.bumbles_own),
    ])], needs=('ble',)),

    # `ble serve --extended --adv-data HEX` advertises the lab device in one extended, connectable advertisement and
    # 400 bytes of manufacturer data in a second, non-connectable one ("Extended Lab Data", split over several reports);
    # a Bumble central (peers/extended_central.py) finds both with its extended scan, joins the parts, sees extended
    # PDUs, connects with LE Extended Create Connection and reads the Device Name over GATT. On Bumble's controller (no
    # extended command listed) `ble serve --extended` says it cannot.
    Scenario('bumble-central-connects-to-ble-serve-extended', [Part('', [
        Controllers(2),
        Start('peripheral', [BLE, 'serve', '--hci', 'tcp:127.0.0.1:$p1', '--json', '--run-for', '30', '--name', 'Extended Lab',
                             '--extended', '--adv-data', ('c9ffffff' + '5a' * 198) * 2],
              ready=SERVING, not_ready='ble serve --extended did not start serving', when=lambda ctx: not ctx.kind.bumbles_own),
        Run('peripheral', [BLE, 'serve', '--hci', 'tcp:127.0.0.1:$p1', '--run-for', '5', '--extended'], status=1,
            out='peripheral-out', err='peripheral-err', transcript=True, label='ble serve --extended on Bumble\'s controller',
            when=lambda ctx: ctx.kind.bumbles_own),
        Run('central', peer('extended_central.py', '--name', 'Extended Lab', '--also', 'Extended Lab Data', port='$p2'),
            bumble='central',
            timeout=60, label='the Bumble central', when=lambda ctx: not ctx.kind.bumbles_own)], [
        Grep('peripheral', '"event":"serving".*"extended":true', 'ble serve did not say it advertises extended',
             when=lambda ctx: not ctx.kind.bumbles_own),
        Grep('peripheral', 'does not support LE extended advertising', 'ble serve --extended did not say why it cannot',
             when=lambda ctx: ctx.kind.bumbles_own),
        *[Result('central', key, value, when=lambda ctx: not ctx.kind.bumbles_own)
          for key, value in (('found', 1), ('legacy', 0), ('primary_phy', 1), ('connected', 1),
                             ('device_name', 'Extended Lab'), ('done', 1))],
        Result('central', 'also_connectable', 0, when=lambda ctx: not ctx.kind.bumbles_own),
        Check(lambda ctx: ctx.kind.bumbles_own or any(re.fullmatch('RESULT also_length=([0-9]+)', line)
                                                      and int(line.split('=')[1]) > 400 for line in ctx.lines('central')),
              'the Bumble central did not get the 400 bytes of the second advertisement whole'),
    ])], needs=('ble',)),

    # Our `ble range --json` ranges a Bumble beacon (peers/beacon_advertiser.py) rotating an iBeacon, an Eddystone-URL,
    # an Eddystone-UID and an Eddystone-TLM frame built by Bumble's side: each identified, with a distance and a
    # proximity, numbers as numbers, and the TLM telemetry attached to the UID beacon that precedes it.
    Scenario('ble-ranges-bumble-beacons', [Part('', [
        Controllers(2),
        Start('advertiser', peer('beacon_advertiser.py', '--ibeacon', '2F234454-CF6D-4A0F-ADF2-F4911BA9FFA6:7:9:-59',
                                 '--eddystone-url', 'https://swift.org', '--eddystone-uid',
                                 'edd1ebeac04e5defa017:0123456789ab', '--eddystone-tlm', '--dwell', '0.3',
                                 '--run-for', '40'),
              bumble=True, ready=ADVERTISING, not_ready='the Bumble beacon did not start advertising'),
        Run('range', ble('range', '--json', '--run-for', '6'), label='ble range')], [
        Grep('range', '"identifier":"ibeacon:2F234454-CF6D-4A0F-ADF2-F4911BA9FFA6:7:9","format":"ibeacon",'
             '"uuid":"2F234454-CF6D-4A0F-ADF2-F4911BA9FFA6","major":7,"minor":9,"measured_power":-59,"rssi":-?[0-9]+,'
             '"smoothed_rssi":-?[0-9]+(\\.[0-9]+)?,"distance":-?[0-9]+(\\.[0-9]+)?,"accuracy":-?[0-9]+(\\.[0-9]+)?,'
             '"proximity":"(immediate|near|far)"', 'ble range did not range the Bumble iBeacon (7, 9) with a distance'),
        Grep('range', '"identifier":"eddystone-url:https://swift.org".*"measured_power":-59,.*"distance":'
             '-?[0-9]+(\\.[0-9]+)?', 'ble range did not range the Bumble Eddystone-URL'),
        Grep('range', '"identifier":"eddystone-uid:edd1ebeac04e5defa017:0123456789ab".*"distance":-?[0-9]+(\\.[0-9]+)?',
             'ble range did not range the Bumble Eddystone-UID'),
        # The TLM frame follows the UID frame in the rotation: its telemetry joins the UID beacon.
        Grep('range', '"identifier":"eddystone-uid:edd1ebeac04e5defa017:0123456789ab".*"battery_mv":3000,'
             '"temperature":22.50,"advertising_count":[0-9]+,"uptime":-?[0-9]+(\\.[0-9]+)?',
             "ble range did not show the Bumble beacon's TLM telemetry (3000 mV, 22.5 °C) on its UID"),
    ])], needs=('ble',)),

    # LE credit based channels between our HCIHost (L2CAPInteropTests, in the test bundle built next to ble) and
    # Bumble's host (peers/l2cap_peer.py): 64 KB echoed each way, three enhanced channels in one request.
    Scenario('l2cap-channels-ble-host-and-bumble-host', [Part('', [
        Controllers(2),
        Start('bumble', peer('l2cap_peer.py', '--run-for', '60'), bumble=True, ready='^READY',
              not_ready='the Bumble peer did not start'),
        Run('ours', ['swift', 'test', '--package-path', lambda ctx: ctx.h.repo, '--scratch-path',
                     lambda ctx: ctx.h.scratch(), '--skip-build', '--filter', 'L2CAPInteropTests'],
            env={'BLE_INTEROP_L2CAP_PORT': '$p2'}, timeout=120, label='L2CAPInteropTests failed'),
        WaitFor('bumble', '^RESULT bumble_to_ours=', 10)], [
        Grep('ours', 'Test echoBothWaysWithBumble\\(\\) passed', 'the test did not run'),
        Result('bumble', 'bumble_to_ours', 'ok'),
    ])], needs=('ble', 'test-bundle')),

    Scenario('l2cap-cli-and-bumble', [
        l2cap_part('ours-to-bumble', 'bumble', 'ble', [
            Grep('client', '"event":"echo".*"identical":true', 'ours-to-bumble: the echo of 1 MB is not identical'),
            rate('ours_to_bumble')]),
        l2cap_part('bumble-to-ours', 'ble', 'bumble', [
            Result('client', 'identical', 1), Result('client', 'bytes', L2CAP_BYTES),
            Grep('server', f'^\\{{"bytes":{L2CAP_BYTES},.*"event":"closed"', 'bumble-to-ours: ble l2cap serve did not count 1 MB'),
            rate('bumble_to_ours')]),
        l2cap_part('bumble-to-bumble', 'bumble', 'bumble', [Result('client', 'identical', 1), rate('reference')]),
        l2cap_part('violation', 'hold', 'violate', [Result('client', 'violation_disconnected', 1)]),
    ], needs=('ble',), on_pass=l2cap_figures),

    # -- nothing lost at close: 1 MiB sent one way with `ble l2cap connect --send`, counted and hashed by Bumble.
    Scenario('l2cap-cli-send-file-to-bumble', [send_file_part()], needs=('ble',)),

    pairing_bumble_to_bumble(),
    pairing_bumble_central_to_ble_peripheral(),
    pairing_ble_central_to_bumble_peripheral(),
    ancs_consumer_to_bumble_provider(),

    # CoreBluetooth-style programs (CoreBluetoothCompat, the Examples/ demos next to ble) against Bumble, choosing the
    # controller as an iOS-style program must: with SWIFT_BLE_HCI=tcp:HOST:PORT.
    # battery-demo (a CBCentralManager app) against Bumble's lab peripheral: found by its Battery service and name,
    # the manufacturer name read from Device Information, the battery level read.
    Scenario('cb-central-to-bumble-peripheral', [Part('', [
        Controllers(2), serve_bumble(30),
        Run('central', ['$bin/battery-demo', '--name', 'BumbleLabPeripheral', '--updates', '0'],
            env={'SWIFT_BLE_HCI': 'tcp:127.0.0.1:$p2'}, label='battery-demo')], [
        Grep('central', 'connected to BumbleLabPeripheral', 'battery-demo did not connect', whole=True, fixed=True),
        Grep('central', 'manufacturer Bumble Lab Inc.', 'manufacturer name not read', whole=True, fixed=True),
        Grep('central', '^battery level [0-9]+%$', 'battery level not read'),
        Grep('central', 'disconnected', 'no disconnection', whole=True, fixed=True),
    ])], needs=('ble', 'battery-demo')),

    # transfer-demo's CBPeripheralManager (Apple's transfer sample) against Bumble's central: the file arrives whole
    # in chunks with an EOM marker, and the reply is attributed to the identifier the peripheral gave that central.
    # The name is short enough to share the advertising packet with the 128-bit service UUID: Bumble's controller
    # sends a copy of the advertising data as scan response (see docs/ble-tool.md), so a name moved to the scan response
    # would never be heard.
    Scenario('cb-peripheral-to-bumble-central', [Part('', [
        Do(lambda ctx: open(ctx.path('file.bin'), 'wb').write(os.urandom(6000))),
        Controllers(2),
        Start('peripheral', ['$bin/transfer-demo', '--peripheral-only', '--name', 'CBXfer', '--file',
                             '$logs/$name-file.bin', '--centrals', '1'], env={'SWIFT_BLE_HCI': 'tcp:127.0.0.1:$p1'},
              ready='^peripheral: advertising CBXfer', not_ready='transfer-demo did not start advertising'),
        Run('central', peer('transfer_central.py', '--target-name', 'CBXfer', port='$p2'), timeout=40,
            bumble='central', label='the Bumble central failed'),
        WaitFor('peripheral', '^done', 10, message='transfer-demo did not finish')], [
        Result('central', 'received', 6000),
        Result('central', 'sha256', lambda ctx: hashlib.sha256(open(ctx.path('file.bin'), 'rb').read()).hexdigest()),
        Result('central', 'reply', 'written'),
        Do(lambda ctx: ctx.values.update(identity=next(
            (l[len('RESULT who_am_i='):] for l in ctx.lines('central') if l.startswith('RESULT who_am_i=')), ''))),
        Check(lambda ctx: ctx.values['identity'], 'no identity read'),
        # The identifier of CBCentral C0:C1:C2:C3:C4:C5 (random): the address in its last group.
        Check(lambda ctx: ctx.values['identity'].endswith('-C0C1C2C3C4C5'),
              lambda ctx: f"identity {ctx.values['identity']} does not carry the central's address"),
        Check(lambda ctx: grep(ctx, 'peripheral', f'peripheral: {ctx.values["identity"]} wrote "thanks from bumble"',
                               whole=True, fixed=True),
              lambda ctx: f"the reply is not attributed to {ctx.values['identity']}"),
        Check(lambda ctx: grep(ctx, 'peripheral', '^' + re.escape(f'peripheral: sent 6000 bytes and EOM to '
                                                                  f'{ctx.values["identity"]}')),
              lambda ctx: f"the peripheral did not send the whole file to {ctx.values['identity']}"),
    ])], needs=('ble', 'transfer-demo')),
]


# ---------------------------------------------------------------------------------------------------------------
# The engine: runs every selected scenario on every kind it applies to, prints PASS/FAIL/SKIP lines, the logs of a
# failed scenario, and the verdict line.

class Harness:
    def __init__(self, options):
        self.__dict__.update(options)
        self.py = os.path.join(self.repo, '.venv-bumble', 'bin', 'python')
        self.logs = os.path.abspath(self.logs) if self.logs else os.path.join(self.repo, 'interop-logs')
        self.passed = self.failed = self.skipped = 0

    def scratch(self):
        """The build's scratch directory: ble is in SCRATCH/<triple>/debug or SCRATCH/debug."""
        scratch = os.path.dirname(os.path.dirname(self.ble))
        return os.path.dirname(scratch) if '-' in os.path.basename(scratch) else scratch

    def missing(self, needs):
        """Why a scenario with these needs cannot run here (None: it can)."""
        for need in needs:
            if need == 'ble' and not self.ble:
                return 'needs --ble PATH/TO/ble'
            if need == 'central' and not self.central:
                return 'needs --central PATH/TO/interop-central'
            if need == 'tshark' and not shutil.which('tshark'):
                return 'tshark is not installed (apt-get install tshark)'
            if need == 'test-bundle' and not glob.glob(os.path.join(os.path.dirname(self.ble), '*PackageTests*')):
                return 'needs the test bundle (swift build --build-tests)'
            if need == 'mosquitto' and not mosquitto_path():
                return 'mosquitto is not installed (apt-get install mosquitto)'
            if need == 'paho':
                try:
                    subprocess.run([self.py, '-c', 'import paho.mqtt.client'], check=True, capture_output=True)
                except (OSError, subprocess.CalledProcessError):
                    return 'paho-mqtt is not in the venv (Tests/Interop/bootstrap.sh installs it)'
            if need not in ('ble', 'central', 'tshark', 'test-bundle', 'mosquitto', 'paho') \
                    and not os.access(os.path.join(os.path.dirname(self.ble), need), os.X_OK):
                return f'no {need} next to {self.ble}'
        return None

    def captures(self, name):
        pattern = os.path.join(self.logs, glob.escape(name))
        return sorted(glob.glob(pattern + '-*.btsnoop') + glob.glob(pattern + '-*controller-snoop/*.btsnoop'))

    def run(self, scenario, kind):
        name = scenario.name + (f'-on-{kind.name}' if kind else '')
        if self.only and self.only not in name:
            return
        reason = self.missing(scenario.needs)
        if reason:
            print(f'SKIP {name}: {reason}', flush=True)
            self.skipped += 1
            return
        began = time.monotonic()
        ctx = Context(self, scenario, name, kind)
        share = scenario.shared_controllers and kind is not None and kind.fresh_per_client
        try:
            for part in scenario.parts:
                ctx.part = part.name
                try:
                    self.steps(ctx, part.steps)
                    ctx.stop_part(keep_controllers=share)
                    self.steps(ctx, part.checks)
                except Abort:
                    ctx.ok = False
                    ctx.stop_part(keep_controllers=share)
        finally:
            ctx.part = ''
            ctx.stop_part()
        if self.snoop:   # every capture of the scenario decoded: every HCI command, its parameters and its outcome
            for capture in self.captures(name):
                if os.path.getsize(capture):
                    decode(self, capture)
        if ctx.ok:
            if scenario.on_pass:
                scenario.on_pass(ctx)
            print(f'PASS {name} ({int((time.monotonic() - began) * 1000)} ms)', flush=True)
            self.passed += 1
            return
        # Our hosts record their HCI traffic: a failure shows every capture decoded (commands, events, ACL counts).
        for capture in self.captures(name):
            if os.path.getsize(capture) and not os.path.exists(capture[:-len('.btsnoop')] + '.hci.txt'):
                decode(self, capture)
        print(f'FAIL {name}: see above')
        pattern = os.path.join(self.logs, glob.escape(name))
        for path in sorted(glob.glob(pattern + '-*.log')) + sorted(glob.glob(pattern + '-*.hci.txt')):
            print(f'----- {path} (last 150 lines)')
            print('\n'.join(read_lines(path)[-150:]))
        print(f'----- end of {name}', flush=True)
        self.failed += 1

    @staticmethod
    def steps(ctx, steps):
        for step in steps:
            if not step.applies(ctx):
                continue
            try:
                step.run(ctx)
            except (Abort, KeyboardInterrupt):
                raise
            except Exception as error:   # a check that cannot even look (a log missing...) is a failed check
                ctx.problem(f'{type(step).__name__} step failed: {error!r}')


USAGE = 'usage: run.sh [--controllers ble,bumble] [--ble PATH] [--central PATH] [--only TEXT] [--snoop] ' \
        '[--lab-args "..."] [--logs DIR] [--skip-once] (see run.sh --help)'


def options(argv):
    """The options of run.sh (which prints the help); exits 2 on a mistake."""
    def die(message):
        print(message, file=sys.stderr)
        sys.exit(2)
    o = dict(kinds=[], ble='', central='', only='', snoop=False, lab_args='', logs='', skip_once=False)
    args = list(argv)
    while args:
        arg = args.pop(0)
        if arg in ('-h', '--help'):
            print(__doc__.rstrip())
            print(USAGE)
            sys.exit(0)
        if arg in ('--snoop', '--skip-once'):
            o[arg[2:].replace('-', '_')] = True
            continue
        key = {'--controllers': 'kinds', '--ble': 'ble', '--central': 'central', '--only': 'only',
               '--lab-args': 'lab_args', '--logs': 'logs'}.get(arg)
        if key is None:
            die(f'unknown option {arg} (see --help)')
        if not args:
            die(f'{arg} needs a value (see --help)')
        o[key] = args.pop(0)
    if isinstance(o['kinds'], str):
        o['kinds'] = [k for k in o['kinds'].replace(',', ' ').split() if k]
    if o['ble']:
        if not (os.path.isfile(o['ble']) and os.access(o['ble'], os.X_OK)):
            die(f"--ble {o['ble']}: not an executable (build it: swift build --product ble)")
        o['ble'] = os.path.abspath(o['ble'])
        next_to = os.path.join(os.path.dirname(o['ble']), 'interop-central')
        if not o['central'] and os.access(next_to, os.X_OK):
            o['central'] = next_to
    if o['central']:
        if not (os.path.isfile(o['central']) and os.access(o['central'], os.X_OK)):
            die(f"--central {o['central']}: not an executable (swift build --product interop-central)")
        o['central'] = os.path.abspath(o['central'])
    o['kinds'] = o['kinds'] or ['ble' if o['ble'] else 'bumble']
    for kind in o['kinds']:
        if kind not in CONTROLLER_KINDS:
            die(f"--controllers: '{kind}' is not one of {', '.join(CONTROLLER_KINDS)}")
        if CONTROLLER_KINDS[kind].needs_ble and not o['ble']:
            die(f'--controllers {kind} needs --ble PATH/TO/ble')
    top = subprocess.run(['git', '-C', HERE, 'rev-parse', '--show-toplevel'], capture_output=True, text=True)
    o['repo'] = top.stdout.strip() if top.returncode == 0 else os.path.dirname(os.path.dirname(HERE))
    return o


def main(argv):
    h = Harness(options(argv))
    if not os.access(h.py, os.X_OK):
        print(f'{h.py} is missing: run Tests/Interop/bootstrap.sh (run.sh does)', file=sys.stderr)
        return 1
    shutil.rmtree(h.logs, ignore_errors=True)
    os.makedirs(h.logs)
    # Our tool keeps bonds in $XDG_DATA_HOME/swift-ble/bonds.json on a real controller: here, in the logs, so a run
    # never touches the user's bonds and starts from none (scenarios that pair pass --bonds files of their own).
    os.environ['XDG_DATA_HOME'] = os.path.join(h.logs, 'xdg-data')
    began = time.monotonic()
    for scenario in SCENARIOS:
        if scenario.kinds == 'once' and not h.skip_once:
            h.run(scenario, None)
    for kind in (CONTROLLER_KINDS[k] for k in h.kinds):
        for scenario in SCENARIOS:
            if scenario.kinds != 'once' and scenario.runs_on(kind):
                h.run(scenario, kind)
    print(f'interop: {int((time.monotonic() - began) * 1000)} ms, {h.skipped} skipped, logs in {h.logs}')
    print(f'{h.passed} passed, {h.failed} failed', flush=True)
    return 0 if h.failed == 0 and h.passed > 0 else 1


def interrupted(signum, frame):
    raise KeyboardInterrupt()


if __name__ == '__main__':
    signal.signal(signal.SIGTERM, interrupted)
    try:
        status = main(sys.argv[1:])
    except KeyboardInterrupt:
        status = 130
    finally:
        Proc.stop_all()
    sys.exit(status)
