"""The engine: processes, ports, readiness, logs, captures, and the steps a scenario is made of."""
import json, os, re, shutil, signal, socket, string, subprocess, time
from dataclasses import dataclass, field
from typing import Any, Callable, Optional


HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))   # Tests/Interop
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
    line matching it (30 s by default: a loaded machine's RootCanal answers slowly, and a wait that succeeds ends when
    the line comes), and aborts the part with not_ready if it does not come (or the process exits first). bumble:
    a Bumble peer (BUMBLE_SNOOPER set). limit: seconds before Exit stops it (status 124). out/err: separate logs."""
    role: str
    argv: Any
    ready: Optional[str] = None
    timeout: float = 30
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
        began = time.monotonic()
        if self.ready and not wait_for_line(out, ctx.sub(self.ready), self.timeout, proc):
            # Why, on the problem's own line: a long run's output may be cut before the logs that follow a failure.
            waited = time.monotonic() - began
            how = (f'exited with status {exit_status(proc.popen.returncode)}' if not proc.running()
                   else 'still running')
            tail = ' | '.join(line[:160] for line in read_lines(out)[-3:]) or 'nothing'
            ctx.problem(f'{self.not_ready} ({how} after {waited:.1f} s; its last lines: {tail})')
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
    """Stops a background role now (SIGTERM to its group, then SIGKILL after 3 s), whatever its status: a peer whose
    part is over, or a broker a scenario restarts."""
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
