import BLE
@testable import CoreBluetoothCompat
import Foundation
import Testing

/// In the serialized central suite: it changes the process's environment and the configured controller.
extension TutorialCentralTests {
    @Test("The controller comes from setController, else SWIFT_BLE_HCI, else the embedded world")
    func controllerChoice() throws {
        // Nothing else in the test process reads SWIFT_BLE_HCI, and this suite runs its tests one at a time.
        let original = ProcessInfo.processInfo.environment["SWIFT_BLE_HCI"]
        defer {
            if let original { setenv("SWIFT_BLE_HCI", original, 1) } else { unsetenv("SWIFT_BLE_HCI") }
        }
        unsetenv("SWIFT_BLE_HCI")
        #expect(try CBCentralManager.controller().get() == .virtual)
        setenv("SWIFT_BLE_HCI", "tcp:127.0.0.1:9100", 1)
        #expect(try CBCentralManager.controller().get() == .tcp(host: "127.0.0.1", port: 9100))
        try CBCentralManager.setController("hci1")
        #expect(try CBCentralManager.controller().get() == .userChannel(index: 1))
        CBCentralManager.setController(nil)
        setenv("SWIFT_BLE_HCI", "nonsense", 1)
        #expect(throws: TransportError.self) { try CBCentralManager.controller().get() }
    }
}
