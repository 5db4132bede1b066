// swift-tools-version: 6.1
// The libFuzzer targets of swift-ble: a package of its own, so that the main package's build and tests are untouched.
// Build and run them with `scripts/fuzz` (it passes `-sanitize=fuzzer,address`); see README.md.
import PackageDescription

let strict: [SwiftSetting] = [
    .swiftLanguageMode(.v6),
    .enableUpcomingFeature("ExistentialAny"),
]
// libFuzzer supplies the input loop; each target's file only defines its entry point, so it is parsed as a library.
let entry: [SwiftSetting] = strict + [.unsafeFlags(["-parse-as-library"])]

/// One executable per fuzz target, all in Sources/<name>/<name>.swift.
let targets: [(name: String, dependencies: [Target.Dependency])] = [
    ("FuzzH4Deframer", [.product(name: "BLETransport", package: "swift-ble")]),
    ("FuzzHCIEvent", []),
    ("FuzzACLReassembly", [.product(name: "BLEProtocols", package: "swift-ble")]),
    ("FuzzL2CAPSignaling", [.product(name: "BLEProtocols", package: "swift-ble")]),
    ("FuzzATTPDU", []),
    ("FuzzATTServer", [.product(name: "BLEProtocols", package: "swift-ble"), .product(name: "BLEHost", package: "swift-ble")]),
    ("FuzzGATTClient", [.product(name: "BLEProtocols", package: "swift-ble"), .product(name: "BLEHost", package: "swift-ble")]),
    ("FuzzSMPPDU", []),
    ("FuzzSMPPairing", [.product(name: "BLEProtocols", package: "swift-ble")]),
    ("FuzzAdvertisingData", []),
]

let package = Package(
    name: "swift-ble-fuzz",
    platforms: [.macOS(.v15)],
    dependencies: [.package(name: "swift-ble", path: "..")],
    targets: [
        .target(name: "CFuzz"),
        .target(name: "FuzzKit", dependencies: ["CFuzz"], swiftSettings: strict),
    ] + targets.map { target in
        .executableTarget(
            name: target.name,
            dependencies: ["FuzzKit", .product(name: "BLEWire", package: "swift-ble")] + target.dependencies,
            swiftSettings: entry)
    }
)
