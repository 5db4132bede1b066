"""Pairing and bonds with Bumble in both roles, and ANCS."""
from suite.engine import Check, Controllers, Count, Grep, Json, Part, Result, Run, Scenario, Start, hexof, matching
from suite.common import ADVERTISING, AUTHENTICATED, BLE, SECRET, SERVING_OR_ADVERTISING, TOP_SECRET, ble, peer


def ours_bonds(args):
    """Our tool never touches its default bond store here, and no bond leaks from one case into the next."""
    return list(args) if '--bonds' in args else [*args, '--bonds', '$logs/$prefix-bonds-ours.json']


def pair_serve_ble(*args):
    return Start('peripheral', [BLE, 'serve', '--hci', 'tcp:127.0.0.1:$p1', '--name', 'SwiftBLEPair', '--json',
                                '--run-for', '30', *ours_bonds(args)],
                 ready=SERVING_OR_ADVERTISING, not_ready='$part: the peripheral did not start advertising')


def pair_serve_bumble(*args):
    return Start('peripheral', peer('pairing_peer.py', '--role', 'peripheral', '--name', 'BumblePair', '--run-for', '30',
                                    *args), bumble=True, ready=SERVING_OR_ADVERTISING,
                 not_ready='$part: the peripheral did not start advertising')


def pair_central(role, target, *args):
    """Bumble's central (pairing_peer.py --role central); it must run every step."""
    return Run(role, peer('pairing_peer.py', '--role', 'central', '--name', target, *args, port='$p2'),
               bumble='central', label='$part: the Bumble central failed')


def pair_ble(status, *args, role='central'):
    """`ble ARGS --hci (p2)`: standard output and error in ROLE.log.out and .err, both also appended to ROLE.log."""
    return Run(role, ble(*ours_bonds(args)), status=status, out=f'{role}.log.out', err=f'{role}.log.err',
               transcript=True, label='$part')


def paired(role, sc, authenticated):
    return Result(role, f'paired=1 sc={sc} authenticated={authenticated} key_size=16 bonded', 1)


def same_compare(ctx):
    compared = [[l for l in ctx.lines(role) if l.startswith('RESULT compare=')] for role in ('central', 'peripheral')]
    return compared[0] == compared[1]


def pairing_bumble_to_bumble():
    c, s = 'central', 'peripheral'
    return Scenario('pairing-bumble-central-to-bumble-peripheral', [
        Part('sc-just-works', [Controllers(2), pair_serve_bumble(),
                               pair_central(c, 'BumblePair', '--pair', '--read-before', SECRET, '--read', SECRET)],
             [Result(c, 'read_before', '0x0F'), paired(c, 1, 0), paired(s, 1, 0), Result(c, 'read_DEF3', TOP_SECRET)]),
        Part('sc-numeric-comparison', [Controllers(2), pair_serve_bumble('--io', 'yesno', '--mitm'),
                                       pair_central(c, 'BumblePair', '--io', 'yesno', '--mitm', '--pair')],
             [Result(s, 'method', 'numeric_comparison'), paired(c, 1, 1),
              Check(same_compare, '$part: the two sides compared different numbers')]),
        Part('sc-passkey-central-enters', [
            Controllers(2), pair_serve_bumble('--io', 'display', '--mitm', '--passkey', '123456'),
            pair_central(c, 'BumblePair', '--io', 'keyboard', '--passkey', '123456', '--pair')],
             [Result(s, 'passkey', 123456), paired(s, 1, 1)]),
        Part('legacy-passkey-peripheral-enters', [
            Controllers(2), pair_serve_bumble('--io', 'keyboard', '--passkey', '123456'),
            pair_central(c, 'BumblePair', '--legacy', '--io', 'display', '--mitm', '--passkey', '123456', '--pair')],
             [Result(c, 'passkey', 123456), paired(s, 0, 1)]),
        Part('wrong-passkey', [
            Controllers(2), pair_serve_bumble('--io', 'display', '--mitm', '--passkey', '123456'),
            pair_central(c, 'BumblePair', '--io', 'keyboard', '--passkey', '000000', '--pair', '--read', SECRET)],
             [Result(c, 'pairing_failed', '0x04'), Result(s, 'pairing_failed', '0x04'), Result(c, 'read_DEF3', '0x0F')]),
        Part('bonded-reconnect', [
            Controllers(2), pair_serve_bumble('--legacy', '--keystore', '$logs/$name-keys-peripheral.json'),
            pair_central(c, 'BumblePair', '--keystore', '$logs/$name-keys-central.json', '--pair'),
            pair_central('central2', 'BumblePair', '--keystore', '$logs/$name-keys-central.json', '--encrypt',
                         '--read', SECRET)],
             [paired(c, 0, 0), Result('central2', 'encrypted=1 paired_this_link', 0),
              Result('central2', 'read_DEF3', TOP_SECRET),
              Check(lambda ctx: len(matching(ctx, s, '^RESULT paired=1')) == 1
                    and 'RESULT encrypted=1 paired_this_link=0' in ctx.lines(s),
                    '$part: the peripheral did not encrypt the second link with the bond alone')]),
    ],
        # On Bumble's own controllers this would be Bumble against itself: it runs where it checks the controllers'
        # LE encryption (keys compared, EDIV/Rand, Encryption Change) with an independent host on both ends.
        kinds=lambda kind: not kind.bumbles_own, needs=('ble',), shared_controllers=True)


def pairing_bumble_central_to_ble_peripheral():
    c, s = 'central', 'peripheral'
    return Scenario('pairing-bumble-central-to-ble-peripheral', [
        Part('sc-just-works', [Controllers(2), pair_serve_ble(),
                               pair_central(c, 'SwiftBLEPair', '--pair', '--read-before', SECRET, '--read', SECRET,
                                            '--read', AUTHENTICATED)],
             # Our server holds no key for this central: Insufficient Authentication (Core 5.4, Vol 3, Part C,
             # 10.3.1); an unauthenticated (Just Works) key does not open an attribute that needs authentication.
             [Result(c, 'read_before', '0x05'), paired(c, 1, 0), Result(c, 'encrypted=1 paired_this_link', 1),
              Result(c, 'read_DEF3', TOP_SECRET), Result(c, 'read_DEFB', '0x05'),
              Json(s, dict(event='paired', method='justWorks', secure_connections=True, authenticated=False,
                           key_size=16, bonded=True))]),
        Part('sc-numeric-comparison', [Controllers(2), pair_serve_ble('--io', 'yesno'),
                                       pair_central(c, 'SwiftBLEPair', '--io', 'yesno', '--mitm', '--pair',
                                                    '--read', AUTHENTICATED)],
             [Result(c, 'method', 'numeric_comparison'), paired(c, 1, 1),
              Result(c, 'read_DEFB', hexof('authenticated')),
              Json(s, dict(event='paired', method='numericComparison', secure_connections=True, authenticated=True))]),
        Part('sc-passkey-bumble-enters', [
            Controllers(2), pair_serve_ble('--io', 'display', '--passkey', '123456'),
            pair_central(c, 'SwiftBLEPair', '--io', 'keyboard', '--mitm', '--passkey', '123456', '--pair')],
             [Json(s, dict(event='passkey', passkey=123456)), paired(c, 1, 1),
              Json(s, dict(event='paired', method='passkeyEntry', secure_connections=True, authenticated=True))]),
        Part('sc-passkey-ble-enters', [
            Controllers(2), pair_serve_ble('--io', 'keyboard', '--passkey', '123456'),
            pair_central(c, 'SwiftBLEPair', '--io', 'display', '--mitm', '--passkey', '123456', '--pair')],
             [Result(c, 'passkey', 123456), paired(c, 1, 1),
              Json(s, dict(event='paired', method='passkeyEntry', secure_connections=True, authenticated=True))]),
        Part('legacy-just-works', [Controllers(2), pair_serve_ble(),
                                   pair_central(c, 'SwiftBLEPair', '--legacy', '--pair', '--read', SECRET)],
             [paired(c, 0, 0), Result(c, 'read_DEF3', TOP_SECRET),
              Json(s, dict(event='paired', method='justWorks', secure_connections=False, authenticated=False))]),
        Part('legacy-passkey', [
            Controllers(2), pair_serve_ble('--io', 'display', '--passkey', '123456'),
            pair_central(c, 'SwiftBLEPair', '--legacy', '--io', 'keyboard', '--mitm', '--passkey', '123456', '--pair')],
             [Json(s, dict(event='passkey', passkey=123456)), paired(c, 0, 1),
              Json(s, dict(event='paired', method='passkeyEntry', secure_connections=False, authenticated=True))]),
        Part('wrong-passkey', [
            Controllers(2), pair_serve_ble('--io', 'display', '--passkey', '123456'),
            pair_central(c, 'SwiftBLEPair', '--io', 'keyboard', '--mitm', '--passkey', '000000', '--pair',
                         '--read', SECRET)],
             [Result(c, 'pairing_failed', '0x04'), Result(c, 'read_DEF3', '0x05'),
              Json(s, dict(event='pairing_failed', reason=4)),
              Count(s, '"event":"paired"', '==', 0, '$part: ble serve reported a pairing')]),
        Part('bonded-reconnect', [
            Controllers(2), pair_serve_ble('--bonds', '$logs/$name-bonds-ours.json'),
            pair_central(c, 'SwiftBLEPair', '--keystore', '$logs/$name-bonds-bumble.json', '--pair'),
            pair_central('central2', 'SwiftBLEPair', '--keystore', '$logs/$name-bonds-bumble.json', '--encrypt',
                         '--read', SECRET)],
             [paired(c, 1, 0), Result('central2', 'encrypted=1 paired_this_link', 0),
              Result('central2', 'read_DEF3', TOP_SECRET), Json(s, dict(event='encrypted', bonded=True)),
              Count(s, '"event":"paired"', '==', 1, '$part: ble serve paired more than once (or never)')]),
    ], needs=('ble',), shared_controllers=True)


def eatt_bumble_central_to_ble_peripheral():
    """Bumble's GATT client opens three Enhanced ATT bearers to `ble serve` after pairing (our host owns SPSM 0x0027 and
    accepts them on the encrypted link) and reads the encrypted characteristic on all three at once: our server answers
    each on its own bearer. Core 5.4, Vol 3, Part G, 2.5 and Part F, 3.2.11."""
    c, s = 'central', 'peripheral'
    return Scenario('eatt-bumble-central-to-ble-peripheral', [
        Part('three-bearers', [Controllers(2), pair_serve_ble(),
                               pair_central(c, 'SwiftBLEPair', '--pair', '--eatt', '3', '--read', SECRET)],
             [paired(c, 1, 0), Result(c, 'eatt_bearers', 3),
              Count(c, f'^RESULT eatt_read_DEF3={TOP_SECRET}$', '==', 3,
                    '$part: not every EATT bearer read the encrypted value')]),
        # `ble serve --eatt`: Server Supported Features (0x2B3A) in the Generic Attribute service says EATT (bit 0).
        Part('server-supported-features', [Controllers(2), pair_serve_ble('--eatt'),
                                           pair_central(c, 'SwiftBLEPair', '--pair', '--eatt', '2', '--read', SERVER_FEATURES,
                                                        '--read', SECRET)],
             [Result(c, 'read_34FB', '01'), Result(c, 'eatt_bearers', 2),
              Count(c, '^RESULT eatt_read_34FB=01$', '==', 2, '$part: Server Supported Features differs on an EATT bearer'),
              Count(c, f'^RESULT eatt_read_DEF3={TOP_SECRET}$', '==', 2,
                    '$part: not every EATT bearer read the encrypted value')]),
    ], needs=('ble',), shared_controllers=True)


SERVER_FEATURES = '00002B3A-0000-1000-8000-00805F9B34FB'


def eatt_ble_central_to_bumble_peripheral():
    """`ble read --eatt 3` against Bumble's GATT server with EATT on: the read pairs on demand, then our client opens
    three Enhanced ATT bearers on the encrypted link and reads the encrypted characteristic four times at once, over
    the unenhanced bearer and the three EATT ones."""
    c, s = 'central', 'peripheral'
    return Scenario('eatt-ble-central-to-bumble-peripheral', [
        Part('three-bearers', [Controllers(2), pair_serve_bumble('--eatt', '1'),
                               pair_ble(0, 'read', 'BumblePair', SECRET, '--eatt', '3', '--json'),
                               Json('central.log.out', dict(uuid=SECRET, value=TOP_SECRET)),
                               Json('central.log.out', dict(event='eatt', bearers=3, reads=4, identical=True))],
             [paired(s, 1, 0)]),
    ], needs=('ble',), shared_controllers=True)


def pairing_ble_central_to_bumble_peripheral():
    c, s, c2 = 'central', 'peripheral', 'central2'
    bonds = '$logs/$name-bonds-ours.json'
    static_bonds = '$logs/$name-static-bonds-ours.json'
    return Scenario('pairing-ble-central-to-bumble-peripheral', [
        Part('protected-read', [
            Controllers(2), pair_serve_bumble(),
            pair_ble(3, 'read', 'BumblePair', SECRET, '--no-pair'),
            Grep('central.log.err', r'Insufficient Encryption \(0x0f\)', '$part: ble read --no-pair did not report 0x0F',
                 ignore_case=True),
            pair_ble(0, 'read', 'BumblePair', SECRET, '--json'),
            Json('central.log.out', dict(uuid=SECRET, value=TOP_SECRET))],
             [paired(s, 1, 0), Result(s, 'encrypted=1 paired_this_link', 1)]),
        Part('sc-numeric-comparison', [Controllers(2), pair_serve_bumble('--io', 'yesno'),
                                       pair_ble(0, 'pair', 'BumblePair', '--io', 'yesno', '--mitm', '--json')],
             [Json(c, dict(event='paired', method='numericComparison', secure_connections=True, authenticated=True,
                           key_size=16)),
              Result(s, 'method', 'numeric_comparison'), paired(s, 1, 1)]),
        Part('sc-passkey-bumble-enters', [
            Controllers(2), pair_serve_bumble('--io', 'keyboard', '--passkey', '123456'),
            pair_ble(0, 'pair', 'BumblePair', '--io', 'display', '--passkey', '123456', '--mitm', '--json')],
             [Json(c, dict(event='passkey', passkey=123456)),
              Json(c, dict(event='paired', method='passkeyEntry', secure_connections=True, authenticated=True)),
              paired(s, 1, 1)]),
        Part('sc-passkey-ble-enters', [
            Controllers(2), pair_serve_bumble('--io', 'display', '--passkey', '123456'),
            pair_ble(0, 'pair', 'BumblePair', '--io', 'keyboard', '--passkey', '123456', '--mitm', '--json')],
             [Result(s, 'passkey', 123456),
              Json(c, dict(event='paired', method='passkeyEntry', secure_connections=True, authenticated=True)),
              paired(s, 1, 1)]),
        Part('legacy-just-works', [Controllers(2), pair_serve_bumble(),
                                   pair_ble(0, 'pair', 'BumblePair', '--legacy', '--json')],
             [Json(c, dict(event='paired', method='justWorks', secure_connections=False, authenticated=False)),
              paired(s, 0, 0)]),
        Part('legacy-passkey', [
            Controllers(2), pair_serve_bumble('--io', 'display', '--passkey', '123456'),
            pair_ble(0, 'pair', 'BumblePair', '--legacy', '--io', 'keyboard', '--passkey', '123456', '--mitm', '--json')],
             [Result(s, 'passkey', 123456),
              Json(c, dict(event='paired', method='passkeyEntry', secure_connections=False, authenticated=True)),
              paired(s, 0, 1)]),
        Part('wrong-passkey', [
            Controllers(2), pair_serve_bumble('--io', 'display', '--passkey', '123456'),
            pair_ble(3, 'pair', 'BumblePair', '--io', 'keyboard', '--passkey', '000000', '--mitm')],
             [Check(lambda ctx: ctx.lines('central.log.err') == [
                 'error: pairing with BumblePair failed: Confirm Value Failed (0x04)'],
                    lambda ctx: "$part: ble pair did not say 'error: pairing with BumblePair failed: Confirm Value "
                                f"Failed (0x04)' alone: {' '.join(ctx.lines('central.log.err')[:3])}"),
              Result(s, 'pairing_failed', '0x04')]),
        Part('bonded-reconnect', [
            Controllers(2), pair_serve_bumble('--keystore', '$logs/$name-bonds-bumble.json'),
            pair_ble(0, 'pair', 'BumblePair', '--bonds', bonds, '--json'),
            Json(c, dict(event='paired', bonded=True)),
            # The second link.
            pair_ble(0, 'pair', 'BumblePair', '--bonds', bonds, '--json', role=c2),
            Json(c2, dict(event='encrypted', bonded=True)),
            Count(c2, '"event":"paired"', '==', 0, '$part: ble pair paired again instead of using the bond'),
            pair_ble(0, 'read', 'BumblePair', SECRET, '--bonds', bonds, '--json', role=c2),
            Json('central2.log.out', dict(uuid=SECRET, value=TOP_SECRET)),
            Run(c2, [BLE, 'bonds', 'list', '--bonds', bonds, '--json'], timeout=10, label='$part: ble bonds list'),
            Grep(c2, 'D1:D2:D3:D4:D5:D6', '$part: ble bonds list does not list the Bumble peripheral'),
            Run(c2, [BLE, 'bonds', 'remove', 'D1:D2:D3:D4:D5:D6', '--bonds', bonds], timeout=10,
                label='$part: ble bonds remove'),
            Run(c2, [BLE, 'bonds', 'list', '--bonds', bonds, '--json'], timeout=10, out='central2.log.out',
                err='central2.log.err', label='$part: ble bonds list'),
            Grep('central2.log.out', 'D1:D2:D3:D4:D5:D6', '$part: the bond is still listed after ble bonds remove',
                 absent=True)],
             [Count(s, '^RESULT paired=1', '==', 1, '$part: the Bumble peripheral paired more than once (or never)'),
              Count(s, '^RESULT encrypted=1 paired_this_link=0$', '>=', 2,
                    '$part: the Bumble peripheral did not see two links encrypted with the bond alone')]),
        # Issue 23, item 4: a peripheral that advertises and connects from a static random address and distributes its
        # controller's public address as identity with an all-zero IRK (a device without privacy). The bond is found
        # under the address the link is made with: `ble read` encrypts with it and pairs nothing. Its own name: the parts
        # run at once on shared controllers, and a central looking for BumblePair may find another part's.
        Part('bonded-through-static-random', [
            Controllers(2), pair_serve_bumble('--name', 'SecureBand', '--address', 'E7:E6:E5:E4:E3:E2', '--identity-public',
                                              '--zero-irk', '--io', 'display', '--passkey', '123456',
                                              '--keystore', '$logs/$name-static-bonds-bumble.json'),
            pair_ble(0, 'pair', 'SecureBand', '--io', 'keyboard', '--passkey', '123456', '--mitm', '--bonds',
                     static_bonds, '--json'),
            Json(c, dict(event='paired', method='passkeyEntry', bonded=True)),
            Check(lambda ctx: any(f'"identity":"{i}"' in line for i in identities(ctx, s) for line in ctx.lines(c)),
                  '$part: ble pair did not report the public identity the peripheral distributed'),
            # The second link: a read that needs encryption.
            pair_ble(0, 'read', 'SecureBand', SECRET, '--bonds', static_bonds, '--json', role=c2),
            Json('central2.log.out', dict(uuid=SECRET, value=TOP_SECRET)),
            Json(c2, dict(event='encrypted', bonded=True, peer='E7:E6:E5:E4:E3:E2')),
            Count(c2, '"event":"paired"', '==', 0, '$part: ble read paired again instead of using the bond'),
            Run(c2, [BLE, 'bonds', 'list', '--bonds', static_bonds], timeout=10, out='central2.log.out', err='central2.log.err',
                label='$part: ble bonds list'),
            Grep('central2.log.out', r'^identity ([0-9A-F]{2}:){5}[0-9A-F]{2} \(public\), paired through '
                 r'E7:E6:E5:E4:E3:E2 \(random static\) bonded to ',
                 '$part: ble bonds list does not show the public identity and the static random address'),
            Grep('central2.log.out', r', IRK$', '$part: the all-zero IRK was stored as a key', absent=True)],
             [Count(s, '^RESULT paired=1', '==', 1, '$part: the Bumble peripheral paired more than once (or never)'),
              Count(s, '^RESULT encrypted=1 paired_this_link=0$', '>=', 1,
                    '$part: the Bumble peripheral did not see the second link encrypted with the bond alone')]),
    ], needs=('ble',), shared_controllers=True)


# -- ANCS (issue 25, item 7): `ble ancs` (our consumer) against a Bumble peripheral serving the Apple Notification
# Center Service with encryption required (peers/ancs_provider.py): it pairs when refused, prints the notifications
# the peer holds (pre-existing) and the one it posts later, with the titles, messages and app names the peer served,
# and performs the positive action on the incoming call, which the peer sees and answers with a removal.

def ancs_consumer_to_bumble_provider():
    out = 'central.log.out'
    return Scenario('ancs-consumer-to-bumble-provider', [Part('', [
        Controllers(2),
        Start('peripheral', peer('ancs_provider.py', '--run-for', '40'), bumble=True, ready=ADVERTISING,
              not_ready='the Bumble ANCS provider did not start advertising'),
        Run('central', ble('ancs', 'BPhone', '--count', '4', '--perform', 'positive', '--timeout', '20',
                           *ours_bonds(())), timeout=60, out=out, err='central.log.err', transcript=True,
            label='ble ancs')], [
        Grep(out, r'^paired with D7:D6:D5:D4:D3:D2.*bonded$', 'ble ancs did not pair (bonded) with the provider'),
        Grep(out, 'added 101 social [pre-existing|negative-action] Chat: Bumble says hi: Hello from the Bumble ANCS '
                  'provider [Dismiss]', 'ble ancs did not print notification 101 as the peer served it',
             whole=True, fixed=True),
        Grep(out, 'added 102 incoming call [important|pre-existing|positive-action|negative-action] Phone: Bumble '
                  'Caller: Incoming call [Accept / Reject]', 'ble ancs did not print the incoming call 102',
             whole=True, fixed=True),
        Grep(out, 'performed the positive action (Accept) on 102', 'ble ancs did not perform the action',
             whole=True, fixed=True),
        Grep(out, 'removed 102 incoming call [important|positive-action|negative-action]',
             'ble ancs did not print the removal of 102', whole=True, fixed=True),
        Grep(out, 'added 103 social [negative-action] Chat: Interop report (RootCanal, Bumble, ble): All green '
                  '[Dismiss]', 'ble ancs did not print the notification posted later (103)', whole=True, fixed=True),
        Result('peripheral', 'subscribed', 'data_source'),
        Result('peripheral', 'subscribed', 'notification_source'),
        Result('peripheral', 'action', 'positive uid=102'),
        Count('peripheral', '^RESULT paired=1 ', '==', 1, 'the provider did not pair exactly once'),
        Count('peripheral', '^RESULT refused=', '==', 0, 'the provider refused a command of ble ancs'),
        # Two notifications of Chat (101, 103): its display name is asked once (cached).
        Count('peripheral', '^RESULT get_app_attributes=com.example.chat$', '==', 1,
              "ble ancs asked the Chat app's name more than once (or never)"),
    ])], needs=('ble',))


def identities(ctx, role):
    """The identity addresses a pairing_peer.py with --identity-public said it distributes."""
    return [line.split('=', 1)[1] for line in ctx.lines(role) if line.startswith('RESULT identity=')]
