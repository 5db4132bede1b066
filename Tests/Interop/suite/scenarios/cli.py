"""The ble tool as a program: btsnoop captures read by tshark, exit statuses and messages, JSON output types."""
import glob, json, os, subprocess
from suite.engine import Check, Count, Decode, Do, Grep, Interrupt, Part, Ports, Run, Scenario, Start, grep, hexof, read_lines
from suite.common import AUTHENTICATED, BLE, LONG, SECRET, TOP_SECRET, WRITABLE


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



BTSNOOP_CAPTURE_DECODES_IN_TSHARK = Scenario('btsnoop-capture-decodes-in-tshark', [Part('', [
    Run('explore', [BLE, 'explore', 'SwiftBLELab', '--btsnoop', '$logs/$name.btsnoop'], timeout=60,
        label='ble explore failed'),
    Do(tshark_checks)])], kinds='once', needs=('ble', 'tshark'))
