"""Beacons and extended advertising, both ways."""
import re
from suite.engine import Check, Controllers, Count, Grep, Part, Result, Run, Scenario, Start
from suite.common import ADVERTISING, BLE, SERVING, ble, peer


# A Bumble scanner decodes the iBeacon our `ble beacon` advertises (its own decoder, peers/beacon_scanner.py):
# the same UUID, major, minor and measured power, non-connectable.
BUMBLE_SCANNER_DECODES_BLE_IBEACON = Scenario('bumble-scanner-decodes-ble-ibeacon', [Part('', [
    Controllers(2),
    Start('beacon', [BLE, 'beacon', '--ibeacon', 'E2C56DB5-DFFB-48D2-B060-D0F5A71096E0', '--major', '4660',
                     '--minor', '22136', '--power', '-59', '--hci', 'tcp:127.0.0.1:$p1', '--json', '--run-for', '30'],
          ready='"event":"advertising"', not_ready='ble beacon did not start advertising'),
    Run('scanner', peer('beacon_scanner.py', '--want', 'ibeacon', '--timeout', '10', port='$p2'),
        bumble='scanner', label='the scanner')], [
    Result('scanner', 'ibeacon_uuid', 'E2C56DB5-DFFB-48D2-B060-D0F5A71096E0'),
    Result('scanner', 'ibeacon_major', 4660),
    Result('scanner', 'ibeacon_minor', 22136),
    Result('scanner', 'ibeacon_power', -59),
    Result('scanner', 'ibeacon_connectable', 0),
    Result('scanner', 'done', 1),
])], needs=('ble',))


# Extended advertising (Bluetooth 5): a Bumble device advertises two advertising sets of extended, non-connectable
# PDUs made with its own Device.create_advertising_set (peers/extended_advertiser.py), one on LE 1M (SID 1) and one
# on LE Coded (SID 2, secondary PHY LE Coded). `ble scan --phy both --json` finds both, each with its PHY and SID;
# a scan of one PHY finds only the set on it. Bumble's controller lists no extended command and has no LE Coded on
# its air (docs/ble-tool.md): there our host scans with the legacy commands, refuses a Coded scan, and a 1M scan hears both
# sets (as extended reports, on "1M").
BLE_SCAN_FINDS_BUMBLE_EXTENDED_ADVERTISING = Scenario('ble-scan-finds-bumble-extended-advertising', [Part('', [
    Controllers(2),
    Start('advertiser', peer('extended_advertiser.py', '--run-for', '40'), bumble=True, ready=ADVERTISING,
          not_ready='the Bumble extended advertiser did not start its two advertising sets'),
    Run('both', ble('scan', '--phy', 'both', '--json', '--timeout', '3'), label='ble scan --phy both',
        when=lambda ctx: not ctx.kind.bumbles_own),
    Run('coded', ble('scan', '--phy', 'coded', '--json', '--timeout', '2'), label='ble scan --phy coded',
        when=lambda ctx: not ctx.kind.bumbles_own),
    Run('coded', ble('scan', '--phy', 'coded', '--json', '--timeout', '2'), status=1, out='coded-out', err='coded-err',
        transcript=True, label='ble scan --phy coded on a controller without extended commands',
        when=lambda ctx: ctx.kind.bumbles_own),
    Run('onem', ble('scan', '--phy', '1m', '--json', '--timeout', '2'), label='ble scan --phy 1m')], [
    Grep('both', '"advertising":\\{"dataLength":[0-9]+,"extended":true,"phy":"1M","secondaryPHY":"1M","sid":1,'
         '"truncated":false\\}.*"name":"Bumble Ext 1M"',
         'ble scan --phy both did not find the LE 1M extended set (SID 1)', when=lambda ctx: not ctx.kind.bumbles_own),
    Grep('both', '"advertising":\\{"dataLength":[0-9]+,"extended":true,"phy":"Coded","secondaryPHY":"Coded","sid":2,'
         '"truncated":false\\}.*"name":"Bumble Ext Coded"',
         'ble scan --phy both did not find the LE Coded extended set (SID 2)', when=lambda ctx: not ctx.kind.bumbles_own),
    Grep('coded', '"phy":"Coded".*"name":"Bumble Ext Coded"', 'ble scan --phy coded did not find the LE Coded set',
         when=lambda ctx: not ctx.kind.bumbles_own),
    Count('coded', '"name":"Bumble Ext 1M"', '==', 0, 'ble scan --phy coded heard the LE 1M set'),
    Grep('coded', 'does not support LE extended advertising', 'ble scan --phy coded did not say why it cannot scan',
         when=lambda ctx: ctx.kind.bumbles_own),
    Grep('onem', '"phy":"1M".*"name":"Bumble Ext 1M"', 'ble scan --phy 1m did not find the LE 1M set'),
    Grep('onem', '"extended":true,.*"name":"Bumble Ext 1M"', 'ble scan --phy 1m did not see extended PDUs'),
    Count('onem', '"name":"Bumble Ext Coded"', '==', 0, 'ble scan --phy 1m heard the LE Coded set',
          when=lambda ctx: not ctx.kind.bumbles_own),
])], needs=('ble',))


# `ble serve --extended --adv-data HEX` advertises the lab device in one extended, connectable advertisement and
# 400 bytes of manufacturer data in a second, non-connectable one ("Extended Lab Data", split over several reports);
# a Bumble central (peers/extended_central.py) finds both with its extended scan, joins the parts, sees extended
# PDUs, connects with LE Extended Create Connection and reads the Device Name over GATT. On Bumble's controller (no
# extended command listed) `ble serve --extended` says it cannot.
BUMBLE_CENTRAL_CONNECTS_TO_BLE_SERVE_EXTENDED = Scenario('bumble-central-connects-to-ble-serve-extended', [Part('', [
    Controllers(2),
    Start('peripheral', [BLE, 'serve', '--hci', 'tcp:127.0.0.1:$p1', '--json', '--run-for', '30', '--name', 'Extended Lab',
                         '--extended', '--adv-data', ('c9ffffff' + '5a' * 198) * 2],
          ready=SERVING, not_ready='ble serve --extended did not start serving', when=lambda ctx: not ctx.kind.bumbles_own),
    Run('peripheral', [BLE, 'serve', '--hci', 'tcp:127.0.0.1:$p1', '--run-for', '5', '--extended'], status=1,
        out='peripheral-out', err='peripheral-err', transcript=True, label='ble serve --extended on Bumble\'s controller',
        when=lambda ctx: ctx.kind.bumbles_own),
    Run('central', peer('extended_central.py', '--name', 'Extended Lab', '--also', 'Extended Lab Data', port='$p2'),
        bumble='central',
        timeout=60, label='the Bumble central', when=lambda ctx: not ctx.kind.bumbles_own)], [
    Grep('peripheral', '"event":"serving".*"extended":true', 'ble serve did not say it advertises extended',
         when=lambda ctx: not ctx.kind.bumbles_own),
    Grep('peripheral', 'does not support LE extended advertising', 'ble serve --extended did not say why it cannot',
         when=lambda ctx: ctx.kind.bumbles_own),
    *[Result('central', key, value, when=lambda ctx: not ctx.kind.bumbles_own)
      for key, value in (('found', 1), ('legacy', 0), ('primary_phy', 1), ('connected', 1),
                         ('device_name', 'Extended Lab'), ('done', 1))],
    Result('central', 'also_connectable', 0, when=lambda ctx: not ctx.kind.bumbles_own),
    Check(lambda ctx: ctx.kind.bumbles_own or any(re.fullmatch('RESULT also_length=([0-9]+)', line)
                                                  and int(line.split('=')[1]) > 400 for line in ctx.lines('central')),
          'the Bumble central did not get the 400 bytes of the second advertisement whole'),
])], needs=('ble',))


# Our `ble range --json` ranges a Bumble beacon (peers/beacon_advertiser.py) rotating an iBeacon, an Eddystone-URL,
# an Eddystone-UID and an Eddystone-TLM frame built by Bumble's side: each identified, with a distance and a
# proximity, numbers as numbers, and the TLM telemetry attached to the UID beacon that precedes it.
BLE_RANGES_BUMBLE_BEACONS = Scenario('ble-ranges-bumble-beacons', [Part('', [
    Controllers(2),
    Start('advertiser', peer('beacon_advertiser.py', '--ibeacon', '2F234454-CF6D-4A0F-ADF2-F4911BA9FFA6:7:9:-59',
                             '--eddystone-url', 'https://swift.org', '--eddystone-uid',
                             'edd1ebeac04e5defa017:0123456789ab', '--eddystone-tlm', '--dwell', '0.3',
                             '--run-for', '40'),
          bumble=True, ready=ADVERTISING, not_ready='the Bumble beacon did not start advertising'),
    Run('range', ble('range', '--json', '--run-for', '6'), label='ble range')], [
    Grep('range', '"identifier":"ibeacon:2F234454-CF6D-4A0F-ADF2-F4911BA9FFA6:7:9","format":"ibeacon",'
         '"uuid":"2F234454-CF6D-4A0F-ADF2-F4911BA9FFA6","major":7,"minor":9,"measured_power":-59,"rssi":-?[0-9]+,'
         '"smoothed_rssi":-?[0-9]+(\\.[0-9]+)?,"distance":-?[0-9]+(\\.[0-9]+)?,"accuracy":-?[0-9]+(\\.[0-9]+)?,'
         '"proximity":"(immediate|near|far)"', 'ble range did not range the Bumble iBeacon (7, 9) with a distance'),
    Grep('range', '"identifier":"eddystone-url:https://swift.org".*"measured_power":-59,.*"distance":'
         '-?[0-9]+(\\.[0-9]+)?', 'ble range did not range the Bumble Eddystone-URL'),
    Grep('range', '"identifier":"eddystone-uid:edd1ebeac04e5defa017:0123456789ab".*"distance":-?[0-9]+(\\.[0-9]+)?',
         'ble range did not range the Bumble Eddystone-UID'),
    # The TLM frame follows the UID frame in the rotation: its telemetry joins the UID beacon.
    Grep('range', '"identifier":"eddystone-uid:edd1ebeac04e5defa017:0123456789ab".*"battery_mv":3000,'
         '"temperature":22.50,"advertising_count":[0-9]+,"uptime":-?[0-9]+(\\.[0-9]+)?',
         "ble range did not show the Bumble beacon's TLM telemetry (3000 mV, 22.5 °C) on its UID"),
])], needs=('ble',))
