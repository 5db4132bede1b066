#!/usr/bin/env python3
"""N linked Bumble virtual LE controllers on loopback, each an H4-over-TCP server port.

    lab_controllers.py PORT [PORT ...] [--snoop-dir DIR] [--no-ext-adv] [--fragment-rx]
                       [--acl-len N] [--acl-num N] [--stock] [--verbose]

Every port accepts one host at a time and gives each new TCP client a FRESH controller (a new client replaces the
old one), so no advertising, scanning or link state leaks from one test to the next. When a client goes away its
controller leaves the air: its links are terminated towards the peers (reason 0x08, as a supervision timeout
would), its advertising and scanning stop. Controller N (0-based port index) has public address 00:BB:00:00:00:0N.

Prints 'READY <ports>' on stdout once every port listens; exits 0 on SIGTERM/SIGINT.

Options:
  --snoop-dir DIR   one btsnoop file per client connection (DIR/hci-<port>-<n>.btsnoop), from the host's side,
                    flushed after every packet so it is complete even if the process is killed;
  --no-ext-adv      clear the LE Extended/Periodic Advertising feature bits (the Bumble host then uses the
                    legacy advertising, scanning and connection commands, and gets legacy reports);
  --fragment-rx     split controller-to-host ACL data to the LE ACL buffer length, like a real controller
                    (Bumble 0.0.236 otherwise delivers each L2CAP PDU whole, in one ACL packet);
  --acl-len/--acl-num  the ACL buffer size and count the controller reports;
  --stock           Bumble 0.0.236's controller and link exactly, without the fixes below.

Experiments (what does a host do when the controller lacks something?); OPCODE in hex, e.g. 0x2060:
  --hide-command OPCODE    clear the command's bit in Read Local Supported Commands (it still works if sent);
  --reject-command OPCODE  answer the command with Unknown HCI Command (0x01): Command Complete for commands that
                           complete, Command Status for the others;
  --mute-command OPCODE    never answer the command;
  --drop-event CODE        never send events with this code (0x3E:SUB for an LE meta subevent, e.g. 0x3E:0x12);
  --le-features HEX        report these LE features (64-bit little-endian number in hex, e.g. 0x21).

Fixes over the stock controller and link (Core 5.4, Vol 4, Part E, 4.5 and 7.8.13):
  * an asynchronous command it does not implement (LE Set PHY, LE Read Local P-256 Public Key, vendor
    commands...) gets Command Status 0x01 Unknown HCI Command; stock Bumble sends nothing and the host waits;
  * LE Create Connection Cancel ends the pending connection with LE Connection Complete status 0x02;
  * legacy advertising of type ADV_NONCONN_IND (beacons) and ADV_SCAN_IND goes on the air (stock Bumble transmits
    ADV_IND only), and ADV_NONCONN_IND is reported as such, without a scan response;
  * LE ACL data carries the address the link was made with: stock Bumble always sends it from the controller's
    random address, so the peer drops every ACL packet of a host that advertised or connected with its public
    address ('no connection for 00:00:00:00:00:00').
"""
import argparse, asyncio, itertools, logging, os, signal, struct

from bumble import hci, ll
from bumble.core import PhysicalTransport
from bumble.controller import Controller, LegacyAdvertiser
from bumble.link import LocalLink
from bumble.snoop import BtSnooper, Snooper
from bumble.transport.common import PacketParser

log = logging.getLogger('lab_controllers')


class NonConnectableLegacyAdvertiser(LegacyAdvertiser):
    """Legacy advertising of every undirected type: stock Bumble only ever transmits ADV_IND, so a host that
    advertises non-connectable (beacons: ADV_NONCONN_IND) or scannable (ADV_SCAN_IND) is never heard."""

    def send_advertising_data(self) -> None:
        if not self.enabled:
            return
        kind = self.advertising_type
        types = hci.HCI_LE_Set_Advertising_Parameters_Command.AdvertisingType
        if kind == types.ADV_NONCONN_IND:
            self.controller.send_advertising_pdu(ll.AdvNonConnInd(advertiser_address=self.address, data=self.advertising_data))
        elif kind in (types.ADV_IND, types.ADV_SCAN_IND):
            self.controller.send_advertising_pdu(ll.AdvInd(advertiser_address=self.address, data=self.advertising_data))


class FixedController(Controller):
    """Bumble's controller with a Command Status for unimplemented asynchronous commands and a working cancel."""
    rejected: set = set()
    muted: set = set()

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.le_legacy_advertiser = NonConnectableLegacyAdvertiser(self)

    def on_ll_advertising_pdu(self, packet):
        if not isinstance(packet, ll.AdvNonConnInd):
            return super().on_ll_advertising_pdu(packet)
        if not self.le_scan_enable:
            return
        # ADV_NONCONN_IND: one report, not connectable, no scan response (Core 5.4, Vol 4, Part E, 7.7.65.2/13).
        address = packet.advertiser_address
        if self.le_features & hci.LeFeatureMask.LE_EXTENDED_ADVERTISING:
            report = hci.HCI_LE_Extended_Advertising_Report_Event.Report(
                event_type=0x10,   # legacy PDU, neither connectable nor scannable
                address_type=address.address_type, address=address, primary_phy=hci.Phy.LE_1M,
                secondary_phy=0, advertising_sid=0xFF, tx_power=0x7F, rssi=-50, periodic_advertising_interval=0,
                direct_address_type=0, direct_address=hci.Address.ANY, data=packet.data)
            self.send_hci_packet(hci.HCI_LE_Extended_Advertising_Report_Event([report]))
        else:
            report = hci.HCI_LE_Advertising_Report_Event.Report(
                event_type=hci.HCI_LE_Advertising_Report_Event.EventType.ADV_NONCONN_IND,
                address_type=address.address_type, address=address, data=packet.data, rssi=-50)
            self.send_hci_packet(hci.HCI_LE_Advertising_Report_Event([report]))

    def on_hci_command_packet(self, command):
        if command.op_code in self.muted:
            log.info('muted command %s (0x%04X): no answer', command.name, command.op_code)
            return
        if command.op_code in self.rejected:
            log.info('rejected command %s (0x%04X) as unknown', command.name, command.op_code)
            handler = self.on_hci_command
        else:
            handler = getattr(self, f'on_{command.name.lower()}', self.on_hci_command)
        outcome = handler(command)
        if outcome is None:
            return
        if isinstance(command, hci.HCI_SyncCommand):
            self.send_hci_packet(hci.HCI_Command_Complete_Event(
                num_hci_command_packets=1, command_opcode=command.op_code, return_parameters=outcome))
        else:
            self._send_hci_command_status(outcome.status, command.op_code)

    def on_hci_le_read_local_p_256_public_key_command(self, _command):
        return hci.HCI_StatusReturnParameters(hci.HCI_ErrorCode.UNKNOWN_HCI_COMMAND_ERROR)

    def on_hci_le_create_connection_cancel_command(self, _command):
        pending = self.pending_le_connection
        if pending is None:
            return hci.HCI_StatusReturnParameters(hci.HCI_ErrorCode.COMMAND_DISALLOWED_ERROR)
        self.pending_le_connection = None
        peer = getattr(pending, 'peer_address', hci.Address.ANY)

        def report_cancelled():
            self.send_hci_packet(hci.HCI_LE_Connection_Complete_Event(
                status=hci.HCI_ErrorCode.UNKNOWN_CONNECTION_IDENTIFIER_ERROR, connection_handle=0,
                role=hci.Role.CENTRAL, peer_address_type=peer.address_type, peer_address=peer,
                connection_interval=0, peripheral_latency=0, supervision_timeout=0, central_clock_accuracy=0))
        # The Command Complete goes out first, then the connection event.
        asyncio.get_running_loop().call_soon(report_cancelled)
        return hci.HCI_StatusReturnParameters(hci.HCI_ErrorCode.SUCCESS)


class FixedLink(LocalLink):
    """Bumble's simulated air, with LE ACL data sent from the address each end of the link uses."""

    def send_acl_data(self, sender_controller, destination_address, transport, data):
        link = sender_controller.le_connections.get(destination_address)
        if transport != PhysicalTransport.LE or link is None:
            return super().send_acl_data(sender_controller, destination_address, transport, data)
        if (receiver := self.find_le_controller(destination_address)) is not None:
            asyncio.get_running_loop().call_soon(receiver.on_link_acl_data, link.self_address, transport, data)


class _PacketSink:
    def __init__(self, on_packet):
        self.on_packet = on_packet


class ClientSession:
    """One TCP client attached to one fresh controller on the shared air."""
    numbers = itertools.count(1)

    def __init__(self, index, port, air, writer, options):
        self.number = next(ClientSession.numbers)
        self.writer = writer
        self.options = options
        self.snoop_file = None
        self.snooper = None
        if options.snoop_dir:
            path = os.path.join(options.snoop_dir, f'hci-{port}-{self.number}.btsnoop')
            self.snoop_file = open(path, 'wb')
            self.snooper = BtSnooper(self.snoop_file)
        kind = Controller if options.stock else FixedController
        self.controller = kind(
            f'C{index}#{self.number}', host_sink=self, link=air,
            public_address=hci.Address(f'00:BB:00:00:{index >> 8:02X}:{index & 0xFF:02X}',
                                       hci.Address.PUBLIC_DEVICE_ADDRESS))
        if options.acl_len:
            self.controller.le_acl_data_packet_length = options.acl_len
            self.controller.acl_data_packet_length = options.acl_len
        if options.acl_num:
            self.controller.total_num_le_acl_data_packets = options.acl_num
            self.controller.total_num_acl_data_packets = options.acl_num
        if options.no_ext_adv:
            self.controller.le_features &= ~(hci.LeFeatureMask.LE_EXTENDED_ADVERTISING
                                             | hci.LeFeatureMask.LE_PERIODIC_ADVERTISING)
        if options.le_features is not None:
            self.controller.le_features = hci.LeFeatureMask(options.le_features)
        if options.hide_command:
            self.controller.supported_commands = set(self.controller.supported_commands) - set(options.hide_command)
        if isinstance(self.controller, FixedController):
            self.controller.rejected = set(options.reject_command)
            self.controller.muted = set(options.mute_command)
        self.dropped_events = set(options.drop_event)
        self.parser = PacketParser(_PacketSink(self.from_host))

    def from_host(self, packet: bytes):
        self.snoop(packet, Snooper.Direction.HOST_TO_CONTROLLER)
        self.controller.on_packet(packet)

    # The controller calls this (it is the controller's host sink).
    def on_packet(self, packet: bytes):
        if self.writer is None or self.writer.is_closing():
            return
        if packet[0] == hci.HCI_EVENT_PACKET and len(packet) > 3 and (
                packet[1] in self.dropped_events or (packet[1], packet[3]) in self.dropped_events):
            log.info('dropped event %s', packet[:4].hex())
            return
        if self.options.fragment_rx and packet[0] == hci.HCI_ACL_DATA_PACKET:
            for fragment in self.fragments(packet):
                self.snoop(fragment, Snooper.Direction.CONTROLLER_TO_HOST)
                self.writer.write(fragment)
            return
        self.snoop(packet, Snooper.Direction.CONTROLLER_TO_HOST)
        self.writer.write(packet)

    def fragments(self, packet: bytes):
        """Splits one H4 ACL packet into ACL packets no longer than the controller's LE buffer."""
        handle_and_flags, length = struct.unpack_from('<HH', packet, 1)
        data = packet[5:5 + length]
        limit = self.controller.le_acl_data_packet_length
        handle, boundary, broadcast = handle_and_flags & 0x0FFF, (handle_and_flags >> 12) & 3, handle_and_flags >> 14
        for start in range(0, max(len(data), 1), limit):
            chunk = data[start:start + limit]
            flags = boundary if start == 0 else 0b01          # 0b01: continuing fragment
            yield bytes([hci.HCI_ACL_DATA_PACKET]) + struct.pack(
                '<HH', handle | flags << 12 | broadcast << 14, len(chunk)) + chunk

    def snoop(self, packet, direction):
        if self.snooper:
            self.snooper.snoop(packet, direction)
            self.snoop_file.flush()

    def close(self, air):
        if self.writer is None:
            return
        self.writer = None
        controller = self.controller
        controller.host = None
        for link in list(controller.le_connections.values()):
            try:
                link.send_ll_control_pdu(ll.TerminateInd(hci.HCI_ErrorCode.CONNECTION_TIMEOUT_ERROR))
            except Exception as error:  # the peer may be gone already
                log.debug('terminate failed: %s', error)
        controller.le_connections.clear()
        controller.le_legacy_advertiser.stop()
        for advertising_set in controller.advertising_sets.values():
            advertising_set.stop()
        controller.le_scan_enable = False
        controller.pending_le_connection = None
        if controller in air.controllers:
            air.remove_controller(controller)
        if self.snoop_file:
            self.snoop_file.close()


def event_code(text):
    """'0x05' -> 5; '0x3E:0x12' -> (0x3E, 0x12): an event code, or an LE meta event's subevent."""
    code, _, sub = text.partition(':')
    return (int(code, 16), int(sub, 16)) if sub else int(code, 16)


async def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('ports', nargs='+', type=int)
    parser.add_argument('--snoop-dir')
    parser.add_argument('--acl-len', type=int, default=0)
    parser.add_argument('--acl-num', type=int, default=0)
    parser.add_argument('--no-ext-adv', action='store_true')
    parser.add_argument('--fragment-rx', action='store_true')
    parser.add_argument('--stock', action='store_true')
    parser.add_argument('--verbose', action='store_true')
    parser.add_argument('--hide-command', action='append', default=[], type=lambda t: int(t, 16))
    parser.add_argument('--reject-command', action='append', default=[], type=lambda t: int(t, 16))
    parser.add_argument('--mute-command', action='append', default=[], type=lambda t: int(t, 16))
    parser.add_argument('--drop-event', action='append', default=[], type=event_code)
    parser.add_argument('--le-features', type=lambda t: int(t, 16))
    options = parser.parse_args()
    logging.basicConfig(level=logging.DEBUG if options.verbose else logging.INFO,
                        format='%(asctime)s %(levelname).1s %(name)s: %(message)s')
    if options.snoop_dir:
        os.makedirs(options.snoop_dir, exist_ok=True)

    air = LocalLink() if options.stock else FixedLink()
    sessions = {}   # port -> ClientSession
    servers = []
    for index, port in enumerate(options.ports):
        async def serve(reader, writer, index=index, port=port):
            if (previous := sessions.pop(port, None)) is not None:
                log.warning('port %d: a new client replaces controller %s', port, previous.controller.name)
                previous_writer = previous.writer
                previous.close(air)
                if previous_writer:
                    previous_writer.close()
            session = ClientSession(index, port, air, writer, options)
            sessions[port] = session
            log.info('port %d: client connected, controller %s', port, session.controller.name)
            try:
                while data := await reader.read(65536):
                    try:
                        session.parser.feed_data(data)
                    except Exception as error:
                        log.warning('port %d: bad H4 data (%s), parser reset', port, error)
                        session.parser.reset()
            except (ConnectionResetError, asyncio.CancelledError):
                pass
            finally:
                if sessions.get(port) is session:
                    log.info('port %d: client gone, controller %s removed', port, session.controller.name)
                    session.close(air)
                    del sessions[port]
                writer.close()
        servers.append(await asyncio.start_server(serve, '127.0.0.1', port))

    print('READY ' + ' '.join(map(str, options.ports)), flush=True)
    stopped = asyncio.get_running_loop().create_future()
    for signal_number in (signal.SIGINT, signal.SIGTERM):
        asyncio.get_running_loop().add_signal_handler(
            signal_number, lambda: stopped.done() or stopped.set_result(None))
    await stopped
    for server in servers:
        server.close()
    for session in list(sessions.values()):
        session.close(air)
    log.info('stopped')


if __name__ == '__main__':
    asyncio.run(main())
