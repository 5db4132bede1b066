"""The command line and the run: every selected scenario on every kind it applies to, and the verdict line."""
import suite
import glob, os, shutil, subprocess, sys, time
from suite.engine import Abort, Context, HERE, decode, mosquitto_path, read_lines
from suite.controllers import CONTROLLER_KINDS
from suite.scenarios import SCENARIOS


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
            print(suite.__doc__.rstrip())
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
