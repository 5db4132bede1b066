// swift-tools-version: 6.1
import PackageDescription

let strict: [SwiftSetting] = [
    .swiftLanguageMode(.v6),
    .enableUpcomingFeature("ExistentialAny"),
]

// `import CoreBluetooth` on Linux: a module of that name re-exports CoreBluetoothCompat and Foundation (as Apple's
// framework re-exports Foundation), so iOS Bluetooth code builds unchanged. Only on Linux: where Apple's framework
// exists, the package declares no module of that name, so it can never shadow it (there `import CoreBluetooth` is
// Apple's, and swift-ble's implementation stays reachable as `import CoreBluetoothCompat`).
#if os(Linux)
let coreBluetooth: Target.Dependency = "CoreBluetooth"
let coreBluetoothOnLinux: [Target.Dependency] = ["CoreBluetooth"]
#else
let coreBluetooth: Target.Dependency = "CoreBluetoothCompat"
let coreBluetoothOnLinux: [Target.Dependency] = []
#endif

let package = Package(
    name: "swift-ble",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "BLEWire", targets: ["BLEWire"]),
        .library(name: "BLEProtocols", targets: ["BLEProtocols"]),
        .library(name: "BLETransport", targets: ["BLETransport"]),
        .library(name: "BLEHost", targets: ["BLEHost"]),
        .library(name: "BLE", targets: ["BLE"]),
        .library(name: "BLEFiles", targets: ["BLEFiles"]),
        .library(name: "BLEBeacons", targets: ["BLEBeacons"]),
        .library(name: "BLEProfiles", targets: ["BLEProfiles"]),
        .library(name: "BLEVirtualController", targets: ["BLEVirtualController"]),
        .library(name: "CoreBluetoothCompat", targets: ["CoreBluetoothCompat"]),
        .library(name: "MQTT", targets: ["MQTT"]),
        .library(name: "BLEGateway", targets: ["BLEGateway"]),
        .library(name: "ESPHomeAPI", targets: ["ESPHomeAPI"]),
        .library(name: "BLEWeb", targets: ["BLEWeb"]),
        .executable(name: "ble", targets: ["ble"]),
    ],
    // TLS for MQTT brokers (`mqtts://`, `ble gateway --tls`) is a trait, off by default, so that the first
    // `swift run ble demo` does not compile BoringSSL (swift-nio-ssl): `swift build --traits TLS` turns it on, and
    // `scripts/test` builds and tests with it.
    traits: [
        .trait(name: "TLS", description: "MQTT over TLS (swift-nio-ssl): mqtts:// brokers and `ble gateway --tls`."),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
        .package(url: "https://github.com/apple/swift-log", from: "1.6.0"),
        .package(url: "https://github.com/apple/swift-crypto", from: "4.0.0"),
        // The MQTT product's connections (TCP and TLS); nothing else uses them.
        .package(url: "https://github.com/apple/swift-nio", from: "2.80.0"),
        .package(url: "https://github.com/apple/swift-nio-ssl", from: "2.30.0"),
    ],
    targets: [
        // The one error shape, BLEFailure<Code> with open codes and categories: written once for every module
        // (BLEWire re-exports it; MQTT and ESPHomeAPI, which know nothing of Bluetooth, use it too).
        .target(name: "BLEErrors", swiftSettings: strict),
        // Value types and codecs: no I/O, no clocks, no randomness.
        .target(name: "BLEWire", dependencies: ["BLEErrors"], swiftSettings: strict),
        // Sans-I/O state machines: HCI command flow, ACL flow, L2CAP, ATT, GATT. No I/O, clocks or randomness.
        .target(
            name: "BLEProtocols",
            dependencies: [
                "BLEWire",
                // P-256, AES-128 and AES-CMAC for the Security Manager's toolbox.
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "CryptoExtras", package: "swift-crypto"),
            ],
            swiftSettings: strict),
        // HCI transports: H4 framing, in-process pipe, TCP, UART, Linux HCI user channel, btsnoop.
        .target(
            name: "BLETransport",
            dependencies: ["BLEWire", .product(name: "Logging", package: "swift-log")],
            swiftSettings: strict),
        // Simulated controllers on a shared simulated air, speaking real HCI bytes.
        .target(
            name: "BLEVirtualController",
            dependencies: ["BLEWire", "BLETransport", .product(name: "Logging", package: "swift-log")],
            swiftSettings: strict),
        // An MQTT 3.1.1 client for gateways: the codec and the session as a machine without I/O, driven over TCP or
        // TLS by SwiftNIO. A product of its own, so users of the Bluetooth modules never build it.
        .target(
            name: "MQTT",
            dependencies: [
                "BLEErrors",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl", condition: .when(traits: ["TLS"])),
            ],
            swiftSettings: strict),
        // The ESPHome native API, server side (Home Assistant's Bluetooth proxies): protobuf messages, plaintext and
        // Noise framing, the connection as a machine without I/O, and a SwiftNIO server. Knows nothing of Bluetooth.
        .target(
            name: "ESPHomeAPI",
            dependencies: [
                "BLEErrors",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            swiftSettings: strict),
        // `ble web`'s HTTP and WebSocket server (SwiftNIO): the page (HTML, CSS and JavaScript as resources), the token
        // and Origin checks, the page's requests decoded and checked, and updates coalesced. Knows nothing of Bluetooth.
        .target(
            name: "BLEWeb",
            dependencies: [
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOWebSocket", package: "swift-nio"),
            ],
            resources: [.copy("Page")],
            swiftSettings: strict),
        // The Host actor: runs the state machines over a transport; owns all host-side I/O and tasks.
        .target(
            name: "BLEHost",
            dependencies: ["BLEWire", "BLEProtocols", "BLETransport", .product(name: "Logging", package: "swift-log")],
            swiftSettings: strict),
        // The public async API: Central, RemotePeripheral, PeripheralManager.
        .target(
            name: "BLE",
            dependencies: ["BLEWire", "BLEProtocols", "BLETransport", "BLEHost", "BLEVirtualController"],
            swiftSettings: strict),
        // Beacons: iBeacon, AltBeacon and Eddystone frames, advertising them, ranging and region monitoring.
        // Files and JSON above the Bluetooth API: the JSON value type and reader, GATT device files and the devices
        // they describe, btsnoop captures read back into devices, and the log entries of the sample and simulated
        // devices. The CLI, the gateway and the profiles use it; `import BLE` stays the Bluetooth API.
        .target(
            name: "BLEFiles",
            dependencies: ["BLE", "BLEHost", "BLEProtocols", "BLETransport", "BLEWire"],
            swiftSettings: strict),
        .target(name: "BLEBeacons", dependencies: ["BLEWire", "BLE"], swiftSettings: strict),
        // Device data: typed SIG services and vendor devices (client and simulated server sides), framing, byte helpers.
        .target(
            name: "BLEProfiles",
            dependencies: ["BLE", "BLEFiles", "BLEHost", "BLEProtocols", "BLEWire"],
            swiftSettings: strict),
        // Gateways: what a radio hears published to an MQTT broker (device records, room presence, Home Assistant
        // discovery, GATT requests over the broker).
        .target(name: "BLEGateway", dependencies: ["BLE", "BLEFiles", "BLEBeacons", "BLEProfiles", "MQTT"], swiftSettings: strict),
        // CoreBluetooth's delegate API (names, types, semantics) over the BLE module's async API.
        .target(
            name: "CoreBluetoothCompat",
            dependencies: ["BLE", "BLEHost", "BLEProfiles", "BLEProtocols", "BLETransport", "BLEWire"],
            swiftSettings: strict),
        .executableTarget(
            name: "ble",
            dependencies: [
                "BLEWire", "BLETransport", "BLEVirtualController", "BLEProtocols", "BLEHost", "BLE", "BLEFiles", "BLEBeacons", "BLEProfiles",
                "BLEGateway", "MQTT", "ESPHomeAPI", "BLEWeb",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strict),
        // The classic CoreBluetooth demo apps, written as the tutorials write them (Swift 6 without ExistentialAny,
        // as iOS code is); `swift run band-demo` & co. run them on the embedded simulated world.
        .executableTarget(name: "band-demo", dependencies: [coreBluetooth], path: "Examples/band-demo",
                          swiftSettings: [.swiftLanguageMode(.v6)]),
        .executableTarget(name: "piano-demo", dependencies: [coreBluetooth], path: "Examples/piano-demo",
                          swiftSettings: [.swiftLanguageMode(.v6)]),
        .executableTarget(name: "scale-demo", dependencies: [coreBluetooth, "BLEProfiles"], path: "Examples/scale-demo",
                          swiftSettings: [.swiftLanguageMode(.v6)]),
        .executableTarget(name: "battery-demo", dependencies: [coreBluetooth], path: "Examples/battery-demo",
                          swiftSettings: [.swiftLanguageMode(.v6)]),
        .executableTarget(name: "transfer-demo", dependencies: [coreBluetooth], path: "Examples/transfer-demo",
                          swiftSettings: [.swiftLanguageMode(.v6)]),
        .executableTarget(name: "chat-demo", dependencies: [coreBluetooth], path: "Examples/chat-demo",
                          swiftSettings: [.swiftLanguageMode(.v6)]),
        // HeartRateKit: an iOS-style heart-rate manager (a CBCentralManagerDelegate with a state machine and
        // reconnection), a library so that its tests (HeartRateKitTests, on simulated monitors) import it.
        .target(name: "HeartRateKit", dependencies: [coreBluetooth], path: "Examples/HeartRateKit",
                swiftSettings: [.swiftLanguageMode(.v6)]),
        // A program with only `import BLE` that scans, connects, serves and pairs (run by ExamplesTests).
        .executableTarget(name: "only-import-ble", dependencies: ["BLE"], path: "Examples/only-import-ble", swiftSettings: strict),
        // Benchmarks: `swift run -c release ble-bench` (figures are never asserted in tests).
        .executableTarget(
            name: "BLEBenchmarks",
            dependencies: ["BLEWire", "BLETransport", "BLEVirtualController", "BLEProtocols", "BLEHost", "BLE", "BLEGateway",
                           "ESPHomeAPI", "MQTT"],
            path: "Sources/BLEBenchmarks",
            swiftSettings: strict),
        // The Swift central of the interop scenarios (Tests/Interop/run.sh), through the public API only.
        .executableTarget(
            name: "interop-central",
            dependencies: ["BLE", "BLEHost", "BLEProtocols", "BLETransport", "BLEWire"],
            path: "Tests/Interop/SwiftCentral",
            swiftSettings: strict),
        // The fuzz targets of Fuzz/ (whose own package runs them under libFuzzer), compiled here for FuzzReplayTests.
        .target(
            name: "BLEFuzzHarness",
            dependencies: ["BLEWire", "BLETransport", "BLEProtocols", "BLEHost", "BLE", "MQTT", "ESPHomeAPI"],
            path: "Fuzz/Targets",
            swiftSettings: strict),
        // Helpers shared by the test targets (vectors, time limits), at the wire level so that no test target links
        // more than it tests; it imports Testing for `#expect` and `Issue.record`, and only test targets depend on it.
        .target(name: "BLETestSupport", dependencies: ["BLEWire"], path: "Tests/BLETestSupport", swiftSettings: strict),
        // Helpers for the protocol machines' tests: the ATTServer machine and scripted servers behind a synchronous
        // transport, for the GATT client procedures (BLEProtocolsTests, BLEHostTests).
        .target(
            name: "BLEProtocolsTestSupport", dependencies: ["BLEProtocols", "BLEWire"], path: "Tests/BLEProtocolsTestSupport",
            swiftSettings: strict),
        // The shared fixtures of the end-to-end tests: two devices on the public API (TwoDevices), hosts on one air
        // (World).
        .target(
            name: "BLEFixtures",
            dependencies: ["BLE", "BLEHost", "BLETestSupport", "BLETransport", "BLEVirtualController", "BLEWire"],
            path: "Tests/BLEFixtures", swiftSettings: strict),
        .testTarget(name: "FuzzReplayTests", dependencies: ["BLEFuzzHarness"], swiftSettings: strict),
        // A Mosquitto of a test's own (the MQTT client's tests and the gateway's).
        .target(name: "MQTTTestSupport", dependencies: ["MQTT"], path: "Tests/MQTTTestSupport", swiftSettings: strict),
        .testTarget(
            name: "ESPHomeAPITests",
            dependencies: ["ESPHomeAPI", .product(name: "NIOCore", package: "swift-nio"), .product(name: "NIOPosix", package: "swift-nio")],
            swiftSettings: strict),
        .testTarget(
            name: "BLEWebTests",
            dependencies: ["BLEWeb", .product(name: "NIOCore", package: "swift-nio"), .product(name: "NIOPosix", package: "swift-nio")],
            swiftSettings: strict),
        .testTarget(name: "MQTTTests", dependencies: ["MQTT", "MQTTTestSupport"], swiftSettings: strict),
        .testTarget(name: "BLEGatewayTests",
                    dependencies: ["BLEGateway", "BLE", "BLEFiles", "BLEBeacons", "BLEProfiles", "BLEHost", "BLEVirtualController", "MQTT", "MQTTTestSupport"],
                    swiftSettings: strict),
        .testTarget(name: "BLEWireTests", dependencies: ["BLEWire", "BLETestSupport"], swiftSettings: strict),
        .testTarget(name: "BLEProtocolsTests", dependencies: ["BLEProtocols", "BLEWire", "BLEProtocolsTestSupport"], swiftSettings: strict),
        .testTarget(name: "BLETransportTests", dependencies: ["BLETransport", "BLEWire", "BLETestSupport"], swiftSettings: strict),
        .testTarget(
            name: "BLEFilesTests",
            dependencies: ["BLEFiles", "BLE", "BLEHost", "BLEProtocols", "BLETransport", "BLEVirtualController", "BLEWire", "BLETestSupport"],
            swiftSettings: strict),
        .testTarget(
            name: "BLETests",
            // The lower modules are listed because the tests import them by name (BLE does not re-export them).
            dependencies: ["BLE", "BLEFiles", "BLEFixtures", "BLEHost", "BLEProtocols", "BLETransport", "BLEVirtualController", "BLEWire",
                           "BLETestSupport"],
            swiftSettings: strict),
        .testTarget(
            name: "BLEBeaconsTests",
            dependencies: ["BLEBeacons", "BLE", "BLEHost", "BLEProtocols", "BLETransport", "BLEVirtualController", "BLEWire",
                           "BLETestSupport"],
            swiftSettings: strict),
        .testTarget(
            name: "BLEProfilesTests",
            dependencies: ["BLEProfiles", "BLE", "BLEFiles", "BLEHost", "BLEProtocols", "BLETransport", "BLEVirtualController", "BLEWire",
                           "BLETestSupport"],
            swiftSettings: strict),
        .testTarget(
            name: "ExamplesTests",
            // The demo executables and the ble tool are dependencies so that they are built before the tests run them.
            dependencies: ["band-demo", "piano-demo", "scale-demo", "battery-demo", "transfer-demo", "chat-demo", "only-import-ble", "ble",
                           "MQTT", "MQTTTestSupport", "BLEProfiles", "BLE", "BLEFiles", "BLEHost", "BLEProtocols", "BLETransport", "BLEVirtualController", "BLEWire"],
            swiftSettings: strict),
        .testTarget(
            name: "CoreBluetoothCompatTests",
            // The CoreBluetooth module (Linux) is built before the tests, which type-check Apple's API against it.
            dependencies: ["CoreBluetoothCompat", "BLE", "BLEHost", "BLEProtocols", "BLETransport", "BLEVirtualController", "BLEWire"]
                + coreBluetoothOnLinux,
            // Swift 6, without ExistentialAny: the tutorial-style central is written as iOS code is (`Error?`).
            swiftSettings: [.swiftLanguageMode(.v6)]),
        .testTarget(
            name: "BLEHostTests",
            dependencies: ["BLE", "BLEFixtures", "BLEHost", "BLEProtocols", "BLEVirtualController", "BLETransport", "BLEWire", "BLETestSupport",
                           "BLEProtocolsTestSupport"],
            swiftSettings: strict),
        .testTarget(
            name: "BLEVirtualControllerTests",
            dependencies: ["BLEVirtualController", "BLETransport", "BLEWire"],
            swiftSettings: strict),
    ]
)

#if os(Linux)
package.products.append(.library(name: "CoreBluetooth", targets: ["CoreBluetooth"]))
package.targets.append(.target(name: "CoreBluetooth", dependencies: ["CoreBluetoothCompat"], swiftSettings: strict))
// HeartRateKit's manager on a simulated chest strap (`swift run heart-rate-demo`), and its tests: both drive it with
// SimulatedWorld, which `import CoreBluetooth` gives on Linux only (on Apple's platforms the manager builds against
// Apple's framework).
package.targets.append(.executableTarget(name: "heart-rate-demo", dependencies: ["HeartRateKit", "CoreBluetooth"],
                                         path: "Examples/heart-rate-demo", swiftSettings: [.swiftLanguageMode(.v6)]))
package.targets.append(.testTarget(name: "HeartRateKitTests", dependencies: ["HeartRateKit", "CoreBluetooth"],
                                   swiftSettings: [.swiftLanguageMode(.v6)]))
// ExamplesTests runs the demo (HeartRateDemoTests): built before the tests.
if let examples = package.targets.first(where: { $0.name == "ExamplesTests" }) {
    examples.dependencies.append("heart-rate-demo")
}
#endif
