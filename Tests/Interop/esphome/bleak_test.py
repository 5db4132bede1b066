"""bleak through Home Assistant's Bluetooth stack and `ble proxy`: habluetooth's BluetoothManager (no BlueZ: no local
adapters) with the proxy registered by bleak-esphome, as Home Assistant's ESPHome integration does, then a bleak
program written for Home Assistant (HaBleakClientWrapper, a BleakClient) that connects to the lab device, reads,
writes, and subscribes. Run by proxy_test.py against a proxy it started; prints one line per check.

    bleak_test.py PORT KEY
    bleak_test.py PORT KEY --bumble    the same with Bumble's lab peripheral (Tests/Interop/peers/peripheral.py)
    bleak_test.py PORT KEY --bthome    the BTHome v2 sensor's advertisements, heard through the proxy by Home
                                       Assistant's manager, decoded by bthome-ble into the values it advertises
"""
import asyncio
import json
import sys

from aioesphomeapi import APIClient
from bleak_esphome import connect_scanner
from bleak_retry_connector import BleakSlotManager, establish_connection
from bluetooth_adapters import BluetoothAdapters
from habluetooth import BluetoothManager, HaBleakClientWrapper, set_manager

MANUFACTURER_NAME = "00002a29-0000-1000-8000-00805f9b34fb"
WRITABLE = "12345678-1234-5678-1234-56789abcdef1"
HEART_RATE_MEASUREMENT = "00002a37-0000-1000-8000-00805f9b34fb"
LAB_COMPANY = 0xFFFF

failures = 0


def check(name, ok, detail=""):
    global failures
    failures += 0 if ok else 1
    print(f"{'ok  ' if ok else 'FAIL'} bleak: {name}{'' if ok else ': ' + str(detail)}", flush=True)


class NoLocalAdapters(BluetoothAdapters):
    """This machine's own adapters, as habluetooth sees them: none (the proxy is the only radio)."""

    async def refresh(self) -> None:
        return None

    @property
    def adapters(self):
        return {}

    @property
    def default_adapter(self) -> str:
        return "hci0"


class Manager(BluetoothManager):
    """The manager as an application has it: Home Assistant's dispatches discoveries to integrations; here nobody
    else is listening."""

    def _discover_service_info(self, service_info) -> None:
        return None


BTHOME = "0000fcd2-0000-1000-8000-00805f9b34fb"


async def bthome(manager):
    """Decodes the simulated BTHome sensor's service data as Home Assistant's BTHome integration does (one parser, so
    its packet-id filter applies), until three packets are decoded; prints each decoded packet as `decoded {json}`
    for proxy_test.py to compare with what the sensor says it advertised."""
    from bthome_ble import BTHomeBluetoothDeviceData  # noqa: PLC0415

    parser = BTHomeBluetoothDeviceData()
    found = None
    decoded = {}
    last = None
    for _ in range(150):
        info = next((s for s in manager.async_discovered_service_info(False) if BTHOME in s.service_data), None)
        found = found or info
        if info is not None and info.service_data[BTHOME] != last:
            last = info.service_data[BTHOME]
            update = parser.update(info)
            values = {key.key: value.native_value for key, value in update.entity_values.items()}
            if "packet_id" in values and values["packet_id"] not in decoded:
                decoded[values["packet_id"]] = values
                print("decoded " + json.dumps(values), flush=True)
            if len(decoded) >= 3:
                break
        await asyncio.sleep(0.1)
    check("the BTHome sensor's advertisement through the proxy", found is not None,
          [s.name for s in manager.async_discovered_service_info(False)])
    check("bthome-ble decodes three successive packets (packet id, battery, temperature, humidity)",
          len(decoded) >= 3 and all({"packet_id", "battery", "temperature", "humidity"} <= set(v) for v in decoded.values()),
          list(decoded.values()))


async def main(port, key, mode):
    manager = Manager(NoLocalAdapters(), BleakSlotManager())
    set_manager(manager)
    await manager.async_setup()
    api = APIClient("127.0.0.1", port, None, noise_psk=key, client_info="bleak_test")
    await asyncio.wait_for(api.connect(login=False), 10)
    try:
        info = await api.device_info()
        data = connect_scanner(api, info, available=True)
        data.scanner.async_setup()
        manager.async_register_scanner(data.scanner)
        if mode == "--bthome":
            await bthome(manager)
            return
        # The lab device (ours, or Bumble's lab peripheral with --bumble), found through the proxy's advertisements.
        bumble = mode == "--bumble"
        wanted_name, manufacturer_name = ("BumbleLabPeripheral", b"Bumble Lab Inc.") if bumble else ("SwiftBLELab", b"swift-ble Lab Inc.")
        device = None
        for _ in range(200):
            for service_info in manager.async_discovered_service_info(True):
                # Ours: manufacturer data (company 0xFFFF) 'lab' in the advertisement, 'scanrsp' in the scan response.
                if service_info.name == wanted_name and (bumble or service_info.manufacturer_data.get(LAB_COMPANY) in (b"lab", b"scanrsp")):
                    device = service_info.device
            if device:
                break
            await asyncio.sleep(0.1)
        check(f"{wanted_name} discovered through the proxy", device is not None, [s.name for s in manager.async_discovered_service_info(True)])
        if device is None:
            return
        # As a Home Assistant integration connects: bleak-retry-connector's establish_connection with the wrapper
        # habluetooth puts in place of BleakClient.
        client = await establish_connection(HaBleakClientWrapper, device, "lab", max_attempts=2)
        try:
            check("connected", client.is_connected)
            name = await client.read_gatt_char(MANUFACTURER_NAME)
            check("read", bytes(name) == manufacturer_name, name)
            await client.write_gatt_char(WRITABLE, b"from bleak", response=True)
            value = await client.read_gatt_char(WRITABLE)
            check("write and read back", bytes(value) == b"from bleak", value)
            received = asyncio.Queue()
            await client.start_notify(HEART_RATE_MEASUREMENT, lambda _, data: received.put_nowait(bytes(data)))
            first = await asyncio.wait_for(received.get(), 10)
            check("notifications", len(first) >= 2, first)
            await client.stop_notify(HEART_RATE_MEASUREMENT)
        finally:
            await client.disconnect()
        check("disconnected", not client.is_connected)
    finally:
        await api.disconnect()
        manager.async_stop()


if __name__ == "__main__":
    asyncio.run(asyncio.wait_for(main(int(sys.argv[1]), sys.argv[2], sys.argv[3] if len(sys.argv) > 3 else ""), 90))
    sys.exit(1 if failures else 0)
