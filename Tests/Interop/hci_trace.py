#!/usr/bin/env python3
"""Decodes a btsnoop capture (H4 datalink 1002, as BUMBLE_SNOOPER or lab_controllers.py --snoop-dir write it) into
a readable HCI trace, using Bumble's own HCI parsing for names and fields.

    hci_trace.py CAPTURE.btsnoop [--events] [--acl]

Prints every HCI command the host sent, in order, with its opcode, parameters and outcome (the Command Complete
status and return parameters, or the Command Status; 'NO ANSWER' when the capture has none), then the events the
controller sent unprompted (with --events: every one; otherwise a count per kind), then the ACL traffic: packets and
largest payload each way, and the most packets the host ever had in flight (sent, not yet reported by Number Of
Completed Packets) -- which shows whether the host respects the controller's LE buffer count.
"""
import argparse, collections, re, struct, sys

from bumble import hci

ANSI = re.compile(r'\x1b\[[0-9;]*m')
HOST_TO_CONTROLLER = 0


def records(path):
    """(seconds since the first record, direction bit, H4 packet) for each record of a btsnoop file."""
    data = open(path, 'rb').read()
    if data[:8] != b'btsnoop\0':
        sys.exit(f'{path}: not a btsnoop file')
    version, datalink = struct.unpack_from('>II', data, 8)
    if datalink != 1002:
        sys.exit(f'{path}: datalink {datalink}, only 1002 (H4) is handled')
    offset, first = 16, None
    while offset + 24 <= len(data):
        _original, included, flags, _drops, stamp = struct.unpack_from('>IIIIQ', data, offset)
        offset += 24
        packet = data[offset:offset + included]
        offset += included
        if len(packet) < included:
            break                                   # truncated last record (capture cut short)
        first = stamp if first is None else first
        yield (stamp - first) / 1e6, flags & 1, packet


def fields(obj, skip=('op_code', 'name', 'hci_packet_type', 'event_code', 'subevent_code', 'parameters')):
    """'key=value, ...' for a Bumble HCI object's fields, long values shortened."""
    text = ANSI.sub('', str(obj))
    lines = text.splitlines()[1:]
    out = []
    for line in lines:
        if ':' not in line:
            continue
        key, value = (part.strip() for part in line.split(':', 1))
        if not key or key in skip or key in ('return_parameters', 'command_opcode', 'num_hci_command_packets'):
            continue
        if len(value) > 48:
            value = value[:44] + '...'
        out.append(f'{key}={value}')
    return ', '.join(out)


def short(name):
    return name.removeprefix('HCI_').removesuffix('_COMMAND').removesuffix('_EVENT')


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument('capture')
    parser.add_argument('--events', action='store_true', help='list every unprompted event, not just counts')
    parser.add_argument('--acl', action='store_true', help='list every ACL packet')
    parser.add_argument('--capabilities', action='store_true',
                        help='also list the commands the controller declares in its Supported Commands mask')
    options = parser.parse_args()
    supported_commands = le_features = None

    commands = []            # [time, opcode, name, parameters, outcome]
    pending = collections.deque()
    unprompted = []
    counts = collections.Counter()
    acl = {0: [0, 0], 1: [0, 0]}      # direction -> [packets, largest payload]
    in_flight = max_in_flight = 0
    for time, direction, packet in records(options.capture):
        kind = packet[0]
        try:
            decoded = hci.HCI_Packet.from_bytes(packet)
        except Exception as error:  # keep going: the trace is a diagnostic
            print(f'{time:8.3f} undecodable {packet.hex()}: {error}')
            continue
        if kind == hci.HCI_COMMAND_PACKET and direction == HOST_TO_CONTROLLER:
            opcode = struct.unpack_from('<H', packet, 1)[0]
            entry = [time, opcode, short(decoded.name), fields(decoded), 'NO ANSWER']
            commands.append(entry)
            pending.append(entry)
        elif kind == hci.HCI_EVENT_PACKET and isinstance(
                decoded, (hci.HCI_Command_Complete_Event, hci.HCI_Command_Status_Event)):
            opcode = decoded.command_opcode
            match = next((e for e in pending if e[1] == opcode), None)
            if isinstance(decoded, hci.HCI_Command_Status_Event):
                outcome = f'Status {hci.HCI_Constant.error_name(decoded.status)}'
            else:
                parameters = decoded.return_parameters
                status = getattr(parameters, 'status', None)
                if status is None and isinstance(parameters, (bytes, bytearray)) and parameters:
                    status = parameters[0]
                outcome = 'Complete' + (f' {hci.HCI_Constant.error_name(status)}' if status is not None else '')
                extra = fields(parameters) if not isinstance(parameters, (int, bytes, bytearray)) else ''
                extra = ', '.join(p for p in extra.split(', ') if p and not p.startswith('status='))
                if extra:
                    outcome += f' ({extra})'
            if decoded.num_hci_command_packets == 0:
                outcome += ' [Num_HCI_Command_Packets=0]'
            if isinstance(decoded, hci.HCI_Command_Complete_Event) and getattr(
                    decoded.return_parameters, 'status', 1) == 0:
                if opcode == hci.HCI_READ_LOCAL_SUPPORTED_COMMANDS_COMMAND:
                    supported_commands = int.from_bytes(decoded.return_parameters.supported_commands, 'little')
                elif opcode == hci.HCI_LE_READ_LOCAL_SUPPORTED_FEATURES_COMMAND:
                    le_features = int.from_bytes(decoded.return_parameters.le_features, 'little')
            if match is None:
                unprompted.append(f'{time:8.3f} {short(decoded.name)} for 0x{opcode:04X} with no command pending: {outcome}')
            else:
                match[4] = outcome
                pending.remove(match)
        elif kind == hci.HCI_EVENT_PACKET:
            name = short(decoded.name)
            counts[name] += 1
            if isinstance(decoded, hci.HCI_Number_Of_Completed_Packets_Event):
                in_flight -= sum(decoded.num_completed_packets)
            if options.events or not isinstance(decoded, (hci.HCI_Number_Of_Completed_Packets_Event,
                                                          hci.HCI_LE_Advertising_Report_Event,
                                                          hci.HCI_LE_Extended_Advertising_Report_Event)):
                unprompted.append(f'{time:8.3f} {name}: {fields(decoded)}')
        elif kind == hci.HCI_ACL_DATA_PACKET:
            length = struct.unpack_from('<H', packet, 3)[0]
            acl[direction][0] += 1
            acl[direction][1] = max(acl[direction][1], length)
            if direction == HOST_TO_CONTROLLER:
                in_flight += 1
                max_in_flight = max(max_in_flight, in_flight)
            if options.acl:
                arrow = 'host->controller' if direction == HOST_TO_CONTROLLER else 'controller->host'
                unprompted.append(f'{time:8.3f} ACL {arrow} {length} bytes: {packet[5:5 + length].hex()}')

    print(f'# {options.capture}')
    print(f'## HCI commands sent by the host ({len(commands)})')
    for number, (time, opcode, name, parameters, outcome) in enumerate(commands, 1):
        print(f'{number:3d} {time:8.3f}  0x{opcode:04X} {name}' + (f' [{parameters}]' if parameters else '')
              + f'  ->  {outcome}')
    if le_features is not None:
        print(f'## LE features the controller declares: 0x{le_features:X} = {hci.LeFeatureMask(le_features).name}')
    if supported_commands is not None and options.capabilities:
        names = [short(hci.HCI_Command.command_name(op)) + f' 0x{op:04X}'
                 for op, mask in sorted(hci.HCI_SUPPORTED_COMMANDS_MASKS.items()) if supported_commands & mask]
        print(f'## Supported Commands mask declares {len(names)}: ' + ', '.join(names))
    print('## Events the host did not ask for (advertising reports and completed-packet counts are only counted)')
    for line in unprompted:
        print(line)
    print('## Event counts: ' + ', '.join(f'{name} x{n}' for name, n in sorted(counts.items())))
    print(f'## ACL: host->controller {acl[0][0]} packets (largest {acl[0][1]} bytes), '
          f'controller->host {acl[1][0]} packets (largest {acl[1][1]} bytes); '
          f'at most {max_in_flight} host packets in flight')


if __name__ == '__main__':
    main()
