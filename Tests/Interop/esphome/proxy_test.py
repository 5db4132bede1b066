"""`ble proxy` judged by Home Assistant's own ESPHome API client, aioesphomeapi (pinned by bootstrap.sh).

Starts `ble proxy` on loopback (the embedded world's simulated devices around it) with an encryption key, then, as
Home Assistant would: a wrong key and a plaintext client are refused; the right key connects and reads the device
info; raw advertisements of the lab device arrive; a connection slot is taken and given back; the lab device's
services come with handles; reads, writes, a descriptor read and write, notifications, and ATT errors with their
codes go through; a bleak program through habluetooth and bleak-esphome (bleak_test.py); then eight devices (`ble serve` on linked `ble controller` controllers) connected through one proxy
at once, each read and notifying, a device advertising on LE Coded forwarded (--phy both), and the simulated BTHome sensor (`ble serve --device bthome`) decoded by bthome-ble, into exactly the values it logged, through
Home Assistant's Bluetooth manager; then the bleak program to Bumble's lab peripheral (.venv-bumble) on our
controllers and on RootCanal; then the proxy found over mDNS in a network namespace
(mdns_test.py). Every check compares values. Prints one line per check and 'N passed, M failed'.

    proxy_test.py --ble PATH/TO/ble [--log FILE]
"""
import argparse
import asyncio
import base64
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time

from aioesphomeapi import APIClient
from aioesphomeapi.core import (BluetoothGATTAPIError, InvalidEncryptionKeyAPIError, RequiresEncryptionAPIError,
                                APIConnectionError)
from aioesphomeapi.model import BluetoothProxyFeature, BluetoothScannerMode

LAB_SERVICE = "12345678-1234-5678-1234-56789abcdef0"
WRITABLE = "12345678-1234-5678-1234-56789abcdef1"
CONTROL = "12345678-1234-5678-1234-56789abcdef7"      # write only: a read is refused (Read Not Permitted, 0x02)
SECRET = "12345678-1234-5678-1234-56789abcdef3"       # readable over an encrypted link only
GUARDED = "12345678-1234-5678-1234-56789abcdef9"      # a write of b"refuse" is refused with application error 0x80
MANUFACTURER_NAME = "00002a29-0000-1000-8000-00805f9b34fb"
HEART_RATE_MEASUREMENT = "00002a37-0000-1000-8000-00805f9b34fb"
USER_DESCRIPTION = "00002901-0000-1000-8000-00805f9b34fb"
CCCD = "00002902-0000-1000-8000-00805f9b34fb"

results = []


def check(name, ok, detail=""):
    results.append((name, bool(ok)))
    print(f"{'ok  ' if ok else 'FAIL'} {name}{'' if ok else ': ' + str(detail)}", flush=True)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def lab_advertisement(data: bytes) -> bool:
    """Whether AD bytes carry the lab device's manufacturer data (company 0xFFFF, 'lab')."""
    i = 0
    while i + 1 < len(data):
        length = data[i]
        if length == 0 or i + 1 + length > len(data):
            return False
        if data[i + 1] == 0xFF and data[i + 2:i + 1 + length] == b"\xff\xfflab":
            return True
        i += 1 + length
    return False


def local_name(data: bytes):
    """The complete or shortened local name in AD bytes, if any."""
    i = 0
    while i + 1 < len(data):
        length = data[i]
        if length == 0 or i + 1 + length > len(data):
            return None
        if data[i + 1] in (0x08, 0x09):
            return data[i + 2:i + 1 + length].decode(errors="replace")
        i += 1 + length
    return None


def find(services, uuid):
    for service in services:
        for characteristic in service.characteristics:
            if characteristic.uuid == uuid:
                return service, characteristic
    return None, None


async def refused(port, psk, expected):
    client = APIClient("127.0.0.1", port, None, noise_psk=psk, client_info="proxy_test refused")
    try:
        await asyncio.wait_for(client.connect(login=False), 10)
    except expected as error:
        return True, error
    except Exception as error:  # noqa: BLE001 - the wrong kind of failure is a failed check
        return False, f"{type(error).__name__}: {error}"
    finally:
        await client.disconnect(force=True)
    return False, "connected"


def bonded(bonds_file, address):
    """Whether the bond store file holds a bond with `address` (its text form, 00:5B:...)."""
    text = to_mac(address)
    return os.path.exists(bonds_file) and text in open(bonds_file).read().upper()


def to_mac(address):
    return ":".join(f"{(address >> (8 * i)) & 0xFF:02X}" for i in range(5, -1, -1))


async def scenario(port, key, log_path, bonds_file):
    wrong = base64.b64encode(bytes(32)).decode()
    ok, why = await refused(port, wrong, InvalidEncryptionKeyAPIError)
    check("a wrong key is refused (InvalidEncryptionKeyAPIError)", ok, why)
    ok, why = await refused(port, None, RequiresEncryptionAPIError)
    check("a plaintext client is refused (RequiresEncryptionAPIError)", ok, why)
    await asyncio.sleep(0.3)
    with open(log_path) as f:
        log = f.read()
    check("the proxy logged the wrong key", "different key" in log, log[-500:])

    client = APIClient("127.0.0.1", port, None, noise_psk=key, client_info="proxy_test")
    await asyncio.wait_for(client.connect(login=False), 10)
    try:
        info = await client.device_info()
        flags = info.bluetooth_proxy_feature_flags
        check("device info: name", info.name == "test-proxy", info.name)
        wanted = (BluetoothProxyFeature.PASSIVE_SCAN | BluetoothProxyFeature.ACTIVE_CONNECTIONS | BluetoothProxyFeature.REMOTE_CACHING
                  | BluetoothProxyFeature.PAIRING | BluetoothProxyFeature.CACHE_CLEARING | BluetoothProxyFeature.RAW_ADVERTISEMENTS
                  | BluetoothProxyFeature.FEATURE_STATE_AND_MODE | BluetoothProxyFeature.CONNECTION_PARAMS_SETTING)
        check("device info: proxy feature flags", flags == wanted, hex(flags))
        check("device info: Bluetooth MAC", re.fullmatch(r"([0-9A-F]{2}:){5}[0-9A-F]{2}", info.bluetooth_mac_address or ""),
              info.bluetooth_mac_address)

        # Raw advertisements: the lab device's, with its address type.
        found = asyncio.get_running_loop().create_future()
        counts = {"messages": 0, "ads": 0}

        def on_raw(message):
            counts["messages"] += 1
            for ad in message.advertisements:
                counts["ads"] += 1
                if lab_advertisement(ad.data) and not found.done():
                    found.set_result(ad)

        unsubscribe = client.subscribe_bluetooth_le_raw_advertisements(on_raw)
        ad = await asyncio.wait_for(found, 10)
        check("raw advertisement of the lab device", ad.address != 0 and ad.rssi < 0, ad)
        address, address_type = ad.address, ad.address_type
        await asyncio.sleep(0.5)
        check("advertisements come in batches", counts["ads"] > counts["messages"] >= 1, counts)
        unsubscribe()

        # Connection slots.
        slots = []
        slot_changed = asyncio.Event()

        def on_free(free, limit, allocated):
            slots.append((free, limit, list(allocated)))
            slot_changed.set()

        client.subscribe_bluetooth_connections_free(on_free)
        await asyncio.wait_for(slot_changed.wait(), 5)
        check("free slots at first: 8 of 8", slots[-1][:2] == (8, 8), slots)

        states = []
        connected = asyncio.Event()

        def on_state(is_connected, mtu, error):
            states.append((is_connected, mtu, error))
            if is_connected:
                connected.set()

        slot_changed.clear()
        await client.bluetooth_device_connect(address, on_state, timeout=20, feature_flags=flags, has_cache=False,
                                              address_type=address_type)
        await asyncio.wait_for(connected.wait(), 20)
        check("connected, MTU exchanged", states and states[-1][0] and states[-1][1] > 23, states)
        await asyncio.sleep(0.3)
        check("a slot is taken: 7 free, the device allocated", slots[-1][0] == 7 and address in slots[-1][2], slots)

        try:
            await client.bluetooth_device_set_connection_params(address, 12, 24, 0, 200)
            check("connection parameters set (7.5-15 ms interval, 2 s timeout)", True)
        except APIConnectionError as error:
            check("connection parameters set (7.5-15 ms interval, 2 s timeout)", False, error)

        services = (await client.bluetooth_gatt_get_services(address)).services
        lab = next((s for s in services if s.uuid == LAB_SERVICE), None)
        check("services: the lab service with handles", lab is not None and lab.handle > 0 and len(lab.characteristics) >= 10,
              [s.uuid for s in services])

        _, manufacturer = find(services, MANUFACTURER_NAME)
        value = await client.bluetooth_gatt_read(address, manufacturer.handle)
        check("read: manufacturer name", bytes(value) == b"swift-ble Lab Inc.", value)

        _, writable = find(services, WRITABLE)
        await client.bluetooth_gatt_write(address, writable.handle, b"through the proxy", True)
        value = await client.bluetooth_gatt_read(address, writable.handle)
        check("write with response, read back", bytes(value) == b"through the proxy", value)
        await client.bluetooth_gatt_write(address, writable.handle, b"no response", False)
        await asyncio.sleep(0.3)
        value = await client.bluetooth_gatt_read(address, writable.handle)
        check("write without response, read back", bytes(value) == b"no response", value)

        description = next((d for d in writable.descriptors if d.uuid == USER_DESCRIPTION), None)
        value = await client.bluetooth_gatt_read_descriptor(address, description.handle) if description else b""
        check("descriptor read: user description", bytes(value) == b"Writable", value)

        _, control = find(services, CONTROL)
        try:
            await client.bluetooth_gatt_read(address, control.handle)
            check("read of a write-only characteristic: ATT error 0x02", False, "no error")
        except BluetoothGATTAPIError as error:
            check("read of a write-only characteristic: ATT error 0x02", error.error.error == 0x02, error)

        _, guarded = find(services, GUARDED)
        try:
            await client.bluetooth_gatt_write(address, guarded.handle, b"refuse", True)
            check("a refused write: application error 0x80", False, "no error")
        except BluetoothGATTAPIError as error:
            check("a refused write: application error 0x80", error.error.error == 0x80, error)

        # Notifications as bleak-esphome does them on a v3 connection: the notify request, then the client writes the
        # CCCD itself (a descriptor write).
        _, measurement = find(services, HEART_RATE_MEASUREMENT)
        cccd = next((d for d in measurement.descriptors if d.uuid == CCCD), None)
        values = []
        got = asyncio.Event()

        def on_notify(handle, data):
            values.append((handle, bytes(data)))
            got.set()

        stop_notify, _ = await client.bluetooth_gatt_start_notify(address, measurement.handle, on_notify)
        await client.bluetooth_gatt_write_descriptor(address, cccd.handle, b"\x01\x00")
        value = await client.bluetooth_gatt_read_descriptor(address, cccd.handle)
        check("descriptor write: the CCCD reads back 01 00", bytes(value) == b"\x01\x00", value)
        await asyncio.wait_for(got.wait(), 10)
        check("notifications: heart rate measurements", values[0][0] == measurement.handle and len(values[0][1]) >= 2, values[:3])
        await stop_notify()

        # Pairing: the encrypted value is refused with its ATT code until the client asks the proxy to pair.
        _, secret = find(services, SECRET)
        try:
            await client.bluetooth_gatt_read(address, secret.handle)
            check("an encrypted value before pairing: ATT error 0x0F or 0x05", False, "no error")
        except BluetoothGATTAPIError as error:
            check("an encrypted value before pairing: ATT error 0x0F or 0x05", error.error.error in (0x05, 0x0F), error)
        pairing = await client.bluetooth_device_pair(address)
        check("pair: paired", pairing.paired and pairing.error == 0, pairing)
        check("pair: the bond is in the --bonds file", bonded(bonds_file, address), open(bonds_file).read()[:300] if os.path.exists(bonds_file) else "no file")
        value = await client.bluetooth_gatt_read(address, secret.handle)
        check("the encrypted value after pairing", bytes(value) == b"top-secret", value)
        cleared = await client.bluetooth_device_clear_cache(address)
        check("clear cache: success", cleared.success, cleared)
        unpaired = await client.bluetooth_device_unpair(address)
        check("unpair: the bond is removed", unpaired.success and unpaired.error == 0, unpaired)
        check("unpair: the bond is gone from the --bonds file", not bonded(bonds_file, address), open(bonds_file).read()[:300])

        await client.bluetooth_device_disconnect(address)
        deadline = time.monotonic() + 5
        while slots[-1][0] != 8 and time.monotonic() < deadline:
            await asyncio.sleep(0.1)
        check("disconnected: the slot comes back (8 free)", slots[-1][0] == 8 and slots[-1][2] == [], slots[-3:])
        check("the client was told of the disconnection", states[-1][0] is False, states)

        # A device that goes away mid-connection (the lab device drops the link when its control point is written
        # 'disconnect'): the client is told, the slot comes back.
        connected.clear()
        await client.bluetooth_device_connect(address, on_state, timeout=20, feature_flags=flags, has_cache=True,
                                              address_type=address_type)
        await asyncio.wait_for(connected.wait(), 20)
        check("connected again with the client's cache (no services asked)", states[-1][0], states)
        deadline = time.monotonic() + 5
        while slots[-1][0] != 7 and time.monotonic() < deadline:
            await asyncio.sleep(0.1)
        value = await client.bluetooth_gatt_read(address, manufacturer.handle)
        check("a read by cached handle", bytes(value) == b"swift-ble Lab Inc.", value)
        await client.bluetooth_gatt_write(address, control.handle, b"disconnect", False)
        deadline = time.monotonic() + 10
        while (states[-1][0] or slots[-1][0] != 8) and time.monotonic() < deadline:
            await asyncio.sleep(0.1)
        check("the device dropped the link: the client is told with the reason", states[-1][0] is False and states[-1][2] != 0, states[-2:])
        check("the device dropped the link: the slot comes back", slots[-1][0] == 8, slots[-2:])

        # Scanner state and mode.
        scanner = []
        client.subscribe_bluetooth_scanner_state(lambda state: scanner.append(state))
        client.bluetooth_scanner_set_mode(BluetoothScannerMode.PASSIVE)
        deadline = time.monotonic() + 5
        while not (scanner and scanner[-1].mode == BluetoothScannerMode.PASSIVE) and time.monotonic() < deadline:
            await asyncio.sleep(0.1)
        check("scanner mode set to passive", scanner and scanner[-1].mode == BluetoothScannerMode.PASSIVE, scanner)
        client.bluetooth_scanner_set_mode(BluetoothScannerMode.ACTIVE)
        deadline = time.monotonic() + 5
        while not (scanner and scanner[-1].mode == BluetoothScannerMode.ACTIVE) and time.monotonic() < deadline:
            await asyncio.sleep(0.1)
        check("scanner mode set back to active", scanner and scanner[-1].mode == BluetoothScannerMode.ACTIVE, scanner)

        # A client that goes away with a device connected: the proxy disconnects the device and the slot comes back for
        # the next client.
        connected.clear()
        await client.bluetooth_device_connect(address, on_state, timeout=20, feature_flags=flags, has_cache=True,
                                              address_type=address_type)
        await asyncio.wait_for(connected.wait(), 20)
        await client.disconnect(force=True)
        await asyncio.sleep(0.5)
        other = APIClient("127.0.0.1", port, None, noise_psk=key, client_info="proxy_test second")
        await asyncio.wait_for(other.connect(login=False), 10)
        try:
            later = []
            got = asyncio.Event()

            def on_free_later(free, limit, allocated):
                later.append((free, limit, list(allocated)))
                got.set()

            other.subscribe_bluetooth_connections_free(on_free_later)
            await asyncio.wait_for(got.wait(), 5)
            check("a client gone with a device connected: the next client finds every slot free", later[-1][0] == 8 and later[-1][2] == [],
                  later)
        finally:
            await other.disconnect()
    finally:
        await client.disconnect()


def wait_for_text(path, text, seconds, proc):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        with open(path) as f:
            content = f.read()
        if text in content:
            return content
        if proc.poll() is not None:
            return None
        time.sleep(0.1)
    return None


async def eight(port, key):
    """Eight devices connected through one proxy at once, each read and notifying."""
    client = APIClient("127.0.0.1", port, None, noise_psk=key, client_info="proxy_test eight")
    await asyncio.wait_for(client.connect(login=False), 10)
    try:
        info = await client.device_info()
        heard = {}
        all_heard = asyncio.Event()
        long_range = []

        def on_raw(message):
            for ad in message.advertisements:
                if local_name(ad.data) == "LongRange":
                    long_range.append(ad)
                if lab_advertisement(ad.data):
                    heard[ad.address] = ad.address_type
                    if len(heard) == 8:
                        all_heard.set()

        unsubscribe = client.subscribe_bluetooth_le_raw_advertisements(on_raw)
        await asyncio.wait_for(all_heard.wait(), 20)
        for _ in range(50):
            if long_range:
                break
            await asyncio.sleep(0.1)
        unsubscribe()
        check("eight: the eight devices' advertisements", len(heard) == 8, sorted(heard))
        check("long range: an extended advertisement on LE Coded forwarded (--phy both)", long_range and long_range[0].address != 0,
              long_range[:1])
        slots = []
        client.subscribe_bluetooth_connections_free(lambda free, limit, allocated: slots.append((free, limit, list(allocated))))

        async def one(address, address_type):
            connected = asyncio.Event()
            states = []

            def on_state(is_connected, mtu, error):
                states.append((is_connected, mtu, error))
                if is_connected:
                    connected.set()

            await client.bluetooth_device_connect(address, on_state, timeout=30, feature_flags=info.bluetooth_proxy_feature_flags,
                                                  has_cache=False, address_type=address_type)
            await asyncio.wait_for(connected.wait(), 30)
            services = (await client.bluetooth_gatt_get_services(address)).services
            _, manufacturer = find(services, MANUFACTURER_NAME)
            name = bytes(await client.bluetooth_gatt_read(address, manufacturer.handle))
            _, measurement = find(services, HEART_RATE_MEASUREMENT)
            cccd = next(d for d in measurement.descriptors if d.uuid == CCCD)
            got = asyncio.Event()
            stop, _ = await client.bluetooth_gatt_start_notify(address, measurement.handle, lambda handle, data: got.set())
            await client.bluetooth_gatt_write_descriptor(address, cccd.handle, b"\x01\x00")
            await asyncio.wait_for(got.wait(), 15)
            return name, stop

        outcomes = await asyncio.gather(*(one(a, t) for a, t in heard.items()), return_exceptions=True)
        good = [o for o in outcomes if not isinstance(o, BaseException) and o[0] == b"swift-ble Lab Inc."]
        check("eight: eight connections at once, each read and notifying", len(good) == 8,
              [o if isinstance(o, BaseException) else o[0] for o in outcomes])
        await asyncio.sleep(0.3)
        check("eight: no slot left (0 free of 8, eight allocated)", slots and slots[-1][0] == 0 and len(slots[-1][2]) == 8, slots[-1:])
        for o in good:
            await o[1]()
        await asyncio.gather(*(client.bluetooth_device_disconnect(a) for a in heard), return_exceptions=True)
        deadline = time.monotonic() + 10
        while slots[-1][0] != 8 and time.monotonic() < deadline:
            await asyncio.sleep(0.1)
        check("eight: every slot back (8 free)", slots[-1][0] == 8, slots[-1:])
    finally:
        await client.disconnect()


def run_eight(ble, key_file, key, workdir):
    """Eleven linked virtual controllers (`ble controller`): the proxy, eight `ble serve` lab devices, a long range one and
    a BTHome sensor."""
    processes = []
    try:
        controller_log = os.path.join(workdir, "controllers.log")
        with open(controller_log, "w") as log:
            controllers = subprocess.Popen([ble, "controller"] + sum((["--tcp", "127.0.0.1:0"] for _ in range(11)), []),
                                           stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        processes.append(controllers)
        ready = wait_for_text(controller_log, "READY", 30, controllers)
        ports = re.search(r"READY ([0-9 ]+)", ready or "")
        if not ports:
            check("eight: controllers started", False, ready)
            return
        ports = ports.group(1).split()
        # The tenth: a device advertising on LE Coded only (extended advertising), heard only by a scan of LE Coded.
        with open(os.path.join(workdir, "serve-coded.log"), "w") as log:
            processes.append(subprocess.Popen([ble, "serve", "--hci", f"tcp:127.0.0.1:{ports[9]}", "--device", "heart-rate", "--name",
                                               "LongRange", "--extended", "--coded"], stdout=log, stderr=subprocess.STDOUT,
                                              start_new_session=True))
        # The eleventh: the simulated BTHome v2 sensor (non-connectable legacy advertising, service data 0xFCD2), a new
        # reading each second, each logged (--json: "event":"bthome") as it starts being advertised.
        bthome_log = os.path.join(workdir, "serve-bthome.log")
        with open(bthome_log, "w") as log:
            processes.append(subprocess.Popen([ble, "serve", "--hci", f"tcp:127.0.0.1:{ports[10]}", "--device", "bthome", "--name",
                                               "BTHome-Sim", "--json"], stdout=log, stderr=subprocess.STDOUT,
                                              start_new_session=True))
        for i, p in enumerate(ports[1:9]):
            log_path = os.path.join(workdir, f"serve-{i + 1}.log")
            with open(log_path, "w") as log:
                processes.append(subprocess.Popen([ble, "serve", "--hci", f"tcp:127.0.0.1:{p}", "--device", "lab", "--name", f"Lab-{i + 1}",
                                                   "--notify-interval", "200"],
                                                  stdout=log, stderr=subprocess.STDOUT, start_new_session=True))
        proxy_port = free_port()
        proxy_log = os.path.join(workdir, "proxy-eight.log")
        with open(proxy_log, "w") as log:
            proxy = subprocess.Popen([ble, "proxy", "--hci", f"tcp:127.0.0.1:{ports[0]}", "--listen", f"127.0.0.1:{proxy_port}",
                                      "--key", key_file, "--max-connections", "8", "--phy", "both"], stdout=log, stderr=subprocess.STDOUT,
                                     start_new_session=True)
        processes.append(proxy)
        if wait_for_text(proxy_log, "listening on", 60, proxy) is None:
            check("eight: the proxy started on a TCP controller", False, open(proxy_log).read()[-500:])
            return
        try:
            asyncio.run(asyncio.wait_for(eight(proxy_port, key), 120))
        except (APIConnectionError, asyncio.TimeoutError, AttributeError, TypeError, StopIteration) as error:
            check("eight: the scenario ran to its end", False, f"{type(error).__name__}: {error}")
            print(open(proxy_log).read()[-2000:])
        # Home Assistant's stack hears the BTHome sensor through this proxy and bthome-ble decodes it.
        bleak = subprocess.run([sys.executable, os.path.join(os.path.dirname(os.path.abspath(__file__)), "bleak_test.py"),
                                str(proxy_port), key, "--bthome"], capture_output=True, text=True, timeout=120)
        lines = [line for line in bleak.stdout.splitlines() if line.startswith(("ok  ", "FAIL"))]
        for line in lines:
            check(line[5:], line.startswith("ok  "))
        check("bthome: the program ran to its end", bleak.returncode == 0 and len(lines) == 2, (bleak.returncode, bleak.stderr[-1500:]))
        check_bthome_values(bleak.stdout, bthome_log)
    finally:
        for process in reversed(processes):
            process.terminate()
        for process in processes:
            try:
                process.wait(10)
            except subprocess.TimeoutExpired:
                process.kill()


def check_bthome_values(output, log_path):
    """Each packet bthome-ble decoded carries exactly the values `ble serve --device bthome` logged for that packet id
    (the latest reading with that id: ids wrap after 256 readings)."""
    advertised = {}
    for line in open(log_path):
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if entry.get("event") == "bthome":
            advertised[entry["packet_id"]] = entry
    decoded = [json.loads(line[len("decoded "):]) for line in output.splitlines() if line.startswith("decoded ")]
    check("bthome: the sensor logged the readings it advertised", len(advertised) >= 3, len(advertised))
    mismatches = []
    for values in decoded:
        sent = advertised.get(int(values["packet_id"]))
        if sent is None or (values.get("battery"), values.get("temperature"), values.get("humidity")) != \
                (sent["battery"], round(sent["temperature"], 2), round(sent["humidity"], 2)):
            mismatches.append((values, sent))
    check(f"bthome: bthome-ble decoded exactly the values advertised ({len(decoded)} packets, e.g. "
          f"{decoded[0] if decoded else None})", len(decoded) >= 3 and not mismatches, mismatches or decoded)


async def connect_without_address_type(port, key, address):
    """A connection request without the address type (as clients sent before aioesphomeapi required it), sent with
    the client's own message layer once the proxy has heard the address: (connected, error) of the answer."""
    from aioesphomeapi.api_pb2 import BluetoothDeviceConnectionResponse, BluetoothDeviceRequest  # noqa: PLC0415

    client = APIClient("127.0.0.1", port, None, noise_psk=key, client_info="proxy_test legacy")
    await asyncio.wait_for(client.connect(login=False), 10)
    try:
        heard = asyncio.Event()
        unsubscribe = client.subscribe_bluetooth_le_raw_advertisements(
            lambda message: any(ad.address == address for ad in message.advertisements) and heard.set())
        await asyncio.wait_for(heard.wait(), 20)
        unsubscribe()
        answer = asyncio.get_running_loop().create_future()

        def on_message(message):
            if message.address == address and not answer.done():
                answer.set_result((message.connected, message.error))

        connection = client._get_connection()  # noqa: SLF001 - the public call requires the address type
        remove = connection.add_message_callback(on_message, (BluetoothDeviceConnectionResponse,))
        connection.send_message(BluetoothDeviceRequest(address=address, request_type=5))   # CONNECT_V3_WITHOUT_CACHE
        result = await asyncio.wait_for(answer, 25)
        remove()
        if result[0]:
            await client.bluetooth_device_disconnect(address)
        return result
    finally:
        await client.disconnect()


def run_bumble(ble, key_file, key, workdir, kind):
    """A bleak program through Home Assistant's stack and the proxy to Bumble's lab peripheral (.venv-bumble), on two
    linked controllers: ours (`ble controller`) or Android's RootCanal."""
    repo = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", ".."))
    bumble_python = os.path.join(repo, ".venv-bumble", "bin", "python")
    peers = os.path.join(repo, "Tests", "Interop", "peers")
    if not os.path.exists(bumble_python):
        check(f"bumble/{kind}: .venv-bumble is there (Tests/Interop/bootstrap.sh)", False, bumble_python)
        return
    processes = []

    def start(name, argv):
        path = os.path.join(workdir, f"{kind}-{name}.log")
        with open(path, "w") as log:
            processes.append(subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, start_new_session=True))
        return processes[-1], path

    try:
        if kind == "ble":
            controllers, clog = start("controllers", [ble, "controller", "--tcp", "127.0.0.1:0", "--tcp", "127.0.0.1:0"])
        else:
            controllers, clog = start("controllers", [bumble_python, os.path.join(peers, "rootcanal_controllers.py"),
                                                      str(free_port()), str(free_port())])
        ready = wait_for_text(clog, "READY", 60, controllers)
        ports = re.search(r"READY (\d+) (\d+)", ready or "")
        if not ports:
            check(f"bumble/{kind}: the controllers started", False, ready)
            return
        p1, p2 = ports.groups()
        peripheral, plog = start("peripheral", [bumble_python, os.path.join(peers, "peripheral.py"), "--transport",
                                                f"tcp-client:127.0.0.1:{p2}", "--run-for", "120"])
        if wait_for_text(plog, "RESULT advertising=1", 60, peripheral) is None:
            check(f"bumble/{kind}: Bumble's peripheral advertises", False, open(plog).read()[-800:])
            return
        port = free_port()
        proxy, xlog = start("proxy", [ble, "proxy", "--hci", f"tcp:127.0.0.1:{p1}", "--listen", f"127.0.0.1:{port}", "--key", key_file,
                                      "--no-mdns"])
        if wait_for_text(xlog, "listening on", 60, proxy) is None:
            check(f"bumble/{kind}: the proxy started", False, open(xlog).read()[-800:])
            return
        if kind == "ble":
            # Bumble's peripheral has a static random address: a request that does not say so is connected with the type
            # the address was heard with.
            try:
                result = asyncio.run(connect_without_address_type(port, key, 0xD1D2D3D4D5D6))
            except (APIConnectionError, asyncio.TimeoutError) as error:
                result = error
            check("bumble/ble: a connection request without the address type uses the type heard (random)", result == (True, 0), result)
            time.sleep(0.5)
        bleak = subprocess.run([sys.executable, os.path.join(os.path.dirname(os.path.abspath(__file__)), "bleak_test.py"),
                                str(port), key, "--bumble"], capture_output=True, text=True, timeout=120)
        lines = [line for line in bleak.stdout.splitlines() if line.startswith(("ok  ", "FAIL"))]
        for line in lines:
            check(f"bumble/{kind}: " + line[5:].replace("bleak: ", ""), line.startswith("ok  "))
        check(f"bumble/{kind}: the program ran to its end", bleak.returncode == 0 and len(lines) == 6,
              (bleak.returncode, bleak.stderr[-1500:], open(xlog).read()[-1500:]))
        time.sleep(0.3)
        check(f"bumble/{kind}: Bumble's peripheral received the write", "RESULT write=from bleak" in open(plog).read(),
              open(plog).read()[-800:])
    finally:
        for process in reversed(processes):
            if process.poll() is None:
                process.terminate()
        for process in processes:
            try:
                process.wait(10)
            except subprocess.TimeoutExpired:
                process.kill()


def run_mdns(ble, key_file, key):
    """mdns_test.py in a network namespace of its own (root and unshare needed; skipped, and said so, otherwise)."""
    if os.geteuid() != 0 or shutil.which("unshare") is None or shutil.which("ip") is None:
        print("skip mdns: needs root, unshare and ip (a network namespace for multicast)")
        return
    setup = ("set -e; ip link set lo up; ip link add mdns0 type veth peer name mdns1; "
             "ip addr add 10.253.0.1/24 dev mdns0; ip addr add 10.253.0.2/24 dev mdns1; "
             "ip link set mdns0 up; ip link set mdns1 up; ip route add 224.0.0.0/4 dev mdns0; ")
    script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "mdns_test.py")
    run = subprocess.run(["unshare", "-n", "bash", "-c", setup + f'exec "{sys.executable}" "{script}" "{ble}" "{key_file}" "{key}"'],
                         capture_output=True, text=True, timeout=120)
    lines = [line for line in run.stdout.splitlines() if line.startswith(("ok  ", "FAIL"))]
    for line in lines:
        check(line[5:], line.startswith("ok  "))
    check("mdns: the test ran to its end", run.returncode == 0 and len(lines) == 6, (run.returncode, run.stderr[-1500:]))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--ble", required=True)
    parser.add_argument("--log", default=None)
    args = parser.parse_args()
    workdir = tempfile.mkdtemp(prefix="ble-proxy-")
    key = base64.b64encode(os.urandom(32)).decode()
    key_file = os.path.join(workdir, "key")
    with open(key_file, "w") as f:
        f.write(key + "\n")
    log_path = args.log or os.path.join(workdir, "proxy.log")
    bonds_file = os.path.join(workdir, "bonds.json")

    # Without a key the proxy refuses to start.
    refusal = subprocess.run([args.ble, "proxy", "--listen", "127.0.0.1:0"], capture_output=True, text=True, timeout=60)
    check("without --key the proxy refuses to start", refusal.returncode == 64 and "--key" in refusal.stderr,
          (refusal.returncode, refusal.stderr[-300:]))

    port = free_port()
    with open(log_path, "w") as log:
        proxy = subprocess.Popen([args.ble, "proxy", "--listen", f"127.0.0.1:{port}", "--key", key_file, "--name", "test-proxy",
                                  "--bonds", bonds_file, "--stats-interval", "1"],
                                 stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            with open(log_path) as f:
                if "listening on" in f.read():
                    break
            if proxy.poll() is not None:
                break
            time.sleep(0.1)
        with open(log_path) as f:
            started = "listening on" in f.read()
        check("the proxy started", started, open(log_path).read()[-500:])
        if started:
            try:
                asyncio.run(asyncio.wait_for(scenario(port, key, log_path, bonds_file), 120))
            except (APIConnectionError, asyncio.TimeoutError, AttributeError, TypeError) as error:
                check("the scenario ran to its end", False, f"{type(error).__name__}: {error}")
            # bleak through habluetooth and bleak-esphome (a process of its own: habluetooth's manager is global).
            bleak = subprocess.run([sys.executable, os.path.join(os.path.dirname(os.path.abspath(__file__)), "bleak_test.py"),
                                    str(port), key], capture_output=True, text=True, timeout=120)
            lines = [line for line in bleak.stdout.splitlines() if line.startswith(("ok  ", "FAIL"))]
            for line in lines:
                check(line[5:], line.startswith("ok  "))
            check("bleak: the program ran to its end", bleak.returncode == 0 and len(lines) == 6, (bleak.returncode, bleak.stderr[-1500:]))
    finally:
        proxy.terminate()
        try:
            proxy.wait(10)
        except subprocess.TimeoutExpired:
            proxy.kill()
    # The counters, every second and once more when it stopped: advertisements heard and forwarded to the clients
    # that asked (the scenario's and bleak's), cumulative.
    stats = [tuple(int(n) for n in m.groups()[1:]) + (m.group(1) is not None,) for m in re.finditer(
        r"stats( \(final\))?: (\d+) advertisements heard, (\d+) forwarded, (\d+) dropped; (\d+) clients, (\d+) devices",
        open(log_path).read())]
    periodic = [s for s in stats if not s[5]]
    final = [s for s in stats if s[5]]
    check("the proxy reported its counters every second, cumulative", len(periodic) >= 2
          and all(a[0] <= b[0] and a[1] <= b[1] for a, b in zip(periodic, periodic[1:])) and periodic[-1][0] > 0 and periodic[-1][1] > 0,
          periodic[-3:])
    check("the last counters when it stopped: heard and forwarded advertisements, no client left",
          len(final) == 1 and final[0][0] >= periodic[-1][0] > 0 and final[0][1] >= periodic[-1][1] > 0 and final[0][3] == 0,
          final)
    run_eight(args.ble, key_file, key, workdir)
    run_bumble(args.ble, key_file, key, workdir, "ble")
    run_bumble(args.ble, key_file, key, workdir, "rootcanal")
    run_mdns(args.ble, key_file, key)
    passed = sum(1 for _, ok in results if ok)
    failed = len(results) - passed
    if failed:
        print("--- proxy log (end) ---")
        print(open(log_path).read()[-3000:])
    print(f"{passed} passed, {failed} failed")
    if not failed:
        shutil.rmtree(workdir, ignore_errors=True)
    else:
        print(f"logs: {workdir}")
    sys.exit(1 if failed or not results else 0)


if __name__ == "__main__":
    main()
