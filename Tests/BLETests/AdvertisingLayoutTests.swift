import BLE
import BLEWire
import Testing

/// The one advertising-layout rule (`Advertisement.layout`), which PeripheralManager and CBPeripheralManager use;
/// CoreBluetoothCompatTests checks the iOS-like cases through `CBPeripheralManager.advertisingLayout`.
@Suite struct AdvertisingLayoutTests {
    func hex(_ layout: (data: AdvertisingData, scanResponse: AdvertisingData)) -> (String, String) {
        (layout.data.encoded.hexString(), layout.scanResponse.encoded.hexString())
    }

    @Test func everythingThatFitsStaysInThePacketInTheOrderPeripheralManagerAlwaysUsed() {
        let maker = ManufacturerData(companyID: .testing, data: [1, 2])
        let layout = AdvertisingData.layout(name: "Lab", serviceUUIDs: [0x180F], txPowerLevel: -4, manufacturerData: maker)
        // Flags, UUIDs, TX power, manufacturer data (as AdvertisingData's initializer orders them), then the name.
        var expected = AdvertisingData(flags: .leOnlyGeneralDiscoverable, serviceUUIDs: [0x180F], txPowerLevel: -4,
                                       manufacturerData: maker)
        expected.structures.append(ADStructure(type: .completeLocalName, data: Array("Lab".utf8)))
        #expect(layout.data == expected)
        #expect(layout.scanResponse.structures.isEmpty)
    }

    @Test func aNameThatDoesNotFitGoesWholeToTheScanResponse() {
        let maker = ManufacturerData(companyID: .testing, data: Array(repeating: 7, count: 16))
        let layout = AdvertisingData.layout(name: "A UART with a long name", serviceUUIDs: [0x180D], manufacturerData: maker)
        #expect(layout.data == AdvertisingData(flags: .leOnlyGeneralDiscoverable, serviceUUIDs: [0x180D], manufacturerData: maker))
        #expect(layout.scanResponse == AdvertisingData(localName: "A UART with a long name"))
    }

    @Test func thirtyTwoBitUUIDsAreListedAsSuch() {
        let (data, response) = hex(AdvertisingData.layout(name: nil, serviceUUIDs: [BluetoothUUID(uint32: 0x1234_5678)]))
        #expect(data == "020106" + "050578563412")
        #expect(response == "")
    }

    @Test func uuidsOverflowAroundWhatMustStayInThePacket() {
        let first = BluetoothUUID("E20A39F4-73F5-4BC4-A12F-17D1AD07A961") ?? 0
        let second = BluetoothUUID("08590F7E-DB05-467E-8757-72F6FAEB13D4") ?? 0
        let layout = AdvertisingData.layout(name: "Overflowing name", serviceUUIDs: [first, second], txPowerLevel: 0)
        // Flags (3) + one incomplete 128-bit list (18) + TX power (3) = 24 bytes: the second UUID and the name go to
        // the scan response, the name shortened to what is left of its 31 bytes.
        #expect(layout.data.structures.map(\.type) == [.flags, .incomplete128BitServiceUUIDs, .txPowerLevel])
        #expect(layout.scanResponse.structures.map(\.type) == [.incomplete128BitServiceUUIDs, .shortenedLocalName])
        #expect(layout.scanResponse.localName == "Overflowing")
        #expect(layout.data.encoded.count <= 31 && layout.scanResponse.encoded.count <= 31)
    }
}
