"""The controller kinds: how to start N linked controllers of a kind, and what that kind does differently."""
import os, shlex
from dataclasses import dataclass
from typing import Callable
from suite.engine import PEERS


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
