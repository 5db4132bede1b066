import BLE
@testable import CoreBluetoothCompat
import Foundation
import Testing

/// The rule that picks a new manager's controller, on given inputs: the process's environment and the configured
/// controller are read by every manager any test creates meanwhile, so this test changes neither.
@Suite struct ControllerChoiceTests {
    @Test("The controller comes from setController, else SWIFT_BLE_HCI, else the embedded world")
    func controllerChoice() throws {
        #expect(try CBCentralManager.controller(configured: nil, environment: [:]).get() == .virtual)
        #expect(try CBCentralManager.controller(configured: nil, environment: ["SWIFT_BLE_HCI": ""]).get() == .virtual)
        #expect(try CBCentralManager.controller(configured: nil, environment: ["SWIFT_BLE_HCI": "tcp:127.0.0.1:9100"]).get()
                == .tcp(host: "127.0.0.1", port: 9100))
        #expect(try CBCentralManager.controller(configured: .userChannel(index: 1),
                                                environment: ["SWIFT_BLE_HCI": "tcp:127.0.0.1:9100"]).get() == .userChannel(index: 1))
        #expect(throws: TransportError.self) {
            try CBCentralManager.controller(configured: nil, environment: ["SWIFT_BLE_HCI": "nonsense"]).get()
        }
        #expect(try HCITransportSpec(parsing: "hci1") == .userChannel(index: 1), "setController(String) parses as --hci does")
    }

    @Test("A controller that cannot be opened makes the state unsupported, and connecting fails")
    func unavailableController() async throws {
        #expect(throws: (any Error).self) { try CBCentralManager.setController("bogus") }
        let queue = DispatchQueue(label: "unavailable")
        let (stream, continuation) = AsyncStream.makeStream(of: String.self)
        // The controller is chosen when the manager is created; only for this test's managers (setController would
        // change it for every test running meanwhile).
        let scanner = CBCentralManager.$controllerInThisTask.withValue(.tcp(host: "127.0.0.1", port: 1)) {
            DuplicateScanner(queue: queue, log: continuation)
        }
        var lines: [String] = []
        for await line in stream { lines.append(line) }
        #expect(lines == ["state 2 main queue false", "failed to connect 3 state 0"])
        #expect(queue.sync { scanner.centralManager.state } == .unsupported)
    }
}
