// swift-tools-version: 6.1
// The libFuzzer targets of swift-ble: a package of its own, so that the main package's build and tests are untouched.
// Build and run them with `scripts/fuzz` (it passes `-sanitize=fuzzer,address`); see Fuzz/README.md and docs/tests.md.
import PackageDescription

let strict: [SwiftSetting] = [
    .swiftLanguageMode(.v6),
    .enableUpcomingFeature("ExistentialAny"),
]
// libFuzzer supplies the input loop; each target's file only defines its entry point, so it is parsed as a library.
let entry: [SwiftSetting] = strict + [.unsafeFlags(["-parse-as-library"])]

/// One libFuzzer executable per fuzz target, all in Sources/<name>/<name>.swift; the targets' code is in Targets/.
let targets = ["FuzzH4Deframer", "FuzzHCIEvent", "FuzzACLReassembly", "FuzzL2CAPSignaling", "FuzzATTPDU", "FuzzATTServer",
               "FuzzGATTClient", "FuzzSMPPDU", "FuzzSMPPairing", "FuzzAdvertisingData", "FuzzMQTTPacket",
               "FuzzESPHomeAPI"]

let package = Package(
    name: "swift-ble-fuzz",
    platforms: [.macOS(.v15)],
    dependencies: [.package(name: "swift-ble", path: "..")],
    targets: [
        .target(name: "CFuzz"),
        // The targets themselves, shared with the main package (its BLEFuzzHarness module replays them in `swift test`).
        .target(
            name: "FuzzHarness",
            dependencies: [
                .product(name: "BLEWire", package: "swift-ble"), .product(name: "BLETransport", package: "swift-ble"),
                .product(name: "BLEProtocols", package: "swift-ble"), .product(name: "BLEHost", package: "swift-ble"),
                .product(name: "BLE", package: "swift-ble"),
                .product(name: "MQTT", package: "swift-ble"), .product(name: "ESPHomeAPI", package: "swift-ble"),
            ],
            path: "Targets",
            swiftSettings: strict),
        .target(name: "FuzzKit", dependencies: ["CFuzz", "FuzzHarness"], swiftSettings: strict),
    ] + targets.map { name in
        .executableTarget(name: name, dependencies: ["FuzzKit"], swiftSettings: entry)
    }
)
