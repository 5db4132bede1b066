"""ble gateway with a Mosquitto broker: presence, devices, fleets, commands, a broker restart."""
from suite.engine import Broker, Controllers, Exit, Grep, Interrupt, Part, Ports, Result, Run, Scenario, Sleep, Start, Stop, WaitFor, hexof
from suite.common import BLE, PY, SERVING, WRITABLE, serve_ble


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
