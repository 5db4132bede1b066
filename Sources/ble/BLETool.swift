import ArgumentParser

/// The `ble` command-line tool.
@main
struct BLETool: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "ble",
        abstract: "A Bluetooth Low Energy toolkit: virtual controllers, scanning, GATT, beacons.",
        discussion: """
            --json prints one JSON object per line with JSON's own types: numbers as numbers ("rssi":-42, \
            "mtu":247, "handle":12), booleans as booleans ("connectable":true), lists as arrays \
            ("services":["180D","180F"]), strings only for text and hex values.

            A runtime error prints 'error: <message>' on standard error (no usage text). Exit status:
              0    success
              1    any other failure (no controller, the link dropped...)
              2    not found or timed out (no such device or characteristic)
              3    protocol error from the peer or controller (ATT, GATT, HCI)
              64   command-line mistake (EX_USAGE; with the usage text)
              130  interrupted by SIGINT (143: SIGTERM), after disconnecting
            """,
        subcommands: [Demo.self, HCIDemo.self, BeaconCommand.self, RangeCommand.self, Scan.self, Explore.self, Read.self, Write.self, Subscribe.self, ANCSCommandLine.self, Pair.self, Bonds.self, Serve.self, L2CAPCommand.self, BenchCommand.self, ControllerCommand.self, GatewayCommand.self, ProxyCommand.self, WebCommand.self, Info.self])
}
