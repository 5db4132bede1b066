import BLE
import Foundation
import MQTTTestSupport
import Testing

/// `ble controller --advertisers N`: N host-less iBeacon advertisers on the air, heard by a central on one of the
/// controller's ports, each with its own address and its number as the minor.
@Suite(.timeLimit(.minutes(1))) struct ControllerAdvertisersTests {
    @Test func theAdvertisersAreHeardEachWithItsNumber() async throws {
        let port = try Mosquitto.freePort()
        let controller = try DemoProcess("ble", arguments: ["controller", "--tcp", "127.0.0.1:\(port)", "--advertisers", "5",
                                                            "--advertiser-interval", "50"], hci: nil)
        #expect(await controller.waitFor { $0.hasPrefix("READY") } == "READY \(port)")
        let central = try await Central.open(try HCITransportSpec(parsing: "tcp:127.0.0.1:\(port)"))
        var minors: [String: Int] = [:]
        for try await device in try await central.scan(timeout: .seconds(5)) where device.address.address.description.hasPrefix("00:5C:00:00:") {
            #expect(!device.isConnectable)
            // Apple's iBeacon: 02 15, the UUID, major, minor, measured power.
            let beacon = try #require(device.manufacturerData.first { $0.companyID.rawValue == 0x004C }?.data)
            #expect(beacon.count == 23 && Array(beacon.prefix(2)) == [0x02, 0x15])
            #expect(Array(beacon[2..<18]) == (BluetoothUUID("E2C56DB5-DFFB-48D2-B060-D0F5A71096E0") ?? 0).bigEndianBytes)
            minors[device.address.address.description] = Int(beacon[20]) << 8 | Int(beacon[21])
            if minors.count == 5 { break }
        }
        #expect(minors == ["00:5C:00:00:00:01": 0, "00:5C:00:00:00:02": 1, "00:5C:00:00:00:03": 2, "00:5C:00:00:00:04": 3,
                           "00:5C:00:00:00:05": 4])
        await central.powerOff()
        _ = await controller.finish(timeout: .milliseconds(100))
    }
}
