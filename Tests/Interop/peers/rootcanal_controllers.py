#!/usr/bin/env python3
"""N controllers of Android's RootCanal (PyPI `rootcanal`, 1.10.0) on one simulated air, each an H4-over-TCP port.

    rootcanal_controllers.py PORT [PORT ...] [--snoop-dir DIR] [--log FILE]

One RootCanal process serves every port (its `-configuration` lists one `tcp_server` per port). RootCanal makes a
new controller for every TCP client of a port, so each test gets a fresh one; a controller whose client went away
leaves the air. Its other ports (test, link, LE link) go to free ports nobody uses.

With --snoop-dir DIR the ports are ours: each client is relayed to a RootCanal port of its own and every H4 packet
is written to DIR/hci-<port>-<n>.btsnoop (from the host's side, flushed after every packet). Without it the hosts
talk to RootCanal directly, with nothing in between.

Prints 'READY <ports>' on stdout once every port listens; exits 0 on SIGTERM/SIGINT (RootCanal is stopped with it).
"""
import argparse, asyncio, os, signal, socket, struct, subprocess, sys, time

try:
    import rootcanal.binaries
except ImportError:
    sys.exit('rootcanal is not installed (Tests/Interop/bootstrap.sh installs rootcanal==1.10.0)')


def free_ports(count):
    socks = [socket.socket() for _ in range(count)]
    try:
        for s in socks:
            s.bind(('127.0.0.1', 0))
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def listening(port):
    with socket.socket() as s:
        s.settimeout(0.2)
        return s.connect_ex(('127.0.0.1', port)) == 0


# btsnoop (RFC 1761 style, datalink 1002: H4 packets with their indicator), as Wireshark reads it.
BTSNOOP_EPOCH_DELTA_US = 0x00DCDDB30F2F8000


class Snoop:
    def __init__(self, path):
        self.file = open(path, 'wb')
        self.file.write(b'btsnoop\0' + struct.pack('>II', 1, 1002))
        self.file.flush()

    def packet(self, data, to_host):
        indicator = data[0]
        flags = (1 if to_host else 0) | (2 if indicator in (0x01, 0x04) else 0)
        stamp = int(time.time() * 1_000_000) + BTSNOOP_EPOCH_DELTA_US
        self.file.write(struct.pack('>IIIIq', len(data), len(data), flags, 0, stamp) + data)
        self.file.flush()


def h4_length(buffer):
    """The length of the H4 packet at the start of buffer, or None while its header is incomplete."""
    if not buffer:
        return None
    kind = buffer[0]
    header = {0x01: 3, 0x02: 4, 0x03: 3, 0x04: 2, 0x05: 4}.get(kind)
    if header is None:
        raise ValueError(f'unknown H4 packet indicator 0x{kind:02x}')
    if len(buffer) < 1 + header:
        return None
    if kind == 0x01:
        return 1 + header + buffer[3]
    if kind == 0x02:
        return 1 + header + struct.unpack_from('<H', buffer, 3)[0]
    if kind == 0x03:
        return 1 + header + buffer[3]
    if kind == 0x04:
        return 1 + header + buffer[2]
    return 1 + header + (struct.unpack_from('<H', buffer, 3)[0] & 0x3FFF)


async def relay(reader, writer, snoop, to_host):
    buffer = b''
    try:
        while True:
            data = await reader.read(65536)
            if not data:
                break
            writer.write(data)
            buffer += data
            while (length := h4_length(buffer)) is not None and len(buffer) >= length:
                snoop.packet(buffer[:length], to_host)
                buffer = buffer[length:]
    except (ConnectionError, ValueError):
        pass
    finally:
        writer.close()


async def serve_snooped(ports, inner, snoop_dir):
    counters = {port: 0 for port in ports}

    def handler(port, inner_port):
        async def client(host_reader, host_writer):
            counters[port] += 1
            snoop = Snoop(os.path.join(snoop_dir, f'hci-{port}-{counters[port]}.btsnoop'))
            try:
                rc_reader, rc_writer = await asyncio.open_connection('127.0.0.1', inner_port)
            except OSError:
                host_writer.close()
                return
            await asyncio.gather(relay(host_reader, rc_writer, snoop, False),
                                 relay(rc_reader, host_writer, snoop, True))
        return client

    servers = [await asyncio.start_server(handler(port, inner_port), '127.0.0.1', port)
               for port, inner_port in zip(ports, inner)]
    return servers


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('ports', nargs='+', type=int)
    parser.add_argument('--snoop-dir')
    parser.add_argument('--log', help="RootCanal's own log (default: discarded)")
    options = parser.parse_args()

    served = free_ports(len(options.ports)) if options.snoop_dir else options.ports
    test, hci, link, link_ble = free_ports(4)
    configuration = ' '.join(f'tcp_server {{ tcp_port: {port} }}' for port in served)
    binary = rootcanal.binaries.get_package_binary_resource_path('rootcanal')
    log = open(options.log, 'ab') if options.log else subprocess.DEVNULL
    process = subprocess.Popen([binary, f'-test_port={test}', f'-hci_port={hci}', f'-link_port={link}',
                                f'-link_ble_port={link_ble}', f'-configuration={configuration}'],
                               stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT)

    def stop(*_):
        process.terminate()
        try:
            process.wait(2)
        except subprocess.TimeoutExpired:
            process.kill()
        sys.exit(0)

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)

    deadline = time.monotonic() + 8
    while not all(listening(port) for port in served):
        if process.poll() is not None or time.monotonic() > deadline:
            sys.exit(f'RootCanal did not listen on {served} (exit status {process.poll()})')
        time.sleep(0.05)

    if not options.snoop_dir:
        print('READY', *options.ports, flush=True)
        process.wait()
        sys.exit(f'RootCanal exited with status {process.returncode}')

    os.makedirs(options.snoop_dir, exist_ok=True)

    async def run():
        await serve_snooped(options.ports, served, options.snoop_dir)
        print('READY', *options.ports, flush=True)
        while process.poll() is None:
            await asyncio.sleep(0.2)
        sys.exit(f'RootCanal exited with status {process.returncode}')

    asyncio.run(run())


if __name__ == '__main__':
    main()
