import ArgumentParser

/// The `ble` command-line tool.
@main
struct BLETool: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "ble",
        abstract: "A Bluetooth Low Energy toolkit: virtual controllers, scanning, GATT, beacons.",
        subcommands: [Demo.self, HCIDemo.self, BeaconCommand.self, RangeCommand.self, Scan.self, Explore.self, Read.self, Write.self, Subscribe.self, Serve.self, ControllerCommand.self])
}
