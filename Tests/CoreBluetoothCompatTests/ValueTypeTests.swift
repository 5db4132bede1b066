import BLE
@testable import CoreBluetoothCompat
import Foundation
import Testing

@Suite("CoreBluetoothCompat value types")
struct ValueTypeTests {
    @Test("CBUUID prints 16-bit UUIDs as 4 uppercase hex digits and 128-bit ones as the uppercase UUID string")
    func uuidStrings() {
        #expect(CBUUID(string: "180f").uuidString == "180F")
        #expect(CBUUID(string: "2A37").uuidString == "2A37")
        #expect(CBUUID(string: "0x2a19").uuidString == "2A19")
        #expect(CBUUID(string: "12345678").uuidString == "12345678")
        #expect(CBUUID(string: "12345678-1234-5678-1234-56789abcdef0").uuidString == "12345678-1234-5678-1234-56789ABCDEF0")
        // The full form of a 16-bit UUID prints short, as CoreBluetooth prints it.
        #expect(CBUUID(string: "0000180F-0000-1000-8000-00805F9B34FB").uuidString == "180F")
        #expect(CBUUID(string: "180F").description == "180F")
    }

    @Test("A 16-bit CBUUID equals and hashes as its full Bluetooth-base form")
    func uuidEquality() {
        let short = CBUUID(string: "180F")
        let long = CBUUID(string: "0000180F-0000-1000-8000-00805F9B34FB")
        #expect(short == long)
        #expect(short.isEqual(long))
        #expect(short.hash == long.hash)
        #expect(Set([short, long]).count == 1)
        #expect(CBUUID(string: "180F") != CBUUID(string: "180D"))
        #expect(!short.isEqual("180F"))
        let dictionary: [CBUUID: Int] = [short: 1]
        #expect(dictionary[long] == 1)
    }

    @Test("CBUUID from Data and UUID, and its data most significant byte first")
    func uuidData() {
        #expect(CBUUID(data: Data([0x18, 0x0F])) == CBUUID(string: "180F"))
        #expect(CBUUID(string: "180F").data == Data([0x18, 0x0F]))
        #expect(CBUUID(string: "12345678").data == Data([0x12, 0x34, 0x56, 0x78]))
        #expect(CBUUID(data: Data([0x12, 0x34, 0x56, 0x78])).uuidString == "12345678")
        let custom = CBUUID(string: "12345678-1234-5678-1234-56789ABCDEF0")
        #expect(custom.data.count == 16)
        #expect(custom.data.first == 0x12 && custom.data.last == 0xF0)
        #expect(CBUUID(data: custom.data) == custom)
        let foundation = UUID(uuidString: "12345678-1234-5678-1234-56789ABCDEF0")
        #expect(foundation.map { CBUUID(nsuuid: $0) } == custom)
        #expect(CBUUID(validating: "not a uuid") == nil)
        #expect(CBUUID(validating: "180F") == CBUUID(string: "180F"))
        #expect(CBUUID(string: CBUUIDClientCharacteristicConfigurationString).bluetoothUUID == .clientCharacteristicConfiguration)
    }

    @Test("States, properties, write types and permissions have CoreBluetooth's raw values")
    func rawValues() {
        #expect([CBManagerState.unknown, .resetting, .unsupported, .unauthorized, .poweredOff, .poweredOn].map(\.rawValue) == [0, 1, 2, 3, 4, 5])
        #expect([CBPeripheralState.disconnected, .connecting, .connected, .disconnecting].map(\.rawValue) == [0, 1, 2, 3])
        let properties: [CBCharacteristicProperties] = [.broadcast, .read, .writeWithoutResponse, .write, .notify, .indicate,
                                                        .authenticatedSignedWrites, .extendedProperties,
                                                        .notifyEncryptionRequired, .indicateEncryptionRequired]
        #expect(properties.map(\.rawValue) == [0x01, 0x02, 0x04, 0x08, 0x10, 0x20, 0x40, 0x80, 0x100, 0x200])
        #expect(CBCharacteristicWriteType.withResponse.rawValue == 0)
        #expect(CBCharacteristicWriteType.withoutResponse.rawValue == 1)
        let permissions: [CBAttributePermissions] = [.readable, .writeable, .readEncryptionRequired, .writeEncryptionRequired]
        #expect(permissions.map(\.rawValue) == [0x01, 0x02, 0x04, 0x08])
        // A declaration's properties byte keeps its bits.
        #expect(CBCharacteristicProperties(GATTCharacteristicProperties([.read, .notify, .extendedProperties])) == [.read, .notify, .extendedProperties])
        #expect(CBManagerState(AdapterState.poweredOn) == .poweredOn)
        #expect(CBManagerState(AdapterState.unauthorized) == .unauthorized)
    }

    @Test("Advertisement-data and scan-option keys have CoreBluetooth's values")
    func keys() {
        #expect(CBAdvertisementDataLocalNameKey == "kCBAdvDataLocalName")
        #expect(CBAdvertisementDataServiceUUIDsKey == "kCBAdvDataServiceUUIDs")
        #expect(CBAdvertisementDataManufacturerDataKey == "kCBAdvDataManufacturerData")
        #expect(CBAdvertisementDataServiceDataKey == "kCBAdvDataServiceData")
        #expect(CBAdvertisementDataTxPowerLevelKey == "kCBAdvDataTxPowerLevel")
        #expect(CBAdvertisementDataIsConnectable == "kCBAdvDataIsConnectable")
        #expect(CBAdvertisementDataOverflowServiceUUIDsKey == "kCBAdvDataOverflowServiceUUIDs")
        #expect(CBAdvertisementDataSolicitedServiceUUIDsKey == "kCBAdvDataSolicitedServiceUUIDs")
        #expect(CBCentralManagerScanOptionAllowDuplicatesKey == "kCBScanOptionAllowDuplicates")
        #expect(CBCentralManagerScanOptionSolicitedServiceUUIDsKey == "kCBScanOptionSolicitedServiceUUIDs")
        #expect(CBConnectPeripheralOptionNotifyOnConnectionKey == "kCBConnectOptionNotifyOnConnection")
        #expect(CBConnectPeripheralOptionNotifyOnDisconnectionKey == "kCBConnectOptionNotifyOnDisconnection")
        #expect(CBConnectPeripheralOptionNotifyOnNotificationKey == "kCBConnectOptionNotifyOnNotification")
    }

    @Test("CBError and CBATTError carry CoreBluetooth's domains and codes; ATT codes are kept as sent")
    func errors() {
        #expect(CBError.Code.notConnected.rawValue == 3)
        #expect(CBError.Code.connectionTimeout.rawValue == 6)
        #expect(CBError.Code.peripheralDisconnected.rawValue == 7)
        #expect(CBError.Code.connectionFailed.rawValue == 10)
        #expect(CBError.Code.encryptionTimedOut.rawValue == 15)
        let error = CBError(.peripheralDisconnected) as NSError
        #expect(error.domain == "CBErrorDomain")
        #expect(error.code == 7)
        let att = CBATTError(.insufficientAuthentication)
        #expect((att as NSError).domain == "CBATTErrorDomain")
        #expect((att as NSError).code == 5)
        #expect(CBATTError.Code.insufficientEncryption.rawValue == 0x0F)
        #expect(CBATTError.Code.insufficientResources.rawValue == 0x11)
        let application = CBATTError(attCode: 0x80)
        #expect(application.errorCode == 0x80)
        #expect(application.code == .unlikelyError)
    }

    @Test("CBError and CBATTError have the shape of Apple's overlay: NSError inside, static code shortcuts, catch patterns, userInfo")
    func errorOverlayShape() {
        func thrown(_ error: any Error) -> String {
            do { throw error } catch CBError.peripheralDisconnected { return "disconnected" } catch CBATTError.insufficientAuthentication {
                return "authentication"
            } catch { return "other" }
        }
        #expect(thrown(CBError(.peripheralDisconnected, reason: "gone")) == "disconnected")
        #expect(thrown(CBATTError(.insufficientAuthentication)) == "authentication")
        #expect(thrown(CBError(.notConnected)) == "other")
        #expect(CBError.peripheralDisconnected == CBError.Code.peripheralDisconnected)
        #expect(CBATTError.attributeNotFound == CBATTError.Code.attributeNotFound)
        #expect(CBError.Code.leGattExceededBackgroundNotificationLimit.rawValue == 17)
        #expect(CBError.Code.leGattNearBackgroundNotificationLimit.rawValue == 18)
        let wrapped = CBError(_nsError: NSError(domain: CBErrorDomain, code: 10, userInfo: ["key": "value"]))
        #expect(wrapped.code == .connectionFailed)
        #expect(wrapped.errorCode == 10)
        #expect(wrapped.userInfo["key"] as? String == "value")
        #expect(wrapped._nsError.domain == CBErrorDomain)
        let explained = CBError(.connectionTimeout, reason: "the link timed out")
        #expect(explained.userInfo[NSLocalizedDescriptionKey] as? String == "the link timed out")
        #expect(explained.reason == "the link timed out")
        #expect((explained as NSError).code == 6)
        #expect(CBError(.unknown, userInfo: ["a": 1]).userInfo["a"] as? Int == 1)
        let application = CBATTError(_nsError: NSError(domain: CBATTErrorDomain, code: 0x80))
        #expect(application.errorCode == 0x80 && application.rawCode == 0x80 && application.code == .unlikelyError)
        #expect(CBError.errorDomain == "CBErrorDomain" && CBATTError.errorDomain == "CBATTErrorDomain")
    }

    @Test("The stack's errors become CoreBluetooth's: an ATT error keeps its code")
    func errorMapping() {
        let refused = cbError(GATTError(.att(.readNotPermitted, handle: AttributeHandle(rawValue: 3)), "read not permitted"))
        #expect((refused as? CBATTError)?.code == .readNotPermitted)
        let application = cbError(GATTError(.att(ATTErrorCode(rawValue: 0x80), handle: AttributeHandle(rawValue: 3)), "refused"))
        #expect((application as? CBATTError)?.errorCode == 0x80)
        #expect((cbError(GATTError(.disconnected, "gone")) as? CBError)?.code == .peripheralDisconnected)
        #expect((cbError(HostError(.connectionTimedOut, "timed out")) as? CBError)?.code == .connectionTimeout)
        #expect((cbError(HostError(.connectionFailed(.connectionFailedToBeEstablished), "failed")) as? CBError)?.code == .connectionFailed)
    }

    @Test("The advertisement dictionary has iOS's keys and types; manufacturer data starts with the company ID, little-endian")
    func advertisementDictionary() {
        var data = AdvertisingData(flags: .leOnlyGeneralDiscoverable, serviceUUIDs: [0x180D, 0x180F],
                                   manufacturerData: ManufacturerData(companyID: CompanyIdentifier(rawValue: 0x004C), data: [1, 2]))
        data.appendLocalName("Lab")
        data.structures.append(ADStructure(type: .txPowerLevel, data: [0xFC]))
        data.structures.append(ADStructure(type: .serviceData16BitUUID, data: [0x0F, 0x18, 0x57]))
        let dictionary = CBCentralManager.advertisementDictionary(data, isConnectable: true)
        #expect(dictionary[CBAdvertisementDataLocalNameKey] as? String == "Lab")
        #expect(dictionary[CBAdvertisementDataServiceUUIDsKey] as? [CBUUID] == [CBUUID(string: "180D"), CBUUID(string: "180F")])
        #expect(dictionary[CBAdvertisementDataManufacturerDataKey] as? Data == Data([0x4C, 0x00, 1, 2]))
        #expect((dictionary[CBAdvertisementDataTxPowerLevelKey] as? NSNumber)?.intValue == -4)
        #expect((dictionary[CBAdvertisementDataIsConnectable] as? NSNumber)?.boolValue == true)
        #expect((dictionary[CBAdvertisementDataServiceDataKey] as? [CBUUID: Data])?[CBUUID(string: "180F")] == Data([0x57]))
        #expect(dictionary[CBAdvertisementDataSolicitedServiceUUIDsKey] == nil)
        #expect(dictionary[CBAdvertisementDataOverflowServiceUUIDsKey] == nil)
    }

    @Test("A peripheral's identifier is derived from its address and type")
    func identifier() throws {
        let address = try #require(LEAddress.randomStatic([0xC1, 0x02, 0x03, 0x04, 0x05, 0x06]))
        #expect(CBPeripheral.identifier(for: address).uuidString == "53424C45-0000-8001-8000-C10203040506")
        let publicAddress = LEAddress(try #require(BluetoothAddress(bigEndian: [0xAA, 0xBB, 0xCC, 0xDD, 0xEE, 0xFF])), type: .public)
        #expect(CBPeripheral.identifier(for: publicAddress).uuidString == "53424C45-0000-8000-8000-AABBCCDDEEFF")
        // retrievePeripherals(withIdentifiers:) reads the address back; other identifiers hold none.
        #expect(CBPeripheral.address(from: CBPeripheral.identifier(for: address)) == address)
        #expect(CBPeripheral.address(from: CBPeripheral.identifier(for: publicAddress)) == publicAddress)
        #expect(CBPeripheral.address(from: UUID(uuid: (0x53, 0x42, 0x4C, 0x45, 0, 0, 0x80, 9, 0x80, 0, 1, 2, 3, 4, 5, 6))) == nil)
        #expect(CBPeripheral.address(from: try #require(UUID(uuidString: "12345678-1234-5678-1234-56789ABCDEF0"))) == nil)
    }

    @Test("Scan options are read as Bool or NSNumber")
    func scanOptions() {
        #expect(CBCentralManager.bool(true))
        #expect(CBCentralManager.bool(NSNumber(value: true)))
        #expect(!CBCentralManager.bool(NSNumber(value: false)))
        #expect(!CBCentralManager.bool(nil))
    }
}
